"""Parsing a big ``_metadata.json``: the JSON parsers on the package index, and hf_lvf's parse.

    python benchmarks/bench_parse.py [--videos 1000000]

Writes (once, into ``--workdir``) the ``_metadata.json`` of a root of N videos as
another tool would (``json.dump``; the entries of ``benchmarks/bench_scale.py``), then
times, best of 3 in this process with the garbage collector as it is by default:
``json.loads``, each fast parser that is installed (orjson, pysimdjson, msgspec untyped;
``pip install orjson pysimdjson`` to compare them, hf_lvf depends on none of them but
msgspec), msgspec decoding into typed entries (what hf_lvf does), and hf_lvf's whole
parse (typed decode, columns, every check).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from pathlib import Path

import msgspec

from hf_lvf.layout.table import _Entry, parse_metadata


def _metadata(path: Path, num_videos: int) -> bytes:
    if not path.exists():
        videos = [
            {
                "id": i,
                "key": f"clip_{i:07d}",
                "path": f"/data/raw/clip_{i:07d}.mp4",
                "T": 8,
                "H": 16,
                "W": 16,
                "start_row": 8 * i,
                "metadata": {"label": i % 400},
            }
            for i in range(num_videos)
        ]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"layout": "lance-video-frames", "videos": videos}))
    return path.read_bytes()


def _best(call, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
        del result
    return min(times)


def _typed(data: bytes):
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    return msgspec.json.decode(top["videos"], type=list[_Entry])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=1_000_000)
    parser.add_argument("--quick", dest="videos", action="store_const", const=10_000, help="10k")
    parser.add_argument("--workdir", default="/tmp/hf_lvf_bench_parse")
    args = parser.parse_args()
    data = _metadata(Path(args.workdir) / f"{args.videos}.json", args.videos)
    readers = {"json.loads": lambda: json.loads(data)}
    try:
        import orjson

        readers["orjson.loads"] = lambda: orjson.loads(data)
    except ImportError:
        pass
    try:
        import simdjson

        readers["pysimdjson, to Python objects"] = lambda: simdjson.Parser().parse(data).as_dict()
    except ImportError:
        pass
    readers["msgspec, untyped"] = lambda: msgspec.json.decode(data)
    readers["msgspec into typed entries (hf_lvf's decode)"] = lambda: _typed(data)
    readers["hf_lvf: decode + columns + checks"] = lambda: parse_metadata(data, where="bench")
    print(f"{args.videos:,} videos, {len(data) / 1e6:.0f} MB of _metadata.json\n")
    print("| parser | best of 3 | vs json.loads |")
    print("| --- | --- | --- |")
    base = None
    for name, call in readers.items():
        seconds = _best(call)
        base = base or seconds
        print(f"| {name} | {seconds:.2f} s | {base / seconds:.1f}x |")


if __name__ == "__main__":
    main()
