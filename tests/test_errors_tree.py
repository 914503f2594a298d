"""Every error hf_lvf raises is an ``hf_lvf.LVFError`` (and the builtin a caller expects), and
the errors page lists every class. The public API is walked: each public name (of
``hf_lvf.__all__`` and of ``hf_lvf.write``, ``hf_lvf.convert``, ``hf_lvf.ray``)
called with bad arguments; whatever hf_lvf's own code raises must be an ``LVFError``."""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path

import pytest

import hf_lvf
from hf_lvf import errors
from hf_lvf.write.synthetic import write_synthetic_root

PACKAGE = Path(hf_lvf.__file__).parent
DOCS = Path(__file__).parents[1] / "docs" / "guides" / "errors.md"


def test_every_error_class_is_an_lvf_error_and_a_builtin_and_documented():
    table = DOCS.read_text()
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert f"| `{name}` |" in table, name
        if issubclass(cls, Warning) or cls is errors.LVFError:
            continue
        assert issubclass(cls, errors.LVFError), name
        builtins = [b for b in cls.__mro__ if b.__module__ == "builtins" and b is not Exception]
        assert builtins and builtins[0] is not BaseException, name
        assert f"| `{name}` | `{builtins[0].__name__}` |" in table, name


def _public_names() -> dict[str, object]:
    """Every public name: of ``hf_lvf`` and of the public modules beside it (hf_lvf.write...)."""
    import importlib

    found = {}
    for home in ["hf_lvf", *(f"hf_lvf.{m}" for m in hf_lvf._MODULES)]:
        module = importlib.import_module(home)
        found.update({n: getattr(module, n) for n in module.__all__})
    return found


def _raised_by_hf_lvf(err: BaseException) -> bool:
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and Path(frames[-1].filename).is_relative_to(PACKAGE)


def _bad_calls(root: Path, tmp: Path) -> dict[str, list]:
    """Bad arguments for each public callable: (args, kwargs) pairs."""
    missing = tmp / "missing"
    windows = hf_lvf.VideoWindows(root, window_length=2)
    return {
        "VideoWindows": [
            ((root,), {"window_length": 0}),
            ((root,), {"window_length": 1000}),
            ((root,), {"window_length": 1.5}),
            ((root,), {"frame_size": (0, 4)}),
            ((root,), {"crop": "middle"}),
            ((missing,), {}),
            ((42,), {}),
        ],
        "WindowParams": [((), {"window_length": 0}), ((), {"hop_size": "2"})],
        "ClipSampler": [((windows,), {"clips_per_video": 0}), ((windows,), {"mode": "all"})],
        "ReadAheadBudget": [((), {"depth": 0}), ((), {"max_bytes": -1})],
        "HfLvfConfig": [((), {"window_length": 0}), ((), {"crop": "x"})],
        "WindowVideo": [((), {"frame_skip": -1}), ((), {"crop": "x"})],
        "describe": [((root,), {"window_length": 0}), ((missing,), {})],
        "read_layout": [((str(missing),), {}), ((42,), {})],
        "save_window": [((windows, 10**6, tmp / "w.webp"), {}), ((windows, 0, tmp / "w.txt"), {})],
        "build_card": [((root,), {"window_length": 0}), ((missing,), {})],
        "convert_videos": [
            ((missing, tmp / "out"), {}),
            ((root, tmp / "out"), {"quality": 101}),
            ((root, tmp / "out"), {"splits": "maybe"}),
            ((root, tmp / "out"), {"workers": -1}),
        ],
        "merge_roots": [(([], tmp / "merged"), {}), (([missing], tmp / "merged"), {})],
        "read_windows": [((root,), {"window_length": 0}), ((missing,), {})],
        "RayExecutor": [((), {"num_cpus": -1}), ((), {"max_retries": -1})],
        "frame_table": [((None, ["x"]), {}), (([], "x"), {})],
        "add_frame_columns": [((missing, lambda v: {}), {}), ((root, 42), {})],
        "add_proxy": [((missing,), {}), ((root,), {"size": 0}), ((root,), {"codec": "gif"})],
        "write_frames": [((root, []), {}), ((tmp / "new", [("a", [], {"video": 1})]), {})],
        "safe_dataloader": [((windows,), {"num_workers": -1}), ((windows,), {"batch_size": 0})],
        "relocate_roots": [((None, {}), {}), (([], {"a": "b"}), {})],
        "push_to_hub": [((missing, "me/clips"), {})],
        "push_card": [(("not a repo id!",), {"root": missing})],
        "LeRobotWindows": [((root,), {}), ((missing,), {}), ((root,), {"window_length": 4})],
    }


def test_the_public_api_raises_only_lvf_errors(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no network
    root = write_synthetic_root(tmp_path / "clips", num_videos=2, num_frames=6, frame_size=(8, 8))
    calls = _bad_calls(root, tmp_path)
    names = _public_names()
    public = {
        n
        for n, v in names.items()
        if callable(v) and not (inspect.isclass(v) and issubclass(v, Warning | Exception))
    }
    records = {"ConversionSummary", "SkippedVideo", "FrameField", "VideoInfo"}
    assert public - set(calls) <= records
    raised, wrong = 0, []
    for name, bad in calls.items():
        for args, kwargs in bad:
            try:
                names[name](*args, **kwargs)
            except Exception as err:  # noqa: BLE001  (what is raised is the point)
                if not _raised_by_hf_lvf(err):
                    continue
                raised += 1
                if not isinstance(err, hf_lvf.LVFError):
                    wrong.append(f"{name}{args, kwargs}: {type(err).__name__}: {err}")
    assert not wrong, "\n".join(wrong)
    assert raised >= 30  # the walk reached hf_lvf's own checks


def test_window_length_beyond_every_video_is_a_value_error_and_an_lvf_error(tmp_path):
    root = write_synthetic_root(tmp_path / "clips", num_videos=2, num_frames=6, frame_size=(8, 8))
    with pytest.raises(hf_lvf.ParameterError, match=r"yields no windows") as caught:
        hf_lvf.VideoWindows(root, window_length=1000)
    assert isinstance(caught.value, ValueError)
