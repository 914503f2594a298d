"""convert_videos' spans= and frame_values= tables (issue 37's convert side): literal tables in
Panda-70M's and InternVid's shapes, times -> frames at the converted fps."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import numpy as np
import pytest
from _videos import write_video

from hf_lvf.convert import convert_videos


@pytest.fixture
def clips(tmp_path: Path) -> Path:
    for i in range(2):
        write_video(tmp_path / "clips" / f"v{i}.mp4", 20, fps=10, seed=i)
    return tmp_path / "clips"


def _videos(root: Path) -> list[dict]:
    return json.loads((root / "_metadata.json").read_text())["videos"]


def test_panda70m_spans(tmp_path: Path, clips: Path) -> None:
    rows = [
        {
            "videoID": "v0",
            "timestamp": "[['0:00:00.000', '0:00:00.500'], ['0:00:00.800', '0:00:01.900']]",
            "caption": "['a dog runs', 'a dog sits']",
            "matching_score": "[0.4, 0.5]",
        },
        {
            "videoID": "v1",
            "timestamp": "[[0.1, 0.3]]",
            "caption": "['a cat']",
            "matching_score": "[0.9]",
        },
    ]
    convert_videos(clips, tmp_path / "root", workers=0, fps=20, spans=rows)
    v0, v1 = _videos(tmp_path / "root")
    assert v0["spans"] == [
        {"start_frame": 0, "end_frame": 10, "caption": "a dog runs", "matching_score": 0.4},
        {"start_frame": 16, "end_frame": 38, "caption": "a dog sits", "matching_score": 0.5},
    ]
    assert v1["spans"] == [
        {"start_frame": 2, "end_frame": 6, "caption": "a cat", "matching_score": 0.9}
    ]


def test_internvid_spans_from_a_csv(tmp_path: Path, clips: Path) -> None:
    csv = tmp_path / "internvid.csv"
    csv.write_text(
        "YoutubeID,Start_timestamp,End_timestamp,Caption,UMT_Score\n"
        "v1,00:00:00.200,00:00:01.000,a red ball,0.5\n"
        "v1,00:00:01.000,00:00:01.500,a blue ball,0.25\n"
    )
    convert_videos(clips, tmp_path / "root", workers=0, spans=csv)
    v0, v1 = _videos(tmp_path / "root")
    assert "spans" not in v0
    assert v1["spans"] == [
        {"start_frame": 2, "end_frame": 10, "caption": "a red ball", "UMT_Score": 0.5},
        {"start_frame": 10, "end_frame": 15, "caption": "a blue ball", "UMT_Score": 0.25},
    ]


def test_spans_naming_no_input(tmp_path: Path, clips: Path) -> None:
    with pytest.raises(ValueError, match="'v9', which is not one of the inputs"):
        convert_videos(
            clips, tmp_path / "root", workers=0, spans=[{"key": "v9", "start": 0, "end": 1}]
        )
    assert not (tmp_path / "root").exists()


def test_frame_values_by_frame_and_by_time(tmp_path: Path, clips: Path) -> None:
    rng = np.random.default_rng(0)
    score = rng.random(40).astype(np.float32)
    rows = [
        {"file_name": f"v{i}.mp4", "frame": f, "score": float(score[20 * i + f]), "vec": [f, i]}
        for i in range(2)
        for f in reversed(range(20))
    ]
    convert_videos(clips, tmp_path / "root", workers=0, frame_values=rows)
    table = lance.dataset(str(tmp_path / "root")).to_table()
    np.testing.assert_array_equal(table.column("score").to_numpy(), score.astype(np.float64))
    assert table.column("vec").to_pylist()[21] == [1, 1]
    # by time, at the converted fps (5): frame = round(t * 5)
    timed = [{"path": "v0.mp4", "timestamp": f / 5, "done": f == 9} for f in range(10)]
    timed += [{"path": "v1.mp4", "timestamp": f / 5, "done": False} for f in range(10)]
    convert_videos(clips, tmp_path / "r2", workers=0, fps=5, frame_values=timed)
    done = lance.dataset(str(tmp_path / "r2")).to_table().column("done").to_pylist()
    assert done == [False] * 9 + [True] + [False] * 10


def test_frame_values_of_the_wrong_length_are_refused(tmp_path: Path, clips: Path) -> None:
    rows = [
        {"file_name": f"v{i}.mp4", "frame": f, "score": 1.0} for i in range(2) for f in range(19)
    ]
    with pytest.raises(Exception, match="v0.mp4"):
        convert_videos(clips, tmp_path / "root", workers=0, on_error="raise", frame_values=rows)
    assert not (tmp_path / "root").exists()
