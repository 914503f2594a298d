"""What main pickled and saved before the packages by layer reads under today's code.

The files in ``tests/data/before_layers`` were made by the code of commit 8f3ca4e (see
``make.py`` there); their pickles name the old module paths (``hf_lvf.windows``,
``hf_lvf._feature``, ``hf_lvf.sizes``, ...). Nothing was released under those paths, and
no shim keeps them: such a pickle is refused, naming the module, and the root is opened
again. A dataset saved then still loads, since ``save_to_disk`` stores its features as JSON.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import numpy as np
import pytest

import hf_lvf

DATA = Path(__file__).parent / "data" / "before_layers"
SAVED_ROOT = "/tmp/gen/old_main/root"  # where the saved dataset's references say its root is
REPO = Path(__file__).resolve().parents[1]
BEFORE_LAYERS = "8f3ca4e"  # the last commit of main before the packages by layer


def _old_modules(data: bytes) -> set[str]:
    import pickletools

    return {
        arg
        for op, arg, _ in pickletools.genops(data)
        if isinstance(arg, str) and arg.startswith("hf_lvf.")
    }


_PICKLE_A_VIEW = """
import pickle, sys
import hf_lvf
assert hf_lvf.__file__.startswith(sys.argv[1]), hf_lvf.__file__  # the old code, not today's
from hf_lvf.synthetic import write_synthetic_root
write_synthetic_root(sys.argv[2], num_videos=2, num_frames=8, frame_size=(16, 16))
view = hf_lvf.VideoWindows(sys.argv[2], window_length=4, hop_size=2)
sys.stdout.buffer.write(pickle.dumps(view))
"""


def test_a_view_pickled_before_the_move_is_refused_by_name(tmp_path):
    # The code of that commit, from this checkout's history, pickles a view; today's reads it.
    old = tmp_path / "old"
    old.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", BEFORE_LAYERS, "hf_lvf"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    root = tmp_path / "root"
    env = {**os.environ, "PYTHONPATH": str(old)}
    data = subprocess.run(
        [sys.executable, "-c", _PICKLE_A_VIEW, str(old), str(root)],
        capture_output=True,
        check=True,
        env=env,
        cwd=tmp_path,  # not the checkout: `-c` puts the working directory first on the path
    ).stdout
    assert {"hf_lvf.windows", "hf_lvf.sizes"} <= _old_modules(data)
    with pytest.raises(ModuleNotFoundError, match=r"hf_lvf\.(windows|sizes)"):
        pickle.loads(data)
    fresh = hf_lvf.VideoWindows(root, window_length=4, hop_size=2)  # the root, opened again
    assert len(fresh) == 6


def test_a_dataset_saved_before_the_move_reads(tmp_path):
    assert "hf_lvf._feature" in _old_modules((DATA / "features.pkl").read_bytes())
    with pytest.raises(ModuleNotFoundError, match=r"hf_lvf\._feature"):
        pickle.loads((DATA / "features.pkl").read_bytes())
    shutil.copytree(DATA / "root", tmp_path / "root")
    shutil.copytree(DATA / "saved", tmp_path / "saved")
    ds = datasets.load_from_disk(str(tmp_path / "saved"))
    assert isinstance(ds.features["video"], hf_lvf.WindowVideo)
    ds = hf_lvf.write.relocate_roots(ds, {SAVED_ROOT: tmp_path / "root"})
    fresh = hf_lvf.VideoWindows(tmp_path / "root", window_length=4, hop_size=2)
    assert len(ds) == len(fresh) == 6
    for i in range(len(ds)):
        assert np.array_equal(ds[i]["video"], fresh[i]["video"])
    # The row as main read it then: the same pixels and keys now.
    then = pickle.loads((DATA / "row.pkl").read_bytes())
    now = ds.with_format(None)[1]
    assert then.keys() == now.keys()
    assert np.array_equal(np.asarray(then["video"]), np.asarray(now["video"]))
    assert {k: v for k, v in then.items() if k != "video"} == {
        k: v for k, v in now.items() if k != "video"
    }
