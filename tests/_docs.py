"""The folder every code block of docs/ and README.md runs in (tests/test_docs.py).

Blocks name their data as a user would (``"clips/"``, ``"videos/"``...). Each page gets a
fresh copy of this folder as its working directory, so a block may write, append or
overwrite without another page seeing it. A new block that needs more data adds it here,
under the name the block uses, and says so in the table below.

| name | what |
| --- | --- |
| ``clips/train`` | a root: 6 synthetic videos of 64x64 frames, 48, 40, 36, 5, 48 and 30 |
|                 | frames long, metadata ``label`` (``i % 3``) and ``fps`` (29.97) |
| ``clips/validation``, ``clips/test`` | roots of 3 videos of 40 frames each, the same fields |
| ``clips_root`` | a root like ``clips/train`` |
| ``week1_root``, ``week2_root`` | roots of 2 videos of 20 frames |
| ``captioned/`` | a copy of ``clips/train`` whose videos 0 and 2 hold captioned ``spans`` |
|                | (:data:`CAPTIONS`) |
| ``videos/`` | H.264 files in class folders ``cat/`` and ``dog/`` (2 each, 12-13 frames |
|             | of 48x64 at 30 fps) and a ``metadata.csv`` |
| ``new_videos/`` | one more H.264 file, in ``cat/`` |
| ``lerobot/`` | a LeRobot v3 dataset (tests/_lerobot.py): 3 episodes (5, 7, 4 frames at 10 fps), |
|              | cameras ``observation.images.top`` and ``observation.images.wrist``, 6-float |
|              | ``observation.state`` and ``action`` |
| ``shards/`` | webdataset shards ``00000.tar``, ``00001.tar`` (``webdataset.TarWriter``): 2 |
|             | samples each, ``mp4`` + ``txt`` + ``json`` with ``clips`` and ``caption`` lists |
| ``panda70m.csv`` | spans of ``videos/`` in Panda-70M's shape (``videoID,timestamp,caption``) |
| ``robot/`` | a LeRobot-style root: 3 episodes of 5, 3 and 7 frames at 10 fps, with |
|            | per-frame ``observation.state``, ``action`` (float32 x 6), ``timestamp``, |
|            | ``done`` and ``note`` |
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import hf_lvf
from hf_lvf.write.synthetic import synthetic_frames

TRAIN_LENGTHS = (48, 40, 36, 5, 48, 30)
FPS = 29.97
#: The spans of ``captioned/``, by video: frames [start_frame, end_frame) with a caption.
CAPTIONS = {
    0: [
        {"start_frame": 0, "end_frame": 20, "caption": "a square drifts right"},
        {"start_frame": 16, "end_frame": 48, "caption": "the square turns back", "score": 0.9},
    ],
    2: [{"start_frame": 4, "end_frame": 30, "caption": "a slow fade", "score": 0.4}],
}


def _root(path: Path, lengths: tuple[int, ...], *, seed: int, prefix: str = "clip") -> None:
    videos = (
        (
            f"{prefix}_{i:03d}",
            synthetic_frames(length, 64, 64, seed=seed + i),
            {"label": i % 3, "fps": FPS},
        )
        for i, length in enumerate(lengths)
    )
    hf_lvf.write.write_frames(path, videos)


def build_docs_workspace(folder: Path) -> Path:
    """Write the folder of the table above into ``folder`` and return it."""
    from _field_roots import write_field_root
    from _videos import make_labelled_folder, write_video

    _root(folder / "clips" / "train", TRAIN_LENGTHS, seed=0)
    _root(folder / "clips" / "validation", (40, 40, 40), seed=100)
    _root(folder / "clips" / "test", (40, 40, 40), seed=200)
    shutil.copytree(folder / "clips" / "train", folder / "clips_root")
    _root(folder / "week1_root", (20, 20), seed=300, prefix="week1")
    _root(folder / "week2_root", (20, 20), seed=400, prefix="week2")
    shutil.copytree(folder / "clips" / "train", folder / "captioned")
    metadata = folder / "captioned" / "_metadata.json"
    entries = json.loads(metadata.read_text())
    for v, spans in CAPTIONS.items():
        entries["videos"][v]["spans"] = spans
    metadata.write_text(json.dumps(entries, indent=1))
    make_labelled_folder(folder / "videos", num_frames=12, size=(48, 64))
    write_video(folder / "new_videos" / "cat" / "clip_9.mp4", 14, (48, 64), seed=99)
    _importable(folder)
    write_field_root(folder / "robot")
    return folder


def _importable(folder: Path) -> None:
    """``lerobot/``, ``shards/`` and ``panda70m.csv`` (the importing guide)."""
    import json

    import webdataset as wds
    from _lerobot import write_lerobot
    from _videos import write_video

    write_lerobot(
        folder / "lerobot", cameras=("observation.images.top", "observation.images.wrist")
    )
    (folder / "shards").mkdir()
    for s in range(2):
        with wds.TarWriter(str(folder / "shards" / f"{s:05d}.tar")) as sink:
            for k in range(2):
                n = 2 * s + k
                clip = write_video(folder / "tmp" / f"{n}.mp4", 16, (48, 64), fps=8, seed=n)
                meta = {
                    "videoid": f"v{n:04d}",
                    "clips": [[0.0, 1.0], [1.0, 2.0]],
                    "caption": [f"first half of clip {n}", f"second half of clip {n}"],
                }
                sink.write({"__key__": f"{n:06d}", "mp4": clip.read_bytes(),
                            "txt": f"clip {n}", "json": json.dumps(meta).encode()})  # fmt: skip
    shutil.rmtree(folder / "tmp")
    (folder / "panda70m.csv").write_text(
        "videoID,timestamp,caption\n"
        "cat/clip_0,\"[['0:00:00.000', '0:00:00.200'], ['0:00:00.200', '0:00:00.400']]\","
        "\"['a cat sits', 'a cat walks']\"\n"
    )


def copy_workspace(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    return dest
