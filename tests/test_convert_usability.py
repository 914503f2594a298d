"""convert_videos for real collections: one frame size by center crop, progress in frames,
and a clear error for scripts without the ``if __name__ == "__main__":`` guard."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _roots import assert_same_samples, oracle_sample, oracle_windows, read_meta
from _videos import decode_scaled, webp_roundtrip, write_video

from hf_lvf import VideoWindows
from hf_lvf.cli import main as cli_main
from hf_lvf.convert import convert_videos

REPO = Path(__file__).resolve().parents[1]
# (H, W) of the sources -> the size each is scaled to before the middle 32x32 is kept, and
# the crop's top-left corner: worked out by hand (shorter side to 32, the other rounded).
SOURCES = {
    "wide.mp4": ((48, 64), (32, 43), (0, 6)),
    "tall.webm": ((64, 48), (43, 32), (6, 0)),
    "pano.mkv": ((40, 90), (32, 72), (0, 20)),
}


def _collection(folder: Path) -> Path:
    for seed, (name, (size, _, _)) in enumerate(SOURCES.items()):
        write_video(folder / name, 6 + seed, size, seed=seed)
    return folder


def test_mixed_aspect_ratios_to_one_size_by_center_crop(tmp_path: Path) -> None:
    folder = _collection(tmp_path / "clips")
    kept = convert_videos(folder, tmp_path / "kept", resize=32, workers=0, progress=False).root
    with pytest.raises(ValueError, match="differ in size .* crop='center'.*resize=N, crop="):
        VideoWindows(kept)
    root = convert_videos(
        folder, tmp_path / "root", resize=32, crop="center", workers=0, progress=False
    ).root
    meta = read_meta(root)
    assert (meta["resize"], meta["crop"]) == (32, "center")
    by_path = {v["path"]: v for v in meta["videos"]}
    windows = VideoWindows(root)  # one size: no frame_size needed
    for video_idx, video in enumerate(meta["videos"]):
        (height, width), scaled, (top, left) = SOURCES[video["path"]]
        assert (video["H"], video["W"]) == (32, 32)
        scaled_frames = decode_scaled(folder / video["path"], scaled, shrink=scaled[0] <= height)
        want = [f[top : top + 32, left : left + 32] for f in scaled_frames]
        got = windows.read_video(np.asarray(windows.plan.video_windows(video_idx)))[:, 0]
        np.testing.assert_array_equal(got, [webp_roundtrip(np.ascontiguousarray(w)) for w in want])
    assert set(by_path) == set(SOURCES)
    # The windows are the reference reader's windows of the cropped frames.
    windows = VideoWindows(root, window_length=3, hop_size=2)
    plan = oracle_windows(meta, window_length=3, frame_skip=0, hop_size=2, min_video_frames=None)
    want = [oracle_sample(root, meta, plan, i) for i in range(len(plan))]
    assert_same_samples(windows.take(list(range(len(windows)))), want)


def test_center_crop_to_a_rectangle_and_arguments(tmp_path: Path) -> None:
    file = write_video(tmp_path / "a.mp4", 3, (48, 64))
    root = convert_videos(
        file, tmp_path / "r", resize=(20, 30), crop="center", workers=0, progress=False
    ).root
    video = read_meta(root)["videos"][0]
    assert (video["H"], video["W"]) == (20, 30)
    with pytest.raises(ValueError, match=r"crop='center' needs resize= .* resize=224, crop="):
        convert_videos(file, tmp_path / "x", crop="center")
    with pytest.raises(ValueError, match=r"crop must be one of \('none', 'center'\), got 'mid'"):
        convert_videos(file, tmp_path / "x", resize=8, crop="mid")
    assert not (tmp_path / "x").exists()


def test_cli_convert_crop(tmp_path: Path, capsys) -> None:
    folder = _collection(tmp_path / "clips")
    args = ["convert", str(folder), str(tmp_path / "root"), "--resize", "16", "--crop", "center"]
    assert cli_main([*args, "--workers", "0", "--no-progress"]) == 0
    capsys.readouterr()
    meta = read_meta(tmp_path / "root")
    assert {(v["H"], v["W"]) for v in meta["videos"]} == {(16, 16)}


# --- scripts without the __main__ guard ------------------------------------------------------

UNGUARDED = """
import hf_lvf

def main():
    hf_lvf.convert.convert_videos({video!r}, {root!r}, workers=1, progress=False)

main()
"""
GUARDED = """
import hf_lvf

if __name__ == "__main__":
    hf_lvf.convert.convert_videos({video!r}, {root!r}, workers=1, progress=False)
    print("converted")
"""


def _run_script(path: Path, code: str) -> subprocess.CompletedProcess:
    path.write_text(textwrap.dedent(code))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, env=env
    )


def test_unguarded_script_is_told_about_the_guard(tmp_path: Path) -> None:
    video = str(write_video(tmp_path / "a.mp4", 4))
    root = str(tmp_path / "root")
    script = tmp_path / "convert_script.py"
    result = _run_script(script, UNGUARDED.format(video=video, root=root))
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"hf_lvf.errors.UsageError: convert_videos is called from {str(script)!r}, line 7, outside "
        '`if __name__ == "__main__":`; put the script\'s top-level code under '
        '`if __name__ == "__main__":`'
    ), result.stderr
    assert "BrokenProcessPool" not in result.stderr
    assert not Path(root).exists()
    # The same call under the guard converts (with a spawned worker).
    result = _run_script(script, GUARDED.format(video=video, root=root))
    assert result.returncode == 0 and result.stdout == "converted\n", result.stderr
    assert read_meta(Path(root))["videos"][0]["T"] == 4


def test_unguarded_safe_dataloader(tmp_path: Path) -> None:
    code = "import hf_lvf\nloader = hf_lvf.safe_dataloader(list(range(4)), num_workers=1)\n"
    result = _run_script(tmp_path / "train.py", code)
    assert "UsageError: safe_dataloader is called from" in result.stderr
    assert "line 2, outside `if __name__" in result.stderr
    # A guard anywhere around the call counts (building the loader starts no worker yet).
    code = (
        "import hf_lvf\ntry:\n    if '__main__' == __name__:\n"
        "        hf_lvf.safe_dataloader(list(range(4)), num_workers=1)\n"
        "        print('built')\nfinally:\n    pass\n"
    )
    result = _run_script(tmp_path / "train.py", code)
    assert result.stdout == "built\n", result.stderr
    # Under a guard (pytest's own main is one) it starts workers: tests/test_dataloader.py.


# --- progress in frames --------------------------------------------------------------------


class _RecordingBar:
    """Stands in for the tqdm bar: keeps every frames count shown and the videos done."""

    def __init__(self, total: int, *, enabled: bool):
        self.frames: list[tuple[int, int]] = []  # (videos done, frames shown)
        self.videos = 0

    def set_postfix(self, *args, **kwargs) -> None:
        self.frames.append((self.videos, kwargs["frames"]))

    def update(self, n: int) -> None:
        self.videos += n

    def close(self) -> None:
        pass


@pytest.mark.parametrize("workers", [0, "threads"])
def test_progress_counts_frames_of_a_long_video(tmp_path: Path, monkeypatch, workers) -> None:
    import hf_lvf.convert.api as api
    import hf_lvf.convert.pool as pool

    bars: list[_RecordingBar] = []
    monkeypatch.setattr(
        api, "_progress_bar", lambda *a, **k: bars.append(_RecordingBar(*a, **k)) or bars[-1]
    )
    monkeypatch.setattr(pool, "_PROGRESS_SECONDS", 0.005)
    file = write_video(tmp_path / "long.mp4", 200, (64, 64))
    kwargs = {"workers": 0} if workers == 0 else {"executor": _threads()}
    summary = convert_videos(file, tmp_path / "root", **kwargs)
    (bar,) = bars
    during = [frames for videos, frames in bar.frames if videos == 0]
    # Shown while the one video was under way, growing, in steps of written batches.
    assert [f for f in during if 0 < f < 200], bar.frames
    assert during == sorted(during)
    assert bar.frames[-1] == (0, 200) and bar.videos == 1 and summary.num_frames == 200
    assert not [p.name for p in summary.root.iterdir() if p.name.startswith(".hf_lvf")]


def _threads():
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(1)
