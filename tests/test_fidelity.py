"""PSNR measured while converting: per video, in _metadata.json, in describe/info/the card."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import lance
import numpy as np
import pytest
from _videos import decode_rgb, write_video
from PIL import Image

from hf_lvf import build_card, describe
from hf_lvf.cli import main as cli_main
from hf_lvf.convert import convert_videos
from hf_lvf.convert.fidelity import PSNR_CAP, FidelityMeter
from hf_lvf.decode import encode_frame


def _meta(root) -> dict:
    return json.loads((Path(root) / "_metadata.json").read_text())


def _independent_psnr(root, clip, video_idx: int) -> float:
    """The video's stored frames decoded by Pillow against PyAV's decode of the source."""
    meta = _meta(root)
    entry = meta["videos"][video_idx]
    table = lance.dataset(str(root), version=meta["lance_version"]).to_table(columns=["bytes"])
    rows = table.column("bytes").to_pylist()[entry["start_row"] : entry["start_row"] + entry["T"]]
    stored = [np.asarray(Image.open(io.BytesIO(r)).convert("RGB"), np.float64) for r in rows]
    mse = np.mean([np.mean((s - f) ** 2) for s, f in zip(stored, decode_rgb(clip), strict=True)])
    return 10 * math.log10(255.0**2 / mse)


@pytest.fixture
def clips(tmp_path):
    return [write_video(tmp_path / f"v{i}.mp4", n, (32, 48), seed=i) for i, n in enumerate((6, 12))]


@pytest.mark.parametrize("options", [{}, {"codec": "jpeg", "quality": 80}])
def test_recorded_psnr_is_the_measured_one(tmp_path, clips, options):
    root = convert_videos(clips, tmp_path / "r", workers=0, progress=False, **options).root
    meta = _meta(root)
    psnrs = [v["psnr"] for v in meta["videos"]]
    for v, clip in enumerate(clips):  # short videos: every frame measured
        assert psnrs[v] == pytest.approx(_independent_psnr(root, clip, v), abs=0.01)
    assert meta["fidelity"] == {
        "psnr_mean": round(sum(psnrs) / 2, 2),
        "psnr_min": min(psnrs),
        "frames_measured": 18,
        "videos_measured": 2,
    }
    assert describe(root)["fidelity"] == meta["fidelity"]
    assert f"PSNR {meta['fidelity']['psnr_mean']:.1f} dB mean" in str(build_card(root))


@pytest.mark.parametrize("options", [{"codec": "png"}, {"lossless": True}])
def test_lossless_records_the_cap(tmp_path, clips, options):
    root = convert_videos(clips, tmp_path / "r", workers=0, progress=False, **options).root
    meta = _meta(root)
    assert [v["psnr"] for v in meta["videos"]] == [PSNR_CAP, PSNR_CAP] == [100.0, 100.0]
    assert (meta["fidelity"]["psnr_mean"], meta["fidelity"]["psnr_min"]) == (100.0, 100.0)


def test_fidelity_off_and_bad_flag(tmp_path, clips):
    root = convert_videos(clips, tmp_path / "r", workers=0, progress=False, fidelity=False).root
    meta = _meta(root)
    assert "fidelity" not in meta and all("psnr" not in v for v in meta["videos"])
    with pytest.raises(ValueError, match="fidelity must be True or False, got 'yes'"):
        convert_videos(clips, tmp_path / "x", workers=0, fidelity="yes")


def test_append_grows_fidelity_and_info_shows_it(tmp_path, clips, capsys):
    root = tmp_path / "r"
    convert_videos(clips[:1], root, workers=0, progress=False)
    first = _meta(root)["videos"][0]["psnr"]
    convert_videos(clips[1:], root, workers=0, progress=False, mode="append")
    meta = _meta(root)
    second = meta["videos"][1]["psnr"]
    assert meta["fidelity"] == {
        "psnr_mean": round((first + second) / 2, 2),
        "psnr_min": min(first, second),
        "frames_measured": 18,
        "videos_measured": 2,
    }
    assert cli_main(["info", str(root)]) == 0
    out = capsys.readouterr().out
    assert (
        f"PSNR {meta['fidelity']['psnr_mean']:.1f} dB mean, {min(first, second):.1f} dB worst"
        in out
    )
    assert "webp, quality 90" in out


def test_cli_no_fidelity(tmp_path, clips, capsys):
    root = tmp_path / "r"
    assert (
        cli_main(
            [
                "convert",
                *map(str, clips),
                str(root),
                "--workers",
                "0",
                "--no-progress",
                "--no-fidelity",
            ]
        )
        == 0
    )
    assert "fidelity" not in _meta(root)
    assert cli_main(["info", str(root)]) == 0
    assert "not measured" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("num_frames", "measured"),
    [
        (1, [0]),
        (16, list(range(16))),
        (17, list(range(0, 17, 2))),
        (40, list(range(0, 40, 4))),
        (100, list(range(0, 100, 8))),
        (1000, list(range(0, 1000, 64))),
    ],
)
def test_frames_measured_are_evenly_spaced(num_frames, measured):
    meter = FidelityMeter(lambda a: encode_frame(a, codec="png", quality=None, lossless=True))
    frame = np.zeros((4, 4, 3), np.uint8)
    for _ in range(num_frames):
        meter.encode(frame)
    assert sorted(meter._squared_errors) == measured
    assert (meter.frames_measured, meter.psnr) == (len(measured), 100.0)


@pytest.mark.parametrize(
    ("num_frames", "measured"),
    [
        (16, list(range(16))),
        (17, list(range(0, 17, 2))),
        (132, list(range(0, 132, 16))),
        (1000, list(range(0, 1000, 125))),
    ],
)
def test_frames_measured_from_the_announced_length(num_frames, measured):
    meter = FidelityMeter(
        lambda a: encode_frame(a, codec="png", quality=None, lossless=True), lambda: num_frames
    )
    frame = np.zeros((4, 4, 3), np.uint8)
    for _ in range(num_frames):
        meter.encode(frame)
    assert sorted(meter._squared_errors) == measured
