"""Pushed repos read as frame rows by plain ``datasets`` (no hf_lvf), and pushes of odd roots.

A fresh interpreter that never imports hf_lvf loads the repos the way a Hub user would,
``load_dataset("org/repo", split=...)``, map-style and streaming; every row's image must be the
frame hf_lvf decodes for its ``(video_id, frame_idx)``.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import datasets
import numpy as np
import pytest
from _loading import assert_rows_equal, core_samples, mixed_size_root, run_script
from hub_server import HubServer
from huggingface_hub import DatasetCard

from hf_lvf import VideoWindows, push_to_hub
from hf_lvf.layout import read_layout
from hf_lvf.write import write_frames
from hf_lvf.write.synthetic import synthetic_frames, write_synthetic_root

pytestmark = pytest.mark.hub


def _frames(num_videos: int, num_frames: int, size: tuple[int, int]):
    h, w = size
    return (
        (f"v{i:04d}", synthetic_frames(num_frames, h, w, seed=i), {"label": i % 3})
        for i in range(num_videos)
    )


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("frame-roots")
    return {
        "mixed": mixed_size_root(base / "mixed"),
        "ones": write_frames(base / "ones", _frames(12, 1, (16, 16))),
        "short": write_synthetic_root(
            base / "short", num_videos=2, num_frames=[5, 9], frame_size=(16, 16)
        ),
        "tiny": write_frames(base / "tiny", _frames(2000, 1, (8, 8))),
    }


# (repo, {split: (root name, path in repo)})
REPOS = {
    "org/mixed": {"train": ("mixed", None)},
    "org/splits": {"train": ("ones", "train"), "test": ("short", "test")},
    "org/tiny": {"train": ("tiny", None)},
}

_LOAD_FRAMES = """
import json, sys, zlib
import numpy as np
import datasets

out = {}
for repo, splits in json.loads(REPOS).items():
    for split in splits:
        for streaming in (False, True):
            # Map-style needs no token; streaming does (datasets 5.2's lance module).
            ds = datasets.load_dataset(
                repo, split=split, streaming=streaming, **({} if streaming else {"token": False})
            )
            rows = [
                [r["video_id"], r["frame_idx"],
                 zlib.crc32(np.asarray(r["bytes"].convert("RGB")).tobytes())]
                for r in ds
            ]
            out[f"{repo}:{split}:{streaming}"] = {"features": str(ds.features), "rows": rows}
assert "hf_lvf" not in sys.modules, "hf_lvf was imported"
print(json.dumps(out))
"""


def _decoded_frames(root: Path) -> dict[tuple[int, int], int]:
    """``(video_id, frame_idx) -> crc32`` of every frame as hf_lvf decodes it (never resized)."""
    layout = read_layout(str(root))
    out = {}
    for size in {(v.height, v.width) for v in layout.videos}:
        windows = VideoWindows(root, window_length=1, hop_size=1, frame_size=size)
        for video in layout.videos:
            if (video.height, video.width) != size:
                continue
            first = int(windows.plan.first_window[video.video_idx])
            for sample in windows.take(range(first, first + video.num_frames)):
                frame = np.ascontiguousarray(sample["video"][0])
                out[(video.id, sample["start_frame"])] = zlib.crc32(frame.tobytes())
    return out


def test_plain_datasets_reads_every_frame_of_pushed_repos(hub: HubServer, roots):
    for repo, splits in REPOS.items():
        for name, path_in_repo in splits.values():
            # No card options: the card's window must fit roots of 1-frame videos too.
            push_to_hub(roots[name], repo, path_in_repo=path_in_repo, token=hub.token)
    loaded = run_script(
        f"REPOS = {json.dumps(REPOS)!r}\n" + _LOAD_FRAMES,
        HF_TOKEN=hub.token,
    )
    for repo, splits in REPOS.items():
        for split, (name, _) in splits.items():
            want = _decoded_frames(roots[name])
            for streaming in (False, True):
                got = loaded[f"{repo}:{split}:{streaming}"]
                assert got["features"] == (
                    "{'video_id': Value('int32'), 'frame_idx': Value('int32'), "
                    "'bytes': Image(mode=None, decode=True)}"
                )
                assert len(got["rows"]) == read_layout(str(roots[name])).num_frames.sum()
                assert {(v, t): c for v, t, c in got["rows"]} == want, (repo, split, streaming)


def test_cards_of_odd_roots_fit_them(hub: HubServer, roots):
    for name, want_length in (("ones", 1), ("tiny", 1), ("short", 9), ("mixed", 11)):
        push_to_hub(roots[name], f"org/{name}", token=hub.token)
        card = DatasetCard(hub.read_file(f"org/{name}", "README.md").decode())
        card.validate()  # what the Hub says of its YAML (the stand-in's validate-yaml)
        params = card.data.to_dict()["hf_lvf"]
        assert params["window_length"] == want_length, name
        layout = read_layout(str(roots[name]))
        frame_size = None if len({(v.height, v.width) for v in layout.videos}) == 1 else (32, 48)
        windows = VideoWindows(
            roots[name],
            window_length=params["window_length"],
            hop_size=params["hop_size"],
            frame_size=frame_size,
        )
        assert len(windows) > 0
        assert f"the dataset has **{len(windows):,}** windows. Each sample" in card.text
        n = len(layout.videos)
        num_frames = int(layout.num_frames.sum())
        assert f"dataset of {n:,} videos ({num_frames:,} frames" in card.text


@pytest.mark.parametrize("streaming", [False, True], ids=["downloaded", "streaming"])
def test_hf_lvf_still_reads_a_repo_with_frame_configs(hub: HubServer, roots, streaming):
    for name, path_in_repo in REPOS["org/splits"].values():
        push_to_hub(roots[name], "org/splits", path_in_repo=path_in_repo, token=hub.token)
    params = {"window_length": 1, "hop_size": 1}
    ds = datasets.load_dataset(
        "hf_lvf", data_dir="hf://datasets/org/splits", streaming=streaming, **params
    )
    assert list(ds) == ["train", "test"]
    assert_rows_equal(ds["train"], core_samples(roots["ones"], **params))
    assert_rows_equal(ds["test"], core_samples(roots["short"], **params))
