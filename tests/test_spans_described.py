"""Spans and per-frame fields, seen and published: ``describe()``, ``hf-lvf info``, the dataset
card, ``push_to_hub`` and the pushed repo read back (by hf_lvf, and by plain ``datasets``).

The per-frame columns are added with pyarrow + lance directly, the spans written into
``_metadata.json`` by the test; expected statistics are computed here with numpy."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from _loading import run_script
from hub_server import HubServer

from hf_lvf import VideoWindows, build_card, describe, push_to_hub
from hf_lvf.cli import main
from hf_lvf.write.synthetic import write_synthetic_root

SPANS = {
    0: [
        {"start_frame": 0, "end_frame": 6, "caption": "a dog runs"},
        {"start_frame": 4, "end_frame": 10, "caption": "a dog sits", "score": 1},
    ],
    2: [{"start_frame": 2, "end_frame": 12, "caption": "a bird", "score": 0.5}],
}
NUM_FRAMES = [10, 6, 12]
ROWS = sum(NUM_FRAMES)
ACTION = (np.arange(ROWS * 2, dtype=np.float32).reshape(ROWS, 2) - 7) / 4
STEP = np.arange(ROWS, dtype=np.int16)
NOTES = [f"n{i % 2}" for i in range(ROWS)]


def make_root(path: Path) -> Path:
    """A root with spans and per-frame columns ``action`` (float32 x2), ``observation.step``
    (int16, a struct's child) and ``note`` (string), written with lance directly."""
    root = write_synthetic_root(path, num_videos=3, num_frames=NUM_FRAMES, frame_size=(16, 16))
    table = lance.dataset(str(root)).to_table()
    table = table.append_column(
        "action", pa.FixedSizeListArray.from_arrays(pa.array(ACTION.reshape(-1)), 2)
    )
    table = table.append_column(
        "observation", pa.StructArray.from_arrays([pa.array(STEP)], ["step"])
    )
    table = table.append_column("note", pa.array(NOTES))
    version = lance.write_dataset(table, str(root), mode="overwrite").version
    meta = json.loads((root / "_metadata.json").read_text())
    meta["lance_version"] = version
    for v, spans in SPANS.items():
        meta["videos"][v]["spans"] = spans
    (root / "_metadata.json").write_text(json.dumps(meta))
    return root


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return make_root(tmp_path_factory.mktemp("described") / "root")


def test_describe_lists_spans_and_per_frame_fields(root):
    d = describe(root, window_length=3, hop_size=2)
    assert d["windows"] == 4 + 2 + 5  # whole videos: the spans change nothing here
    assert d["spans"] == {
        "count": 3,
        "videos": 2,
        "frames_per_span": {"min": 6, "mean": 22 / 3, "max": 10},
        "fields": {"caption": "string", "score": "float64"},
        "examples_field": "caption",
        "examples": ["a dog runs", "a dog sits", "a bird"],
    }
    fields = d["frame_fields"]
    assert list(fields) == ["action", "observation.step", "note"]
    assert fields["action"] == {
        "dtype": "float32",
        "shape": [2],
        "min": float(ACTION.min()),
        "mean": pytest.approx(float(ACTION.astype(np.float64).mean())),
        "max": float(ACTION.max()),
    }
    assert fields["observation.step"] == {
        "dtype": "int16",
        "shape": [],
        "min": 0.0,
        "mean": (ROWS - 1) / 2,
        "max": float(ROWS - 1),
    }
    assert fields["note"] == {"dtype": "string", "shape": [], "examples": ["n0", "n1"]}
    assert d["problems"] == []
    inside = describe(root, window_length=3, hop_size=2, windows_in="spans")
    assert inside["windows"] == 8 and inside["window_params"]["windows_in"] == "spans"


def test_describe_of_a_root_without_them(tmp_path):
    plain = write_synthetic_root(tmp_path / "p", num_videos=1, num_frames=4, frame_size=(16, 16))
    d = describe(plain)
    assert d["spans"] is None and d["frame_fields"] == {}


def test_bad_spans_are_a_problem_of_the_description(tmp_path):
    root = write_synthetic_root(tmp_path / "b", num_videos=1, num_frames=4, frame_size=(16, 16))
    meta = json.loads((root / "_metadata.json").read_text())
    meta["videos"][0]["spans"] = [{"start_frame": 2, "end_frame": 9}]
    (root / "_metadata.json").write_text(json.dumps(meta))
    (problem,) = describe(root)["problems"]
    assert problem.startswith("the spans cannot be read: ")
    assert "videos[0] ('clip_000') spans[0] {'start_frame': 2, 'end_frame': 9}" in problem


def test_an_unsupported_column_is_a_problem_of_the_description(tmp_path):
    root = write_synthetic_root(tmp_path / "u", num_videos=1, num_frames=3, frame_size=(16, 16))
    table = lance.dataset(str(root)).to_table()
    table = table.append_column("tags", pa.array([["a"], [], ["b", "c"]], pa.list_(pa.string())))
    version = lance.write_dataset(table, str(root), mode="overwrite").version
    meta = json.loads((root / "_metadata.json").read_text())
    meta["lance_version"] = version
    (root / "_metadata.json").write_text(json.dumps(meta))
    d = describe(root)
    assert d["frame_fields"] == {}
    (problem,) = d["problems"]
    assert problem.startswith("the per-frame fields cannot be read: column 'tags' of root ")
    assert "has type list<item: string>" in problem


def test_info_prints_them(root, capsys):
    assert main(["info", str(root), "--window-length", "3", "--hop-size", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split("  ", 1)[0]: line.split("  ", 1)[1].strip() for line in lines}
    assert rows["spans"] == (
        "3 in 2 videos (6 to 10 frames, mean 7.3); fields: caption (string), score (float64)"
    )
    assert rows["span captions"] == "'a dog runs'; 'a dog sits'; 'a bird', ..."
    assert rows["per-frame action"] == "float32 (2,), -1.75 to 12 (mean 5.125)"
    assert rows["per-frame observation.step"] == "int16, 0 to 27 (mean 13.5)"
    assert rows["per-frame note"] == "string, e.g. 'n0', 'n1'"
    assert main(["info", str(root), "--window-length", "3", "--windows-in", "spans"]) == 0
    out = capsys.readouterr().out
    assert "windows_in=spans; from 2 videos" in out


def test_the_card_shows_them(root):
    text = str(build_card(root))
    assert "## Inside the videos" in text
    assert "| `.` | 3 | 2 | 6–10 (mean 7.3) | `caption` (string), `score` (float64) |" in text
    assert 'For example: "a dog runs"; "a dog sits"; "a bird".' in text
    assert "| `action` | float32 | `(2,)` | -1.75 to 12 (mean 5.125) |" in text
    assert "| `observation.step` | int16 | scalar | 0 to 27 (mean 13.5) |" in text
    assert "| `note` | string | scalar | e.g. 'n0', 'n1' |" in text


def test_the_card_of_a_root_without_them_has_no_such_section(tmp_path):
    plain = write_synthetic_root(tmp_path / "p", num_videos=1, num_frames=4, frame_size=(16, 16))
    assert "Inside the videos" not in str(build_card(plain))


_LOAD = """
import json, sys
import datasets
ds = datasets.load_dataset("org/spans", split="train", token=False)
rows = [[r["video_id"], r["frame_idx"], r["action"], r["observation"]["step"]] for r in ds]
assert "hf_lvf" not in sys.modules
print(json.dumps({"rows": rows, "columns": ds.column_names}))
"""


@pytest.mark.hub
def test_push_and_read_back(hub: HubServer, root):
    push_to_hub(root, "org/spans", token=hub.token)
    card = hub.read_file("org/spans", "README.md").decode()
    assert "## Inside the videos" in card
    params = {"window_length": 3, "hop_size": 2, "windows_in": "spans"}
    remote = VideoWindows("hf://datasets/org/spans", **params)
    local = VideoWindows(root, **params)
    for got, want in zip(remote, local, strict=True):
        np.testing.assert_array_equal(got.pop("video"), want.pop("video"))
        np.testing.assert_equal(got.pop("score"), want.pop("score"))  # NaN where missing
        np.testing.assert_equal(got, want)  # per-frame fields: arrays
    assert [s["caption"] for s in remote][::3] == ["a dog runs", "a dog sits", "a bird"]
    # A plain load_dataset of the repo (no hf_lvf) still reads it as one row per frame.
    loaded = run_script(_LOAD, HF_TOKEN=hub.token)
    starts = np.cumsum([0, *NUM_FRAMES])
    want = [
        [v, f, ACTION[starts[v] + f].tolist(), int(STEP[starts[v] + f])]
        for v, n in enumerate(NUM_FRAMES)
        for f in range(n)
    ]
    assert sorted(loaded["rows"]) == want
    assert loaded["columns"] == ["video_id", "frame_idx", "bytes", "action", "observation", "note"]
