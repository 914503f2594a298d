"""The first hour with ``hf-lvf``: ``--version``, help written for users, ``info``, ``show``,
a folder of MP4s, Ctrl-C in ``convert``. Run as a real command (``python -m hf_lvf.cli``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _roots import foreign_videos, hf_root, write_foreign_root
from _signals import sigint_default, stop_bound
from _videos import write_video
from hub_server import HubServer
from PIL import Image

from hf_lvf import VideoWindows, __version__
from hf_lvf.card.preview import SHEET_COLUMNS

COMMANDS = ("info", "show", "convert", "merge", "add-proxy", "card", "push", "demo")


def hf_lvf(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100"}  # help wraps at the terminal's width
    result = subprocess.run(
        [sys.executable, "-m", "hf_lvf.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        **kwargs,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_version():
    result = hf_lvf("--version")
    assert result.stdout == f"hf-lvf {__version__}\n" and result.stderr == ""
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", __version__)


def test_help_is_written_for_users():
    text = hf_lvf("--help").stdout
    assert "The only module" not in text and "``" not in text  # no developer docstring
    lines = text.splitlines()
    # One line per command, each with its summary.
    start = lines.index("commands:") + 2  # past "  COMMAND"
    listed = lines[start : start + len(COMMANDS)]
    assert [line.split()[0] for line in listed] == list(COMMANDS)
    assert all(len(line.split()) > 3 for line in listed)
    assert not lines[start + len(COMMANDS)].startswith("     ")  # no summary wrapped
    # Three examples.
    examples = lines[lines.index("examples:") + 1 :]
    invocations = [line.strip() for line in examples if line.startswith("  hf-lvf ")]
    assert len(invocations) == 3
    assert [line.split()[1] for line in invocations] == ["convert", "info", "show"]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_help_ends_with_an_example(command):
    lines = hf_lvf(command, "--help").stdout.rstrip().splitlines()
    assert lines[-2] == "example:"
    assert lines[-1].startswith(f"  hf-lvf {command} ")


# --- info -------------------------------------------------------------------------------------


def _metadata(root: Path) -> dict:
    return json.loads((root / "_metadata.json").read_text())


def _windows_by_hand(meta: dict, window_length: int, hop_size: int) -> int:
    return sum(
        (v["T"] - window_length) // hop_size + 1 for v in meta["videos"] if v["T"] >= window_length
    )


@pytest.mark.parametrize("writer", ["hf_lvf", "another tool"])
def test_info_json_counts_what_the_metadata_says(tmp_path, writer):
    if writer == "hf_lvf":
        root = hf_root(tmp_path / "root", lengths=(12, 3, 20, 9))
    else:
        root = write_foreign_root(tmp_path / "root", foreign_videos((10, 2, 17, 6, 13)))
    meta = _metadata(root)
    described = json.loads(
        hf_lvf("info", root, "--json", "--window-length", "4", "--hop-size", "2").stdout
    )
    assert described["videos"] == len(meta["videos"])
    assert described["frames"] == sum(v["T"] for v in meta["videos"])
    assert described["frame_sizes"] == [
        {
            "height": meta["videos"][0]["H"],
            "width": meta["videos"][0]["W"],
            "videos": len(meta["videos"]),
            "frames": described["frames"],
        }
    ]
    assert described["windows"] == _windows_by_hand(meta, 4, 2)
    assert described["windows"] == len(VideoWindows(root, window_length=4, hop_size=2))
    assert described["window_params"]["window_length"] == 4
    assert {"bytes", "fields", "lance_version"} <= described.keys()


def test_info_prints_a_table(tmp_path):
    root = hf_root(tmp_path / "root")
    lines = hf_lvf("info", root, "--window-length", "4").stdout.splitlines()
    assert lines[0].split() == ["root", str(root)]
    assert "windows            32 (window_length=4, frame_skip=0, hop_size=1; from 3 videos)" in (
        lines
    )


def test_info_arguments(tmp_path):
    root = hf_root(tmp_path / "root")
    bad = hf_lvf("info", root, "--window-length", "0", check=False)
    assert bad.returncode == 2
    assert bad.stderr == "hf-lvf: error: window_length must be >= 1, got 0\n"
    local = hf_lvf("info", root, "--revision", "main", check=False)
    assert local.returncode == 2 and "apply to hf:// roots only" in local.stderr


@pytest.mark.hub
def test_info_of_a_hub_root(tmp_path, hub: HubServer):
    root = hf_root(tmp_path / "root")
    hub.create_repo("org/info")
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    sha = hub.commit("org/info", files)
    described = json.loads(
        hf_lvf("info", "hf://datasets/org/info", "--revision", sha, "--json").stdout
    )
    assert described["revision"] == sha
    assert described["frames"] == 44 and described["windows"] == 44


# --- show -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return hf_root(tmp_path_factory.mktemp("cli-show") / "root", lengths=(12, 30, 20))


def test_show_writes_the_window_as_an_animated_webp(root, tmp_path):
    result = hf_lvf("show", root, 3, "-o", tmp_path / "w.webp", "--window-length", "6")
    picture = Image.open(tmp_path / "w.webp")
    assert picture.n_frames == 6
    want = VideoWindows(root, window_length=6)[3]
    for k in range(6):
        picture.seek(k)
        frame = np.asarray(picture.convert("RGB")).astype(np.int16)
        assert np.abs(frame - want["video"][k]).mean() < 3.0  # within WebP loss
    rows = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert rows["written"] == f"{tmp_path / 'w.webp'} (6 frames of 32x48, 100 ms each)"
    assert rows["video"] == "uint8 array (6, 32, 48, 3)"
    assert rows["sample_idx"] == "3" and rows["start_frame"] == "3"
    assert rows["frame_indices"] == "[3, 4, 5, 6, 7, 8]"
    assert rows["filename"] == "clip_0" and rows["label"] == "0" and rows["split"] == "val"
    assert result.stderr == ""


def test_show_with_reading_options_and_a_png(root, tmp_path):
    options = ["--window-length", "10", "--frame-skip", "1", "--frame-size", "16x16"]
    hf_lvf("show", root, -1, "-o", tmp_path / "w.png", *options, "--crop", "center")
    sheet = Image.open(tmp_path / "w.png")
    assert getattr(sheet, "n_frames", 1) == 1  # one picture
    want = VideoWindows(root, window_length=10, frame_skip=1, frame_size=(16, 16), crop="center")
    tile = np.asarray(sheet.convert("RGB"))[4:20, 4:20]
    np.testing.assert_array_equal(tile, want[len(want) - 1]["video"][0])
    assert sheet.size[0] == SHEET_COLUMNS * (16 + 4) + 4
    lossless = ["--window-length", "3", "--lossless", "--fps", "20"]
    hf_lvf("show", root, 0, "-o", tmp_path / "exact.webp", *lossless)
    picture = Image.open(tmp_path / "exact.webp")
    picture.seek(2)
    np.testing.assert_array_equal(
        np.asarray(picture.convert("RGB")), VideoWindows(root, window_length=3)[0]["video"][2]
    )
    assert picture.info["duration"] == 50


def test_show_errors(root, tmp_path):
    out = hf_lvf("show", root, 1000, "-o", tmp_path / "w.webp", check=False)
    assert out.returncode == 2
    assert out.stderr == "hf-lvf: error: window index 1000 is out of range for 62 windows\n"
    out = hf_lvf("show", root, 0, "-o", tmp_path / "w.jpg", check=False)
    assert out.returncode == 2 and "must end in .webp, .gif, .png" in out.stderr
    assert list(tmp_path.iterdir()) == []


# --- where people go wrong ---------------------------------------------------------------------


def test_a_folder_of_mp4s_names_the_convert_command(tmp_path):
    for i in range(2):
        write_video(tmp_path / "my_mp4s" / f"clip{i}.mp4", 4, seed=i)
    for command in (["info", "my_mp4s"], ["show", "my_mp4s", "0", "-o", "w.webp"]):
        out = hf_lvf(*command, check=False, cwd=tmp_path)
        assert out.returncode == 2
        assert out.stderr.startswith("hf-lvf: error: 'my_mp4s' is not a lance-video-frames root")
        assert "holds 2 video files" in out.stderr
        assert "`hf-lvf convert my_mp4s my_mp4s_lvf`" in out.stderr
        assert "Traceback" not in out.stderr
    # The command it names works.
    hf_lvf("convert", "my_mp4s", "my_mp4s_lvf", "--workers", "0", "--no-progress", cwd=tmp_path)
    assert json.loads(hf_lvf("info", "my_mp4s_lvf", "--json", cwd=tmp_path).stdout)["videos"] == 2


def test_ctrl_c_in_convert_stops_at_once_and_leaves_nothing(tmp_path):
    # 16 videos: once the first is written, the rest take far longer than the signal does.
    for i in range(16):
        write_video(tmp_path / "in" / f"v{i:02d}.mp4", 60, (96, 128), seed=i)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hf_lvf.cli", "convert", "in", "root", "--workers", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a shell job
        preexec_fn=sigint_default,  # whatever SIGINT the suite started with
    )
    try:
        deadline = time.monotonic() + 120
        while not any(tmp_path.glob(".root.tmp-*/data/*.lance")):  # writing
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.01)
        sent = time.monotonic()
        bound = stop_bound(sent - started)  # the bound grows with this run's own start
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal sends Ctrl-C: workers too
        proc.wait(timeout=120)
        elapsed = time.monotonic() - sent
        stderr = proc.stderr.read()
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 130
    assert stderr.endswith("hf-lvf: interrupted; nothing was written\n"), stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # no root, no scratch
    assert elapsed < bound, f"stopped {elapsed:.2f} s after Ctrl-C (bound {bound:.2f} s)"
