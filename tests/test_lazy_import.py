"""``import hf_lvf`` imports only what is used: a command or a conversion worker that needs
no ``datasets`` never imports it, and ``load_dataset("hf_lvf")`` works in either import
order (hf_lvf._registration)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hf_lvf.write.synthetic import write_synthetic_root

HEAVY = ("datasets", "torch", "lance", "pandas", "ray")


def _run(code: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _loaded(*imports: str) -> dict[str, bool]:
    return _run(
        f"""
        import json, sys
        {"; ".join(f"import {m}" for m in imports)}
        print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))
        """
    )


def test_import_hf_lvf_imports_no_heavy_library():
    assert _loaded("hf_lvf") == dict.fromkeys(HEAVY, False)


@pytest.mark.parametrize(
    "modules",
    [
        ("hf_lvf.cli", "hf_lvf.cli.args"),  # the command line, before a command runs
        ("hf_lvf.convert.pool", "hf_lvf.convert"),  # what a conversion worker imports
        ("hf_lvf.card.describe", "hf_lvf.card.preview"),  # hf-lvf info, hf-lvf show
    ],
)
def test_commands_and_conversion_workers_do_without_datasets(modules):
    loaded = _loaded(*modules)
    assert not loaded["datasets"] and not loaded["torch"] and not loaded["ray"], loaded


@pytest.mark.parametrize("first", ["hf_lvf", "datasets"])
def test_load_dataset_in_either_import_order(tmp_path: Path, first: str):
    root = write_synthetic_root(tmp_path / "train", num_videos=2, num_frames=6, frame_size=(8, 8))
    second = "datasets" if first == "hf_lvf" else "hf_lvf"
    got = _run(
        f"""
        import json
        import {first}
        import {second}
        ds = datasets.load_dataset(
            "hf_lvf", data_dir={str(root)!r}, window_length=3, split="train",
            cache_dir={str(tmp_path / "cache")!r},
        )
        stream = hf_lvf.VideoWindows({str(root)!r}, window_length=3).to_iterable_dataset()
        print(json.dumps([len(ds), type(ds.features["video"]).__name__,
                          sum(1 for _ in stream)]))
        """
    )
    assert got == [8, "WindowVideo", 8]


def test_every_public_name_resolves_to_its_home():
    import hf_lvf

    for name in hf_lvf.__all__:
        value = getattr(hf_lvf, name)
        home = getattr(value, "__module__", None)
        assert home is None or home.startswith("hf_lvf"), (name, home)
    assert set(hf_lvf.__all__) <= set(dir(hf_lvf))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        hf_lvf.nope  # noqa: B018


@pytest.mark.parametrize("home", ["hf_lvf", "hf_lvf.write"])
def test_the_names_for_type_checkers_are_the_names_imported_on_first_use(home):
    """A lazy home (``hf_lvf``, ``hf_lvf.write``) lists its public names once, in ``_HOMES``
    (``__all__`` is its keys; ``__getattr__`` imports from it), and mirrors the lazy ones under
    ``if TYPE_CHECKING:`` (what IDEs and the API reference read). The two must say the same."""
    import importlib

    module = importlib.import_module(home)
    assert module.__all__ == list(module._HOMES)
    tree = ast.parse(Path(module.__file__).read_text())
    (block,) = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    package = home if home == "hf_lvf" else home.rsplit(".", 1)[0]
    typed = {
        a.name: importlib.util.resolve_name("." * node.level + (node.module or ""), home)
        for node in block.body
        for a in node.names
    }
    lazy = {
        name: where if where.startswith("hf_lvf.") else f"{package}.{where}"
        for name, where in module._HOMES.items()
        if where is not None
    }
    assert typed == lazy


def test_the_top_level_is_small_and_says_where_each_moved_name_went():
    import hf_lvf

    assert len(hf_lvf.__all__) <= 25
    for name, home in [
        ("write_frames", "write"),
        ("convert_videos", "convert"),
        ("read_windows", "ray"),
        ("HubError", "errors"),
    ]:
        moved = rf"^hf_lvf.{name} moved: use hf_lvf.{home}.{name}$"
        with pytest.raises(AttributeError, match=moved):
            getattr(hf_lvf, name)
        assert getattr(importlib.import_module(f"hf_lvf.{home}"), name).__name__ == name
        assert getattr(hf_lvf, home).__name__ == f"hf_lvf.{home}"  # reachable from the top
    assert not hasattr(hf_lvf, "nope")
