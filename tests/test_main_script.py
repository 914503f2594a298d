"""Functions of a main script, defined under its ``if __name__ == "__main__":`` guard (nested,
decorated), reach spawned and forkserver workers: ``safe_dataloader`` with 2 workers and
``Dataset.map(num_proc=2)`` after a read. The script is written to ``tmp_path`` and run as a
subprocess, as a user runs it; every window is compared with ``VideoWindows``'."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _roots import hf_root

pytest.importorskip("torch")

SCRIPT = textwrap.dedent(
    """
    import functools
    import os
    import sys

    import datasets
    import numpy as np

    import hf_lvf

    if __name__ == "__main__":
        root = sys.argv[1]
        params = {"window_length": 4, "hop_size": 2}
        expected = {i: w for i, w in enumerate(hf_lvf.VideoWindows(root, **params))}

        def scale(x):  # used by the others: must travel with them
            return x.astype(np.float32) / 255.0

        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)

            return wrapper

        @logged
        def to_float(batch):
            batch["video"] = [scale(np.asarray(v)) for v in batch["video"]]
            return batch

        def keep(row):
            return row["video_idx"] != 1

        def collate(rows):
            return {
                "sample_idx": [int(r["sample_idx"]) for r in rows],
                "video": [np.asarray(r["video"]) for r in rows],
            }

        ds = datasets.load_dataset("hf_lvf", data_dir=root, split="train", **params)
        ds[0]  # the parent has read
        kept = ds.filter(keep).with_transform(to_float)
        loader = hf_lvf.safe_dataloader(
            kept, batch_size=2, num_workers=2, collate_fn=collate, timeout=60
        )
        seen = []
        for batch in loader:
            for i, video in zip(batch["sample_idx"], batch["video"]):
                assert np.array_equal(video, scale(expected[i]["video"])), i
                seen.append(i)
        want = [i for i, w in expected.items() if w["video_idx"] != 1]
        assert sorted(seen) == want, (seen, want)
        print("loader", len(seen))

        def mean_of(batch):
            return {"mean": [float(scale(np.asarray(v)).mean()) for v in batch["video"]]}

        means = ds.map(mean_of, batched=True, batch_size=2, num_proc=2)
        for row in means:
            assert row["mean"] == float(scale(expected[row["sample_idx"]]["video"]).mean())
        print("map", len(means))

        parent = os.getpid()

        class Fragile(__import__("torch").utils.data.Dataset):
            def __init__(self):
                self.size = 2

            def __len__(self):
                return 2

            def __getitem__(self, i):
                return i

            def __setstate__(self, state):
                if os.getpid() != parent:
                    raise ValueError("cannot be loaded outside the parent")
                self.__dict__.update(state)

        try:
            list(hf_lvf.safe_dataloader(Fragile(), num_workers=2, timeout=60))
        except hf_lvf.LVFError as err:
            print("error", type(err).__name__, "|", str(err).replace(chr(10), " "))
    """
)


def test_functions_under_the_main_guard_reach_the_workers(tmp_path):
    root = hf_root(tmp_path / "clips", (9, 5, 12))
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(script), str(root)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[:2] == ["loader 8", "map 9"], done.stdout
    # A worker that cannot load what it was sent: the parent's error carries the child's.
    assert lines[2].startswith("error WorkerLoadError |"), done.stdout
    assert "ValueError: cannot be loaded outside the parent" in lines[2]


# The script of a user who maps over windows, exactly as written in the issue that found
# map(num_proc=2) broken: nothing else of hf_lvf is touched first (no safe_dataloader), so
# hf_lvf's own set-up on import is all that makes the pool safe. Its imports come in each
# order, and once after a public name was touched before datasets was imported (which
# imported datasets from inside a half-imported hf_lvf module).
MAP_SCRIPT = """
{imports}
if __name__ == "__main__":
    import sys
    m = load_dataset("hf_lvf", data_dir=sys.argv[1], window_length=4, hop_size=4, split="train")
    m[0]
    means = m.map(lambda ex: {{"mean": float(np.asarray(ex["video"]).mean())}}, num_proc=2)
    for row in means:
        print(row["sample_idx"], repr(row["mean"]))
"""
IMPORT_ORDERS = {
    "hf_lvf_first": "import numpy as np, hf_lvf\nfrom datasets import load_dataset",
    "datasets_first": "import numpy as np\nfrom datasets import load_dataset\nimport hf_lvf",
    "name_touched_first": (
        "import numpy as np, hf_lvf\nhf_lvf.WindowVideo\nfrom datasets import load_dataset"
    ),
}


@pytest.mark.parametrize("order", sorted(IMPORT_ORDERS))
def test_map_with_num_proc_after_a_read_from_a_plain_script(tmp_path, order):
    root = hf_root(tmp_path / "clips", (9, 5, 12))
    script = tmp_path / "means.py"
    script.write_text(MAP_SCRIPT.format(imports=IMPORT_ORDERS[order]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(script), str(root)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "could not set up" not in done.stderr, done.stderr[-3000:]
    import hf_lvf

    windows = hf_lvf.VideoWindows(root, window_length=4, hop_size=4)
    want = [f"{i} {float(np.asarray(w['video']).mean())!r}" for i, w in enumerate(windows)]
    assert done.stdout.splitlines() == want
