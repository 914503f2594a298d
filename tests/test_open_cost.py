"""Issue 44, item 4: what opening a big root costs, counted (modules imported, peak memory).

Each open runs in a fresh process with an empty cache folder, on a root written as another
tool would (``lance.write_dataset`` and ``json``; the entries of
``benchmarks/bench_scale.py``, which measures the same at 1M videos). No time is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parent.parent
FRAMES = 8
# The video table's bars at 1M videos (issue 44): a first open peaks at most +500 MB.
PEAK_PER_MILLION = 500e6
# What does not grow with the root: the records of one chunk of entries (hf_lvf.layout.table).
PEAK_FIXED = 40e6
VIDEOS = 200_000


def write_root(root: Path, num_videos: int) -> Path:
    """``num_videos`` videos of 8 rows each (a few bytes standing in for a frame: the open
    reads no frame), and a ``_metadata.json`` as ``json.dumps`` writes it."""
    n = num_videos * FRAMES
    rows = np.arange(n, dtype=np.int64)
    blobs = pa.Array.from_buffers(
        pa.binary(),
        n,
        [None, pa.py_buffer((np.arange(n + 1) * 4).astype(np.int32)), pa.py_buffer(b"RIFF" * n)],
    )
    table = pa.table(
        {
            "video_id": pa.array((rows // FRAMES).astype(np.int32)),
            "frame_idx": pa.array((rows % FRAMES).astype(np.int32)),
            "bytes": blobs,
        }
    )
    lance.write_dataset(table, str(root), mode="overwrite")
    videos = [
        {
            "id": i,
            "key": f"clip_{i:08d}",
            "path": f"/data/raw/clip_{i:08d}.mp4",
            "T": FRAMES,
            "H": 16,
            "W": 16,
            "start_row": i * FRAMES,
            "metadata": {"label": i % 400},
        }
        for i in range(num_videos)
    ]
    text = json.dumps({"layout": "lance-video-frames", "videos": videos})
    (root / "_metadata.json").write_text(text)
    return root


# The child: imports what opening needs (hf_lvf's reading core), then opens the root once.
_CHILD = textwrap.dedent(
    """
    import gc, json, sys
    from hf_lvf import VideoWindows

    def hwm():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM"))

    def rss():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS"))

    gc.collect()
    before_modules, before = set(sys.modules), rss()
    if hwm() > before:  # the peak of the imports: start the count from here
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    w = VideoWindows(sys.argv[1], window_length=4, hop_size=2)
    out = {
        "windows": len(w),
        "imported": sorted(set(sys.modules) - before_modules),
        "peak": hwm() - before,
    }
    print(json.dumps(out))
    """
)


def _open(root: Path, cache: Path) -> dict:
    env = {**os.environ, "HF_LVF_CACHE": str(cache), "XDG_CACHE_HOME": str(cache / "xdg")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def big_root(tmp_path_factory) -> Path:
    return write_root(tmp_path_factory.mktemp("open_cost") / "root", VIDEOS)


def test_opening_a_root_imports_nothing(big_root, tmp_path):
    """Opening a root (the first time, which parses, and again, which maps the cache)
    imports no module: no pandas (which pyarrow's ``pa.array`` and ``to_numpy`` import, 0.4 s),
    nor anything else the reading core has not imported already."""
    for attempt in ("first", "again"):
        opened = _open(big_root, tmp_path / "cache")
        assert opened["windows"] == 3 * VIDEOS
        assert "pandas" not in opened["imported"], attempt
        assert opened["imported"] == [], f"the {attempt} open imported {opened['imported']}"


def test_first_open_peak_memory_is_bounded(big_root, tmp_path):
    """The peak memory of a first open (the file, its parse, the table), from the process's
    high-water mark: at most the bar of +500 MB at 1M videos, scaled to this root, plus one
    chunk's records (the parse of the whole list into records at once peaked at +890 MB at
    1M, +227 MB here; a chunk at a time, +380 MB and +120 MB)."""
    opened = _open(big_root, tmp_path / "cache")
    bound = PEAK_PER_MILLION * VIDEOS / 1e6 + PEAK_FIXED
    assert opened["windows"] == 3 * VIDEOS
    assert opened["peak"] <= bound, f"peak +{opened['peak'] / 1e6:.0f} MB > {bound / 1e6:.0f} MB"


def test_entries_cut_where_a_string_holds_the_separator(monkeypatch):
    """The list is decoded in pieces cut where ``}, {`` follows a point; a cut inside a string
    or a nested value makes a piece that is no JSON list, and the list is then split entry by
    entry: the table is the same either way."""
    from hf_lvf.layout import table as parse

    videos = [
        {"T": 2, "H": 4, "W": 4, "start_row": 2 * i, "path": f"a}}, {{b{i}", "metadata": {"x": i}}
        for i in range(50)
    ]
    videos[7]["metadata"] = {"x": 1.5, "note": "}, {"}
    text = json.dumps({"layout": "lance-video-frames", "videos": videos}).encode()
    whole = parse.parse_metadata(text, where="whole")
    monkeypatch.setattr(parse, "_CHUNK_BYTES", 1)
    monkeypatch.setattr(parse, "_CHUNK", 3)
    cut = parse.parse_metadata(text, where="cut")
    assert cut[0].equals(whole[0]) and cut[2] == whole[2]
    assert cut[0].column("path").to_pylist() == [v["path"] for v in videos]
    assert cut[0].column("metadata.x").to_pylist()[6:9] == [6.0, 1.5, 8.0]
    assert cut[0].column("metadata.note").to_pylist()[7] == "}, {"


def _typed_only(monkeypatch):
    """parse_metadata without Arrow's reader: the typed records' path, the reference."""
    from hf_lvf.layout import table as parse

    monkeypatch.setattr(parse, "_arrow_columns", lambda text: None)


def _parsed(text: bytes):
    from hf_lvf.errors import LayoutError
    from hf_lvf.layout.table import field_dtype, parse_metadata

    try:
        table, header, kinds = parse_metadata(text, where="the file")
    except LayoutError as err:
        return "error", str(err)
    n = table.num_rows
    dtypes = {}
    for name, k in kinds.items():
        try:
            dtypes[name] = (field_dtype(name, k, n), k.present)
        except ValueError as err:
            dtypes[name] = str(err)
    return table.combine_chunks(), header, dtypes


def _entry(i: int, **changes) -> dict:
    entry = {"id": i, "key": f"v{i}", "path": f"/v/{i}.mp4", "T": 4, "H": 8, "W": 8}
    entry |= {"start_row": 4 * i, "metadata": {"label": i % 3}}
    return entry | changes


# Files the Arrow reader must read as the typed records do, or leave to them: each, written
# compact and as hf_lvf writes (indented), with the list cut into pieces of a few entries.
_ODD_FILES = {
    "usual": [_entry(i) for i in range(40)],
    "no id, key or metadata": [
        {k: v for k, v in _entry(i).items() if k in ("T", "H", "W", "path", "start_row")}
        for i in range(30)
    ],
    "ids missing here and there": [_entry(i, id=None) if i % 4 else _entry(i) for i in range(30)],
    "fps, checksum, extra keys": [
        _entry(i, fps=[25, 29.97][i % 2], checksum="ab", x=[1]) for i in range(30)
    ],
    "a field seen late, a null field": [
        _entry(i, metadata={"a": None} if i < 25 else {"a": None, "b": "s"}) for i in range(30)
    ],
    "ints and floats in one field": [
        _entry(i, metadata={"x": i if i % 2 else i + 0.5}) for i in range(30)
    ],
    "ints then floats across pieces": [
        _entry(i, metadata={"x": i if i < 20 else i + 0.5}) for i in range(30)
    ],
    "bools, some missing": [
        _entry(i, metadata={"ok": bool(i % 2)} if i % 3 else {}) for i in range(30)
    ],
    "bools and ints": [_entry(i, metadata={"ok": True if i % 2 else 1}) for i in range(30)],
    "ints and strings": [_entry(i, metadata={"x": i if i < 20 else "s"}) for i in range(30)],
    "an int past 64 bits": [_entry(i, metadata={"x": 2**64 if i == 17 else i}) for i in range(30)],
    "a float past 2**63": [_entry(i, metadata={"x": 1e30 if i == 17 else 0.5}) for i in range(30)],
    "separators in strings": [_entry(i, path=f"a}}, {{b{i}", key="},\n  {") for i in range(30)],
    "nested metadata": [_entry(i, metadata={"x": [{"a": 1}, {"b": 2}]}) for i in range(30)],
    "metadata null": [_entry(i, metadata=None) for i in range(30)],
    "a sample key as a field": [_entry(i, metadata={"video": 1}) for i in range(30)],
    "a float T": [_entry(i, T=4.0) for i in range(30)],
    "a negative start_row": [_entry(i, start_row=-4 if i == 9 else 4 * i) for i in range(30)],
    "a side too big": [_entry(i, W=10**6 if i == 3 else 8) for i in range(30)],
    "a bool H": [_entry(i, H=True) for i in range(30)],
    "a missing path": [
        {k: v for k, v in _entry(i).items() if k != "path" or i != 5} for i in range(30)
    ],
    "a duplicate id": [_entry(i if i != 7 else 3) for i in range(30)],
    "a row gap": [_entry(i, start_row=4 * i + (i > 10)) for i in range(30)],
    "a string id": [_entry(i, id=str(i)) for i in range(30)],
    "unicode": [_entry(i, key=f"vidéo\u2028{i}", metadata={"c": 'é\\"}'}) for i in range(30)],
}


@pytest.mark.parametrize("name", sorted(_ODD_FILES))
@pytest.mark.parametrize("indent", [None, 1])
def test_arrows_reader_reads_each_file_as_the_typed_records_do(name, indent, monkeypatch):
    """The video table, header and field dtypes, or the error, are those of the typed path,
    for each odd file, whether Arrow's reader takes it or leaves it to the typed records."""
    from hf_lvf.layout import table as parse
    from hf_lvf.layout.text import encode_metadata

    document = {"layout": "lance-video-frames", "videos": _ODD_FILES[name]}
    text = encode_metadata(document) if indent else json.dumps(document).encode()
    monkeypatch.setattr(parse, "_CHUNK_BYTES", 500)  # pieces of a few entries
    fast = _parsed(text)
    with monkeypatch.context() as typed:
        _typed_only(typed)
        reference = _parsed(text)
    if reference[0] == "error":
        assert fast == reference
    else:
        assert fast[0].equals(reference[0]), (fast[0].to_pylist()[:2], reference[0].to_pylist()[:2])
        assert fast[1:] == reference[1:]


@pytest.mark.parametrize("indent", [None, 1])
def test_the_usual_file_is_read_by_arrows_reader(indent, monkeypatch):
    """The 1M open's speed (benchmarks/bench_scale.py) is Arrow's reader's: hf_lvf's own
    file and a compact one never build a record per entry."""
    from hf_lvf.layout import table as parse
    from hf_lvf.layout.text import encode_metadata

    def no_records(*args):
        raise AssertionError("the typed records were built")

    monkeypatch.setattr(parse, "_columns_of", no_records)
    monkeypatch.setattr(parse, "_lenient_columns", no_records)
    monkeypatch.setattr(parse, "_CHUNK_BYTES", 2000)
    videos = [
        _entry(i, fps=30, metadata={"label": i % 3, "caption": f"c{i}", "w": 0.5})
        for i in range(300)
    ]
    document = {"layout": "lance-video-frames", "videos": videos}
    text = encode_metadata(document) if indent else json.dumps(document).encode()
    table, _, kinds = parse.parse_metadata(text, where="f")
    assert table.column("metadata.caption").to_pylist() == [f"c{i}" for i in range(300)]
    assert table.column("start_row").to_pylist() == [4 * i for i in range(300)]
    assert kinds["w"].kinds == {"float"} and kinds["label"].present == 300
