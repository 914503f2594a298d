"""The shape of the package: layers without cycles, modules of one concept, one place per system.

Built from the source with ``ast``, so function-local (deferred) imports count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hf_lvf"
LONG_MODULE = 800  # lines: a module this long is pointed out, never refused

# Bottom to top, by package: the folders of hf_lvf/ are the layers. A module may import
# modules of its own layer or below, never above (deferred imports too).
LAYERS = (
    ("errors", "_version", "processes"),  # the exception tree; worker-process safety
    ("plan",),  # pure numpy: parameters -> which frames make which sample
    ("location",),  # where a root lives: local, hf://, object stores
    ("layout",),  # _metadata.json <-> the video table
    ("frames", "decode"),  # reads of the frame table (Lance rows); bytes -> pixels
    ("read",),  # the reading core: VideoWindows and what it builds on
    ("hf",),  # the datasets front ends
    ("training",),  # the PyTorch helpers
    ("engines",),  # other engines' front ends: Ray
    ("write",),  # writing and growing roots (the only Lance writes)
    ("convert",),  # video files and other datasets -> roots
    ("card",),  # dataset cards
    ("publish",),  # pushing to the Hub
    ("cli",),  # hf-lvf
    ("__init__", "_registration", "ray"),  # the public API; load_dataset; hf_lvf.ray
)
MAX_TOP_LEVEL_MODULES = 10  # beside __init__, _version and the packages
# Where each outside system may be imported (top-level package name -> modules).
SYSTEMS = {
    "lance": {"frames", "write.frame_table"},  # reading; writing and growing tables
    "imagecodecs": {"decode.pixels"},
    "av": {"convert.decoding", "convert.pool"},
}
# huggingface_hub: reading only in location, writing only in publish. Its card classes and
# progress bar make no request and may be used anywhere.
HUB_READERS = {"location"}
HUB_WRITERS = {"publish"}
HUB_OFFLINE_NAMES = {"DatasetCard", "DatasetCardData", "tqdm"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, ast.Module]:
    return {
        _module_name(p): ast.parse(p.read_text(), filename=str(p))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def _package_of(name: str, path: Path) -> list[str]:
    """The package a module's relative imports start from, as parts."""
    parts = name.split(".") if name != "__init__" else []
    return parts if path.name == "__init__.py" else parts[:-1]


def _imports(name: str, tree: ast.Module) -> list[tuple[str, list[str], int]]:
    """(imported hf_lvf module or outside top-level package, names, line) of every import."""
    is_package = (PACKAGE / name.replace(".", "/") / "__init__.py").is_file() or name == "__init__"
    base = name.split(".") if is_package and name != "__init__" else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("hf_lvf"):
                    found.append(("@" + alias.name[len("hf_lvf.") :], [], node.lineno))
                else:
                    found.append((alias.name, [], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
            if node.level:
                parts = base[: len(base) - (node.level - 1)] if node.level > 1 else list(base)
                target = ".".join([*parts, *(node.module or "").split(".")]).strip(".")
                if not node.module:  # from . import x: each x is a module
                    found += [
                        ("@" + ".".join([*parts, n]).strip("."), [], node.lineno) for n in names
                    ]
                    continue
                found.append(("@" + target, names, node.lineno))
            elif node.module and node.module.startswith("hf_lvf"):
                found.append(("@" + node.module[len("hf_lvf.") :], names, node.lineno))
            else:
                found.append((node.module or "", names, node.lineno))
    return found


def _internal_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, tree in modules.items():
        for target, _, _ in _imports(name, tree):
            if target.startswith("@"):
                target = target[1:] or "__init__"
                while target and target not in modules:  # from .x import y, y not a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _layer(name: str) -> int:
    top = name.split(".")[0]
    for rank, layer in enumerate(LAYERS):
        if top in layer:
            return rank
    raise AssertionError(f"module hf_lvf.{name} is in no layer of tests/test_architecture.py")


def test_every_module_is_in_a_layer():
    for name in _modules():
        _layer(name)


def test_no_module_imports_one_above_it():
    wrong = [
        f"hf_lvf.{a} (layer {_layer(a)}) imports hf_lvf.{b} (layer {_layer(b)})"
        for a, targets in _internal_graph().items()
        for b in sorted(targets)
        if _layer(b) > _layer(a)
    ]
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_import_graph_has_no_cycle():
    graph = _internal_graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(f"hf_lvf.{m}" for m in cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_cycle_detection_sees_deferred_imports(tmp_path):
    # The graph builder itself: an import inside a function counts.
    tree = ast.parse("def f():\n    from ..read.windows import VideoWindows\n")
    assert ("@read.windows", ["VideoWindows"], 2) in _imports("plan", tree)


def test_outside_systems_stay_in_their_module():
    wrong = []
    for name, tree in _modules().items():
        for target, names, line in _imports(name, tree):
            if target.startswith("@"):
                continue
            top = target.split(".")[0]
            allowed = SYSTEMS.get(top)
            if allowed is not None and name not in allowed:
                wrong.append(f"hf_lvf.{name}:{line} imports {target}")
            if top == "huggingface_hub":
                home = name.split(".")[0]
                if home in HUB_READERS | HUB_WRITERS:
                    continue
                if names and set(names) <= HUB_OFFLINE_NAMES:
                    continue
                wrong.append(f"hf_lvf.{name}:{line} uses huggingface_hub ({', '.join(names)})")
    assert not wrong, "outside systems used outside their module:\n" + "\n".join(wrong)


def test_long_modules_are_pointed_out():
    # A module holds one concept, however long: split by concept, never by length. A line
    # cap split classes into mixins over two files; a very long module is only pointed out,
    # as a warning in the test report, for a reader to judge.
    import warnings

    long = {
        _module_name(p): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > LONG_MODULE
    }
    if long:
        warnings.warn(f"modules longer than {LONG_MODULE} lines: {long}", stacklevel=1)


def test_no_two_modules_share_a_file_name():
    # A file name says a concept: two modules of one name (spans.py in three packages once)
    # make a reader ask which is meant. Packages (__init__.py) and __main__.py aside.
    by_name: dict[str, list[str]] = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        if p.name not in ("__init__.py", "__main__.py"):
            by_name.setdefault(p.name, []).append(str(p.relative_to(PACKAGE)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"modules sharing a file name: {shared}"


def test_no_two_public_functions_share_a_name():
    # One name, one thing: two public functions or classes of one name in two modules
    # (window_ranges was the plan's cut for Ray and the builder's shard ranges) make a
    # reader, and an import, ask which is meant.
    homes: dict[str, list[str]] = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                homes.setdefault(node.name, []).append(str(p.relative_to(PACKAGE)))
    shared = {name: paths for name, paths in homes.items() if len(paths) > 1}
    assert not shared, f"public names defined twice: {shared}"


def test_the_top_level_shows_the_layers():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "_version"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, f"top-level modules: {modules}"
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    in_layers = {name for layer in LAYERS for name in layer}
    assert packages <= in_layers, f"packages in no layer: {sorted(packages - in_layers)}"
    assert set(modules) <= in_layers, f"modules in no layer: {sorted(set(modules) - in_layers)}"


def test_every_package_says_its_concept():
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.split()) >= 12, f"{init.relative_to(PACKAGE)} has no docstring"


def test_old_module_paths_are_gone():
    # Nothing was released under the paths from before the packages by layer: a pickle that
    # names one is refused by the import system, naming the module (tests/test_compat.py).
    import importlib

    import pytest

    for old in ("hf_lvf.windows", "hf_lvf._feature", "hf_lvf.sizes"):
        with pytest.raises(ModuleNotFoundError, match=old):
            importlib.import_module(old)
    assert not (PACKAGE / "_moved.py").exists()
