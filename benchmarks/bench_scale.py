"""What a root of 10k, 100k, 1M (and 10M) videos costs to open, share and start reading.

The roots are written as another tool would write them, with ``lance.write_dataset`` and
``json`` directly (not hf_lvf's writer): N videos x 8 frames of 16x16 (one small WebP frame,
encoded once, in every row), and a ``_metadata.json`` holding only ``layout`` and ``videos``
(``id``, ``key``, ``path``, ``T``, ``H``, ``W``, ``start_row``, ``metadata: {"label": i % 400}``),
no ``lance_version``. Roots are kept in ``--workdir`` (default ``/tmp/hf_lvf_bench_scale``)
and reused by later runs; their ``_metadata.json`` is written again at every run (the same
bytes, a new file), so that no cache of an earlier run is hit by the "first" open.

Every measurement runs in a fresh process (window_length 4, hop 2: 3 windows a video),
in this order, for each size; the caches hf_lvf may keep (``XDG_CACHE_HOME``, ``HF_HOME``,
``HF_DATASETS_CACHE``) point into a folder that is new for each size and run:

- the limits: reading ``_metadata.json`` (already in the page cache: just ``read()``), and
  parsing it into Python objects with msgspec (``msgspec.json.decode``; ``json.loads`` where
  msgspec is missing) and with ``json.loads`` for comparison, the garbage collector off
  during each parse (the parser alone);
- ``VideoWindows(root)``, first open, the peak RSS during it (``VmHWM``, reset before the
  open, minus the RSS before), whether it imported pandas and how many modules it imported,
  and the RSS it adds (``/proc/self/statm`` after minus before: memory held by the open
  view, shared pages mapped from a file included);
- a second open in another process (after the first: a cache, if any, is warm), its RSS,
  ``pickle.dumps`` of the view (size and time), and a spot check of 200 random windows
  (``segment_info``: video = i // 3, start = (i % 3) * 2) and the labels of 20 of them
  (``take``: label = video % 400);
- an open as a second NFS client would (``os.stat`` reporting another ``st_dev``, the
  cache folder shared), then again in that process;
- a worker: ``pickle.loads`` of that view (from a file) and ``w[0]``;
- ``DataLoader(w, num_workers=2, batch_size=8, multiprocessing_context="forkserver")``:
  its first batch (the view opened before; torch imported before the timing);
- ``load_dataset("hf_lvf", data_dir=root, ..., streaming=True)``: its first window, and
  the process's peak RSS (``ru_maxrss``; torch imported before the timing);
- map-style ``load_dataset(...)``: its first row, with a fresh ``HF_DATASETS_CACHE``.

Spans (``--spans``, or ``--only-spans`` for this part alone): a copy of each root whose
``_metadata.json`` also holds 5 spans a video (``[j, j + 4)`` for ``j`` in 0..4, each with a
``caption``), opened in fresh processes against the root without spans: the first open and
a reopen (the cache warm), of whole-video windows; then windows inside the spans
(``windows_in="spans"``, one window a span), first with only the video table cached, then
from an empty cache, then warm. The rows give each time over the same open of the root
without spans.

Then a stale-cache check on the smallest root: its ``_metadata.json`` is replaced by one
without its last video (the Lance table kept), opened in a fresh process (the window count
must be the new one), restored, and opened again.

    python benchmarks/bench_scale.py                  # 10k, 100k, 1M videos
    python benchmarks/bench_scale.py --quick          # 10k, the opens only (seconds)
    python benchmarks/bench_scale.py --big            # adds 10M (a 1.6 GB _metadata.json)
    python benchmarks/bench_scale.py --sizes 10k,1M --skip-map
    python benchmarks/bench_scale.py --sizes 1M --only-spans   # the spans rows alone
    python benchmarks/bench_scale.py --sizes 1M --open-only   # opens only (~1 min)

Lance compresses the one repeated frame: the 1M root's table is ~8 MB, its
``_metadata.json`` ~155 MB, so what is measured is the video table, not the frames. Building
the 1M root takes seconds (the Lance table once, ``_metadata.json`` at every run).

2 shared cores: absolute numbers swing with the load of other processes; one run each.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

WINDOW = {"window_length": 4, "hop_size": 2}
FRAMES, SIDE = 8, 16  # per video: 8 frames of 16x16 -> 3 windows of 4 frames every 2
WINDOWS_PER_VIDEO = 3
LABELS = 400
ROWS_PER_BATCH = 1 << 20
VIDEOS_PER_CHUNK = 100_000  # of _metadata.json, written piece by piece


def _parse_size(text: str) -> int:
    text = text.strip().replace("_", "")
    scale = {"k": 1_000, "K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("kKM")) * scale)


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- roots, as another tool writes them ----------------------------------------------------


def _webp_frame() -> bytes:
    from PIL import Image

    y, x = np.mgrid[0:SIDE, 0:SIDE]
    pixels = np.stack([x * 16, y * 16, (x + y) * 8], axis=-1).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "WEBP", quality=65)
    return buffer.getvalue()


def _frame_batches(num_videos: int, frame: bytes):
    import pyarrow as pa

    total = num_videos * FRAMES
    frame_idx = np.tile(np.arange(FRAMES, dtype=np.int32), ROWS_PER_BATCH // FRAMES)
    for lo in range(0, total, ROWS_PER_BATCH):
        n = min(ROWS_PER_BATCH, total - lo)
        video_id = (np.arange(lo, lo + n, dtype=np.int64) // FRAMES).astype(np.int32)
        offsets = np.arange(n + 1, dtype=np.int64) * len(frame)
        blobs = pa.Array.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(frame * n)]
        )
        yield pa.record_batch(
            [pa.array(video_id), pa.array(frame_idx[:n]), blobs],
            names=["video_id", "frame_idx", "bytes"],
        )


def write_metadata(
    root: Path, num_videos: int, *, drop_last: bool = False, spans: bool = False
) -> None:
    """``_metadata.json`` as ``json.dump`` writes it, written in pieces (10M videos need not
    be in memory at once) to a new file that then replaces the old one."""
    count = num_videos - 1 if drop_last else num_videos
    part = root / "_metadata.json.partial"
    with open(part, "w") as f:
        f.write('{"layout": "lance-video-frames", "videos": [')
        for lo in range(0, count, VIDEOS_PER_CHUNK):
            videos = [
                {
                    "id": i,
                    "key": f"clip_{i:08d}",
                    "path": f"/data/raw/clip_{i:08d}.mp4",
                    "T": FRAMES,
                    "H": SIDE,
                    "W": SIDE,
                    "start_row": i * FRAMES,
                    "metadata": {"label": i % LABELS},
                    **({"spans": _spans(i)} if spans else {}),
                }
                for i in range(lo, min(lo + VIDEOS_PER_CHUNK, count))
            ]
            f.write((", " if lo else "") + json.dumps(videos)[1:-1])
        f.write("]}")
    os.replace(part, root / "_metadata.json")


SPANS_PER_VIDEO, SPAN_FRAMES = 5, 4  # spans [j, j + 4) of 8 frames: one window each


def _spans(video: int) -> list[dict]:
    return [
        {"start_frame": j, "end_frame": j + SPAN_FRAMES, "caption": f"clip {video} part {j}"}
        for j in range(SPANS_PER_VIDEO)
    ]


def ensure_spans_root(workdir: Path, num_videos: int) -> Path:
    """A copy of the root of ``num_videos`` videos whose ``_metadata.json`` holds spans."""
    root = workdir / f"videos_{num_videos}_spans"
    if not (workdir / f"videos_{num_videos}_spans.done").exists():
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(workdir / f"videos_{num_videos}", root)
        (workdir / f"videos_{num_videos}_spans.done").touch()
    started = time.perf_counter()
    write_metadata(root, num_videos, spans=True)
    _log(f"  _metadata.json with spans written in {time.perf_counter() - started:.1f} s")
    return root


def ensure_root(workdir: Path, num_videos: int) -> Path:
    """The root of ``num_videos`` videos in ``workdir``, built once (Lance table) and given a
    freshly written ``_metadata.json``."""
    import lance
    import pyarrow as pa

    root = workdir / f"videos_{num_videos}"
    if not (workdir / f"videos_{num_videos}.done").exists():
        _log(f"building the Lance table of {num_videos:,} videos ({num_videos * FRAMES:,} rows)")
        started = time.perf_counter()
        partial = workdir / f"videos_{num_videos}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        schema = pa.schema(
            [("video_id", pa.int32()), ("frame_idx", pa.int32()), ("bytes", pa.large_binary())]
        )
        reader = pa.RecordBatchReader.from_batches(
            schema, _frame_batches(num_videos, _webp_frame())
        )
        lance.write_dataset(reader, str(partial), schema=schema, mode="create")
        os.rename(partial, root)
        (workdir / f"videos_{num_videos}.done").touch()
        _log(f"  Lance table written in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    write_metadata(root, num_videos)
    _log(
        f"  _metadata.json of {num_videos:,} videos written in "
        f"{time.perf_counter() - started:.1f} s"
    )
    return root


# --- the measuring children: one fresh process each -----------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _high_water() -> int:
    """The process's peak RSS since :func:`_reset_peak` (``VmHWM``)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM"))


def _reset_peak() -> None:
    """Start the peak RSS count afresh (Linux: ``5`` to ``clear_refs``), so that the peak of
    the imports before it is not counted."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _parse_time(parse, data: bytes) -> float:
    """Seconds to parse ``data``, the garbage collector off meanwhile: the parser alone,
    without the collector's passes over the millions of objects it makes (a loader can
    switch it off as well; with it on, parsing 1M videos takes 2-2.5x as long here)."""
    import gc

    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        parsed = parse(data)
        spent = time.perf_counter() - started
    finally:
        gc.enable()
    del parsed
    gc.collect()
    return spent


def child_limits(args) -> dict:
    started = time.perf_counter()
    with open(Path(args.root) / "_metadata.json", "rb") as f:
        data = f.read()
    out = {"file_bytes": len(data), "read_s": time.perf_counter() - started}
    try:
        import msgspec
    except ImportError:
        out["parser"] = "json"
    else:
        out["parser"] = "msgspec"
        out["msgspec_s"] = _parse_time(msgspec.json.decode, data)
    out["json_s"] = _parse_time(json.loads, data)
    out["parse_s"] = out.get("msgspec_s", out["json_s"])
    return out


def spot_check(w, num_videos: int, seed: int) -> list[str]:
    """Wrong windows among 200 random indices (and 20 labels), as messages."""
    problems = []
    if len(w) != WINDOWS_PER_VIDEO * num_videos:
        problems.append(f"len(w) = {len(w)}, expected {WINDOWS_PER_VIDEO * num_videos}")
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(w), size=min(198, len(w)), replace=False).tolist()
    picked = [0, len(w) - 1, *picked]
    for i in picked:
        info = w.segment_info(i)
        video, start = i // WINDOWS_PER_VIDEO, (i % WINDOWS_PER_VIDEO) * WINDOW["hop_size"]
        got = (info["video_idx"], info["start_frame"], info["filename"])
        want = (video, start, f"/data/raw/clip_{video:08d}.mp4")
        if got != want:
            problems.append(f"segment_info({i}) = {got}, expected {want}")
    labelled = picked[:20]
    for i, sample in zip(labelled, w.take(labelled), strict=True):
        video = i // WINDOWS_PER_VIDEO
        got = (sample["video_idx"], sample["label"], sample["video"].shape)
        want = (video, video % LABELS, (WINDOW["window_length"], SIDE, SIDE, 3))
        if got != want:
            problems.append(f"take([{i}]) = {got}, expected {want}")
    return problems


def child_open(args) -> dict:
    import gc

    from hf_lvf import VideoWindows

    gc.collect()
    before, modules = _rss(), set(sys.modules)
    _reset_peak()
    started = time.perf_counter()
    w = VideoWindows(args.root, **WINDOW)
    out = {"open_s": time.perf_counter() - started}
    out["peak_bytes"] = _high_water() - before
    out["pandas"] = "pandas" in sys.modules
    out["imported"] = len(set(sys.modules) - modules)
    gc.collect()
    out["held_bytes"] = _rss() - before
    out["windows"] = len(w)
    if args.child == "open":
        return out
    started = time.perf_counter()
    data = pickle.dumps(w)
    out["pickle_s"] = time.perf_counter() - started
    out["pickle_bytes"] = len(data)
    Path(args.pickle).write_bytes(data)
    out["problems"] = spot_check(w, args.videos, seed=args.videos)
    return out


def child_open_spans(args) -> dict:
    from hf_lvf import VideoWindows

    started = time.perf_counter()
    w = VideoWindows(args.root, **WINDOW, windows_in="spans")
    out = {"open_s": time.perf_counter() - started, "windows": len(w)}
    want = args.videos * SPANS_PER_VIDEO
    i = want - 1
    info = w.segment_info(i)
    got = (len(w), info["video_idx"], info["start_frame"], info["caption"])
    expected = (want, i // SPANS_PER_VIDEO, i % SPANS_PER_VIDEO, _spans(i // 5)[i % 5]["caption"])
    out["check"] = "ok" if got == expected else f"got {got}, expected {expected}"
    return out


def child_worker(args) -> dict:
    import hf_lvf  # noqa: F401  (a worker has imported it before it is handed the view)

    data = Path(args.pickle).read_bytes()
    started = time.perf_counter()
    w = pickle.loads(data)
    unpickled = time.perf_counter()
    w[0]
    done = time.perf_counter()
    return {"unpickle_s": unpickled - started, "read_s": done - unpickled, "s": done - started}


def child_dataloader(args) -> dict:
    import torch
    from torch.utils.data import DataLoader

    from hf_lvf import VideoWindows

    w = VideoWindows(args.root, **WINDOW)
    started = time.perf_counter()
    loader = DataLoader(w, num_workers=2, batch_size=8, multiprocessing_context="forkserver")
    batches = iter(loader)
    batch = next(batches)
    out = {"s": time.perf_counter() - started, "shape": list(batch["video"].shape)}
    del batches, torch
    return out


def child_streaming(args) -> dict:
    import datasets
    import torch

    import hf_lvf  # noqa: F401  (registers the builder)

    baseline = _rss()
    started = time.perf_counter()
    ds = datasets.load_dataset(
        "hf_lvf", data_dir=args.root, split="train", streaming=True, **WINDOW
    )
    first = next(iter(ds))
    out = {"s": time.perf_counter() - started, "peak_bytes": _peak_rss(), "baseline": baseline}
    out["label"] = int(first["label"])
    del torch
    return out


def child_map(args) -> dict:
    import datasets
    import torch

    import hf_lvf  # noqa: F401  (registers the builder)

    started = time.perf_counter()
    ds = datasets.load_dataset("hf_lvf", data_dir=args.root, split="train", **WINDOW)
    first = ds[0]
    out = {"s": time.perf_counter() - started, "rows": len(ds), "label": int(first["label"])}
    del torch
    return out


def child_open_elsewhere(args) -> dict:
    """``VideoWindows(root)`` as a second NFS client opens it (``os.stat`` reports another
    ``st_dev``), the cache folder shared: the digest of the file is computed once there."""
    real = os.stat

    def stat(path, *a, **k):
        st = real(path, *a, **k)
        fields = list(st[:10])
        fields[2] += 1  # st_dev
        names = ("atime", "mtime", "ctime", "atime_ns", "mtime_ns", "ctime_ns")
        extra = {f"st_{n}": getattr(st, f"st_{n}") for n in names}
        extra.update(st_blksize=st.st_blksize, st_blocks=st.st_blocks, st_rdev=st.st_rdev)
        return os.stat_result(fields, extra)

    os.stat = stat
    out = child_open(args)
    started = time.perf_counter()
    from hf_lvf import VideoWindows
    from hf_lvf.layout import table as cache

    cache._OPEN.clear()
    VideoWindows(args.root, **WINDOW)
    out["again_s"] = time.perf_counter() - started  # its digest now remembered there too
    return out


CHILDREN = {
    "limits": child_limits,
    "open": child_open,
    "open-pickle": child_open,
    "open-spans": child_open_spans,
    "open-elsewhere": child_open_elsewhere,
    "worker": child_worker,
    "dataloader": child_dataloader,
    "streaming": child_streaming,
    "map": child_map,
}


# --- the parent -----------------------------------------------------------------------------


def run_child(name: str, root: Path, videos: int, cache: Path, args, **env_extra) -> dict | None:
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(cache / "xdg"),
        "HF_HOME": str(cache / "hf_home"),
        "HF_DATASETS_CACHE": str(cache / "datasets"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        **env_extra,
    }
    command = [sys.executable, __file__, "--child", name, "--root", str(root)]
    command += ["--videos", str(videos), "--pickle", str(cache / "view.pkl")]
    _log(f"  {name} ({videos:,} videos)")
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=args.timeout, check=False
        )
    except subprocess.TimeoutExpired:
        _log(f"    timed out after {args.timeout} s")
        return None
    if done.returncode != 0:
        _log(f"    failed ({done.returncode}):\n" + "\n".join(done.stderr.splitlines()[-25:]))
        return None
    result = json.loads(done.stdout.strip().splitlines()[-1])
    _log(f"    {time.perf_counter() - started:.1f} s in all: {json.dumps(result)[:300]}")
    return result


def measure(root: Path, videos: int, workdir: Path, args) -> dict:
    cache = workdir / f"cache_{videos}"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    r = {"videos": videos}
    r["limits"] = run_child("limits", root, videos, cache, args)
    r["open1"] = run_child("open", root, videos, cache, args)
    r["open2"] = run_child("open-pickle", root, videos, cache, args)
    r["elsewhere"] = run_child("open-elsewhere", root, videos, cache, args)
    if args.open_only:
        shutil.rmtree(cache, ignore_errors=True)
        return {**r, "worker": {}, "dataloader": {}, "streaming": {}}
    r["worker"] = run_child("worker", root, videos, cache, args) if r["open2"] else None
    r["dataloader"] = run_child("dataloader", root, videos, cache, args)
    r["streaming"] = run_child("streaming", root, videos, cache, args)
    if not args.skip_map:
        map_cache = cache / "map_datasets"
        r["map"] = run_child("map", root, videos, cache, args, HF_DATASETS_CACHE=str(map_cache))
    shutil.rmtree(cache, ignore_errors=True)
    return r


def measure_spans(videos: int, workdir: Path, args) -> dict:
    """Opens of the root with spans and without, each in a fresh process (see the docstring)."""
    plain, spans = workdir / f"videos_{videos}", ensure_spans_root(workdir, videos)
    caches = [workdir / f"cache_spans_{videos}_{k}" for k in range(3)]
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir()
    r = {"videos": videos}
    r["plain1"] = run_child("open", plain, videos, caches[0], args)
    r["plain2"] = run_child("open", plain, videos, caches[0], args)
    r["spans1"] = run_child("open", spans, videos, caches[1], args)
    r["spans2"] = run_child("open", spans, videos, caches[1], args)
    r["inside1"] = run_child("open-spans", spans, videos, caches[1], args)
    r["inside_cold"] = run_child("open-spans", spans, videos, caches[2], args)
    r["inside2"] = run_child("open-spans", spans, videos, caches[1], args)
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)
    return r


def print_spans_table(rows: list[dict]) -> None:
    print(
        f"\nSpans: {SPANS_PER_VIDEO} a video; each open in a fresh process; "
        "x = over the same open of the root without spans\n"
    )
    columns = [
        ("no spans: first open", "plain1", "plain1"),
        ("no spans: reopen", "plain2", "plain2"),
        ("spans: first open", "spans1", "plain1"),
        ("spans: reopen", "spans2", "plain2"),
        ('windows_in="spans": first use', "inside1", "plain2"),
        ('windows_in="spans": empty cache', "inside_cold", "plain1"),
        ('windows_in="spans": reopen', "inside2", "plain2"),
    ]
    print("| videos | " + " | ".join(c[0] for c in columns) + " |")
    print("| ---: |" + " ---: |" * len(columns))
    for r in rows:
        cells = []
        for _, key, base in columns:
            got, ref = r.get(key), r.get(base)
            if got is None or ref is None:
                cells.append("failed")
                continue
            ratio = "" if key == base else f" ({got['open_s'] / ref['open_s']:.2f}x)"
            cells.append(f"{got['open_s']:.3f} s{ratio}")
        print(f"| {r['videos']:,} | " + " | ".join(cells) + " |")
    for r in rows:
        for key in ("inside1", "inside_cold", "inside2"):
            if r.get(key) and r[key]["check"] != "ok":
                print(f"{r['videos']:,} videos, {key}: {r[key]['check']}")


def stale_check(root: Path, videos: int, workdir: Path, args) -> str:
    """Open (the cache, if any, warms up), replace _metadata.json by one without the last
    video, open, put the original back, open: each open must count the windows of its file."""
    cache = workdir / f"cache_stale_{videos}"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    counts = []
    try:
        for drop_last in (False, True, False):
            write_metadata(root, videos, drop_last=drop_last)
            opened = run_child("open", root, videos, cache, args)
            counts.append(None if opened is None else opened["windows"])
    finally:
        write_metadata(root, videos)
        shutil.rmtree(cache, ignore_errors=True)
    n = WINDOWS_PER_VIDEO * videos
    expected = [n, n - WINDOWS_PER_VIDEO, n]
    verdict = "PASS" if counts == expected else "FAIL"
    return (
        f"stale-cache check ({videos:,} videos; _metadata.json replaced without its last "
        f"video, then restored): windows {counts}, expected {expected}: {verdict}"
    )


def _cell(result: dict | None, key: str, fmt) -> str:
    if result is None or key not in result:
        return "failed" if result is None else "-"
    return fmt(result[key])


def _ratio(a: dict | None, a_key: str, b: dict | None, b_key: str) -> str:
    if not a or not b or a_key not in a or b_key not in b:
        return "-"
    return f"{a[a_key] / b[b_key]:.1f}x"


def print_table(rows: list[dict]) -> None:
    def seconds(x: float) -> str:
        return f"{x:.2f} s" if x < 10 else f"{x:.1f} s"

    def mb(x: float) -> str:
        return f"{x / 1e6:.1f} MB" if x < 1e9 else f"{x / 1e9:.2f} GB"

    def size(x: float) -> str:
        return f"{x / 1024:.1f} KB" if x < 1e6 else mb(x)

    base = rows[0]

    def against_smallest(part: str):
        def cell(r: dict) -> str:
            text = _cell(r.get(part), "s", seconds)
            if r is base or not r.get(part) or not base.get(part):
                return text
            return f"{text} ({r[part]['s'] / base[part]['s']:.2f}x)"

        return cell

    parser = next((r["limits"]["parser"] for r in rows if r.get("limits")), "json")
    lines = [
        ("windows", lambda r: _cell(r["open1"], "windows", lambda x: f"{x:,}"), ""),
        ("`_metadata.json`", lambda r: _cell(r["limits"], "file_bytes", mb), ""),
        ("LIMIT: read `_metadata.json`", lambda r: _cell(r["limits"], "read_s", seconds), ""),
        (
            f"LIMIT: parse it with {parser} alone",
            lambda r: _cell(r["limits"], "parse_s", seconds),
            "",
        ),
        ("(`json.loads`, for comparison)", lambda r: _cell(r["limits"], "json_s", seconds), ""),
        (
            "`VideoWindows(root)` open, first",
            lambda r: _cell(r["open1"], "open_s", seconds),
            "2 s (goal 1 s)",
        ),
        (
            "`VideoWindows(root)` open, second (another process)",
            lambda r: _cell(r["open2"], "open_s", seconds),
            "0.5 s",
        ),
        (
            "open on another NFS client (another `st_dev`), cache shared: first, again",
            lambda r: (
                _cell(r.get("elsewhere"), "open_s", seconds)
                + ", "
                + _cell(r.get("elsewhere"), "again_s", seconds)
            ),
            "",
        ),
        (
            "open / parse limit (first, second)",
            lambda r: (
                _ratio(r["open1"], "open_s", r["limits"], "parse_s")
                + ", "
                + _ratio(r["open2"], "open_s", r["limits"], "parse_s")
            ),
            "",
        ),
        (
            "peak memory of the first open (peak RSS over the RSS before)",
            lambda r: _cell(r["open1"], "peak_bytes", mb),
            "500 MB (goal 300 MB)",
        ),
        (
            "pandas imported by the open, first / second; modules imported",
            lambda r: (
                _cell(r["open1"], "pandas", lambda x: "yes" if x else "no")
                + " / "
                + _cell(r["open2"], "pandas", lambda x: "yes" if x else "no")
                + "; "
                + _cell(r["open1"], "imported", str)
                + ", "
                + _cell(r["open2"], "imported", str)
            ),
            "no; 0",
        ),
        (
            "memory held by the open view (RSS delta), first",
            lambda r: _cell(r["open1"], "held_bytes", mb),
            "300 MB",
        ),
        (
            "memory held by the open view (RSS delta), second",
            lambda r: _cell(r["open2"], "held_bytes", mb),
            "300 MB",
        ),
        ("pickled view", lambda r: _cell(r["open2"], "pickle_bytes", size), "64 KB"),
        ("time to pickle", lambda r: _cell(r["open2"], "pickle_s", seconds), ""),
        ("a worker's unpickle + first read", lambda r: _cell(r["worker"], "s", seconds), "1 s"),
        (
            "`DataLoader(w, num_workers=2)`, first batch (vs smallest)",
            against_smallest("dataloader"),
            "1.5x",
        ),
        (
            "`load_dataset(..., streaming=True)`, first window (vs smallest)",
            against_smallest("streaming"),
            "1.5x",
        ),
        ("(its peak RSS)", lambda r: _cell(r["streaming"], "peak_bytes", mb), ""),
        (
            "`load_dataset(...)` map-style, first row",
            lambda r: _cell(r.get("map"), "s", seconds) if "map" in r else "skipped",
            "30 s",
        ),
        (
            "200 windows (video, start) + 20 labels right",
            lambda r: (
                "failed" if not r["open2"] else ("PASS" if not r["open2"]["problems"] else "FAIL")
            ),
            "PASS",
        ),
    ]
    header = ["videos in the root", *(f"{r['videos']:,}" for r in rows), "target, 1M"]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for name, cell, target in lines:
        print("| " + " | ".join([name, *(cell(r) for r in rows), target]) + " |")
    print(
        "\nParse limits: into Python objects, the garbage collector off during the parse. "
        "RSS deltas count the pages a view maps from a file and has touched."
    )
    if parser == "json":
        print("msgspec is not installed here: the parse limit is json.loads.")
    baseline = next((r["streaming"]["baseline"] for r in rows if r.get("streaming")), None)
    if baseline:
        print(f"Streaming peak RSS includes {mb(baseline)} of imports (datasets, torch, hf_lvf).")
    for r in rows:
        for problem in (r["open2"] or {}).get("problems", [])[:10]:
            print(f"{r['videos']:,} videos: {problem}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k,1M", help="videos per root, comma-separated")
    parser.add_argument("--big", action="store_true", help="add 10M videos")
    parser.add_argument(
        "--quick", action="store_true", help="10k only, the opens only, no stale-cache check"
    )
    parser.add_argument("--skip-map", action="store_true", help="no map-style load_dataset")
    parser.add_argument("--spans", action="store_true", help="add the spans rows")
    parser.add_argument("--only-spans", action="store_true", help="the spans rows alone")
    parser.add_argument(
        "--open-only", action="store_true", help="only the parse limits and the opens"
    )
    parser.add_argument("--workdir", default="/tmp/hf_lvf_bench_scale", help="roots, kept")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per measurement")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--videos", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--pickle", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)), flush=True)
        return
    sizes = [_parse_size(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.open_only = [10_000], True
    if args.big:
        sizes.append(10_000_000)
    sizes = sorted(set(sizes))
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows, span_rows = [], []
    for videos in sizes:
        root = ensure_root(workdir, videos)
        if not args.only_spans:
            rows.append(measure(root, videos, workdir, args))
        if args.spans or args.only_spans:
            span_rows.append(measure_spans(videos, workdir, args))
    if args.only_spans:
        print_spans_table(span_rows)
        return
    stale = (
        None if args.quick else stale_check(workdir / f"videos_{sizes[0]}", sizes[0], workdir, args)
    )
    _log(f"done in {time.perf_counter() - started:.0f} s")
    print(
        f"\n{FRAMES} frames of {SIDE}x{SIDE} a video, window_length {WINDOW['window_length']}, "
        f"hop {WINDOW['hop_size']}; each measurement in a fresh process; "
        f"{os.cpu_count()} cores, shared; one run\n"
    )
    print_table(rows)
    if span_rows:
        print_spans_table(span_rows)
    if stale:
        print(f"\n{stale}")


if __name__ == "__main__":
    main()
