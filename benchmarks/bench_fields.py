"""Windows/s with per-frame fields against the same root without them, in one run.

Three roots of the same frames (written once, copied): ``plain`` (no fields), ``action``
(a 6-float32 ``action`` column, read), ``wide`` (``action`` and a 1024-float32 ``emb``
column, neither selected: ``frame_fields=[]``). Each is read random (``take`` in batches
of 32) and sequential (``iter_samples``); the readers take turns batch by batch (32
windows of a sequential pass each), so a burst of load from another process hits all
alike; the rates are over all rounds.
The reference reader's algorithm (one ``take`` of ``bytes`` per window, one decode per
frame, one thread) reads ``plain`` in the same turns.

    python benchmarks/bench_fields.py            # 16 videos x 128 frames, 224x224, 4 rounds
    python benchmarks/bench_fields.py --quick    # seconds: 4 videos x 40 frames, 64x64, 1 round
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import imagecodecs
import lance
import numpy as np
import pyarrow as pa

from hf_lvf import VideoWindows
from hf_lvf.write import write_frames
from hf_lvf.write.synthetic import synthetic_frames


def make_roots(base: Path, videos: int, frames: int, size: int) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    plain = base / "plain"
    write_frames(
        plain,
        ((f"v{v}.mp4", synthetic_frames(frames, size, size, seed=v), None) for v in range(videos)),
    )
    n = videos * frames
    roots = {"plain": plain}
    for name, columns in {
        "action": {"action": (6, None)},
        "wide": {"action": (6, None), "emb": (1024, None)},
    }.items():
        shutil.copytree(plain, base / name)
        data = {
            col: pa.FixedSizeListArray.from_arrays(
                pa.array(rng.standard_normal(n * k).astype(np.float32)), k
            )
            for col, (k, _) in columns.items()
        }
        _add(base / name, data)
        roots[name] = base / name
    return roots


def _add(root: Path, data: dict[str, pa.Array]) -> None:
    import json

    meta = json.loads((root / "_metadata.json").read_text())
    start = np.array([v["start_row"] for v in meta["videos"]])

    def values(batch: pa.RecordBatch) -> pa.RecordBatch:
        rows = start[batch.column("video_id").to_numpy()] + batch.column("frame_idx").to_numpy()
        taken = [array.take(pa.array(rows)) for array in data.values()]
        return pa.RecordBatch.from_arrays(taken, names=list(data))

    lance.dataset(str(root)).add_columns(values, read_columns=["video_id", "frame_idx"])
    meta["lance_version"] = lance.dataset(str(root)).version
    (root / "_metadata.json").write_text(json.dumps(meta))


def reference_read(root: Path, view: VideoWindows, indices: np.ndarray) -> None:
    ds = lance.dataset(str(root))
    for window in _rows(view, indices):
        blobs = ds.take(pa.array(window), columns=["bytes"]).column("bytes").to_pylist()
        out = np.empty((len(blobs), *view.frame_size, 3), np.uint8)
        for k, blob in enumerate(blobs):
            out[k] = imagecodecs.webp_decode(blob)


def _rows(view: VideoWindows, indices: np.ndarray):
    video_idx, start = view.plan.locate(indices)
    frames = view.plan.frame_indices(start, video_idx)
    return (view.layout.start_rows[video_idx][:, None] + frames).tolist()


def _timed(call, *args) -> tuple[float, object]:
    t = time.perf_counter()
    result = call(*args)
    return time.perf_counter() - t, result


def _advance(view: VideoWindows, samples, k: int) -> int:
    """``k`` windows of a pass, then the wait for the strip it decodes in the background, so
    that none of its work runs in another reader's turn."""
    got = sum(next(samples, None) is not None for _ in range(k))
    view._frames.settle()
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny root, one round")
    parser.add_argument("--rounds", type=int, help="rounds (default: 1 with --quick, else 4)")
    args = parser.parse_args()
    videos, frames, size, rounds = (4, 40, 64, 1) if args.quick else (16, 128, 224, 4)
    rounds = args.rounds or rounds
    with tempfile.TemporaryDirectory() as tmp:
        roots = make_roots(Path(tmp), videos, frames, size)
        kw = {"window_length": 8, "hop_size": 4}
        views = {
            "no fields": VideoWindows(roots["plain"], **kw),
            "action (6 x f32) read": VideoWindows(roots["action"], **kw),
            "1024 x f32 present, not read": VideoWindows(roots["wide"], frame_fields=[], **kw),
        }
        assert "action" in views["action (6 x f32) read"][0]
        assert "emb" not in views["1024 x f32 present, not read"][0]
        n = len(views["no fields"])
        spent = {(name, kind): 0.0 for name in views for kind in ("random", "sequential")}
        # Per turn, each reader's time: the median of paired ratios is robust to bursts.
        turns: dict[tuple[str, str], list[float]] = {key: [] for key in spent}
        spent["reference", "random"] = 0.0
        count = {"random": 0, "sequential": 0, "reference": 0}
        for view in views.values():  # untimed: open, pools, memory
            view.take(np.arange(32))
            sum(1 for _ in view.iter_samples())
        for r in range(rounds):
            order = np.random.default_rng(r).permutation(n)
            # Random: each batch of 32 read by every reader in turn (the turn order rotating).
            for b, lo in enumerate(range(0, n, 32)):
                batch = order[lo : lo + 32]
                names = list(views)[b % 3 :] + list(views)[: b % 3]
                for name in names:
                    seconds = _timed(views[name].take, batch)[0]
                    spent[name, "random"] += seconds
                    turns[name, "random"].append(seconds)
                count["random"] += len(batch)
                if b % 4 == 0:  # the reference: a quarter of the batches (it is slower)
                    plain = views["no fields"]
                    seconds, _ = _timed(reference_read, roots["plain"], plain, batch)
                    spent["reference", "random"] += seconds
                    count["reference"] += len(batch)
            # Sequential: one pass each, advanced 32 windows at a time by every reader in turn.
            passes = {name: view.iter_samples() for name, view in views.items()}
            for _ in range(0, n, 32):
                for name, samples in passes.items():
                    seconds, got = _timed(_advance, views[name], samples, 32)
                    spent[name, "sequential"] += seconds
                    turns[name, "sequential"].append(seconds)
                count["sequential"] += got
        print(
            f"{videos} videos x {frames} frames, {size}x{size} WebP, window 8, hop 4; "
            f"{rounds} rounds"
        )
        print("ratio: of the totals; paired: median over turns of (no fields' time / its time)\n")
        print("| reader | order | windows/s | ratio | paired |")
        print("|---|---|---|---|---|")
        for (name, kind), seconds in spent.items():
            rate = count["reference" if name == "reference" else kind] / seconds
            base = count[kind] / spent["no fields", kind]
            paired = ""
            if name != "reference":
                ratios = np.array(turns["no fields", kind]) / np.array(turns[name, kind])
                paired = f"{np.median(ratios):.3f}x"
            print(f"| {name} | {kind} | {rate:.1f} | {rate / base:.3f}x | {paired} |")


if __name__ == "__main__":
    main()
