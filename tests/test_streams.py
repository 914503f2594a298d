"""Image streams (FORMAT.md, "Image streams"): more than one encoded image per frame row,
written by write_frames from frames given as mappings {stream name: image}."""

from __future__ import annotations

import io
import json
from pathlib import Path

import lance
import numpy as np
import pytest
from PIL import Image

from hf_lvf.write import write_frames

TOP, WRIST = "observation.images.top", "observation.images.wrist"


def _frames(n: int, seed: int, wrist=(8, 12), top=(16, 24)):
    rng = np.random.default_rng(seed)
    return [
        {
            TOP: rng.integers(0, 255, (*top, 3), np.uint8),
            WRIST: rng.integers(0, 255, (*wrist, 3), np.uint8),
        }
        for _ in range(n)
    ]


def _decoded(blobs) -> list[np.ndarray]:
    return [np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in blobs]


def test_streams_written_beside_bytes_and_fields(tmp_path: Path) -> None:
    a, b = _frames(5, 0), _frames(3, 1, wrist=(10, 6))
    videos = [
        {"key": "a", "frames": a, "frame_fields": {"observation.state": np.zeros((5, 3))}},
        {"key": "b", "frames": iter(b), "frame_fields": {"observation.state": np.ones((3, 3))}},
    ]
    root = write_frames(tmp_path / "r", videos, codec="png", video_column=TOP)
    meta = json.loads((root / "_metadata.json").read_text())
    assert meta["video_column"] == TOP
    assert meta["streams"] == {
        WRIST: {"H": 8, "W": 12, "encoding": "png", "quality": None, "lossless": True}
    }
    # The second video's wrist images are 10x6: its entry says so; the first's agrees.
    assert "streams" not in meta["videos"][0]
    assert meta["videos"][1]["streams"] == {WRIST: {"H": 10, "W": 6}}
    table = lance.dataset(str(root)).to_table().flatten().flatten()
    assert table.column_names.count("observation.state") == 1  # one struct: fields, streams
    frames = a + b
    for got, frame in zip(_decoded(table.column("bytes").to_pylist()), frames, strict=True):
        np.testing.assert_array_equal(got, frame[TOP])
    for got, frame in zip(_decoded(table.column(WRIST).to_pylist()), frames, strict=True):
        np.testing.assert_array_equal(got, frame[WRIST])


def test_a_reader_of_bytes_alone_reads_no_stream(tmp_path: Path) -> None:
    """The reference reader asks for bytes only: a root with streams stays readable by it, and
    the bytes it reads are the main stream's alone."""
    plain = write_frames(tmp_path / "plain", [("a", [f[TOP] for f in _frames(4, 0)], None)])
    both = write_frames(tmp_path / "both", [("a", _frames(4, 0), None)], video_column=TOP)
    tables = [lance.dataset(str(r)).to_table(columns=["bytes"]) for r in (plain, both)]
    assert tables[0].column("bytes").to_pylist() == tables[1].column("bytes").to_pylist()
    assert json.loads((plain / "_metadata.json").read_text()).get("streams") is None


def test_a_frame_without_a_stream_names_the_video_and_frame(tmp_path: Path) -> None:
    frames = _frames(4, 0)
    del frames[2][WRIST]
    with pytest.raises(ValueError, match=r"frame 2 of video 'a' has the images \['observation"):
        write_frames(tmp_path / "r", [("a", frames, None)], video_column=TOP)
    assert not (tmp_path / "r").exists()


def test_a_stream_image_of_another_size_names_the_video_and_frame(tmp_path: Path) -> None:
    frames = _frames(4, 0)
    frames[3][WRIST] = np.zeros((9, 12, 3), np.uint8)
    with pytest.raises(ValueError, match=r"'observation.images.wrist' of frame 3 of video 'a'"):
        write_frames(tmp_path / "r", [("a", frames, None)], video_column=TOP)
    frames[3][WRIST] = np.zeros((8, 12), np.uint8)
    with pytest.raises(ValueError, match=r"frame 3 of video 'a' must be a \(H, W, 3\)"):
        write_frames(tmp_path / "r", [("a", frames, None)], video_column=TOP)


def test_a_mapping_without_video_column_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"without the key 'video' \(video_column\)"):
        write_frames(tmp_path / "r", [("a", _frames(2, 0), None)])


def test_appending_keeps_the_streams(tmp_path: Path) -> None:
    root = write_frames(tmp_path / "r", [("a", _frames(3, 0), None)], video_column=TOP)
    write_frames(root, [("b", _frames(2, 1, wrist=(4, 4)), None)], mode="append")
    meta = json.loads((root / "_metadata.json").read_text())
    assert [v["T"] for v in meta["videos"]] == [3, 2]
    assert meta["videos"][1]["streams"] == {WRIST: {"H": 4, "W": 4}}
    with pytest.raises(TypeError, match="frame 0 of video 'c' is a ndarray"):
        write_frames(root, [("c", [np.zeros((16, 24, 3), np.uint8)], None)], mode="append")


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255**2 / mse)


def _smooth(n: int, height: int, width: int, seed: int) -> list[np.ndarray]:
    """Frames of smooth gradients with a moving square: what a camera sees, not noise."""
    y, x = np.mgrid[0:height, 0:width]
    frames = []
    for i in range(n):
        frame = np.stack(
            [x * 255 // width, y * 255 // height, (x + y) * 255 // (width + height)], -1
        )
        top, left = (5 * i + seed) % (height // 2), (9 * i) % (width // 2)
        frame[top : top + height // 4, left : left + width // 4] = (250, 40, 40)
        frames.append(frame.astype(np.uint8))
    return frames


def _read_at(blobs: list[bytes], size: tuple[int, int], out: tuple[int, int]) -> np.ndarray:
    """The frames as a read of frame_size ``out`` decodes them (the reads' own resize)."""
    from hf_lvf.decode import start_decoding

    frames = np.empty((len(blobs), *out, 3), np.uint8)
    sizes = np.broadcast_to(size, (len(blobs), 2))
    start_decoding(blobs, frames, np.arange(len(blobs)), expected_sizes=sizes, describe=str).wait()
    return frames


def test_add_proxy_adds_a_smaller_copy_without_touching_the_frames(tmp_path: Path) -> None:
    from hf_lvf.write import add_proxy

    a, b = _smooth(12, 144, 256, 0), _smooth(7, 96, 96, 3)
    root = write_frames(tmp_path / "r", [("a", a, None), ("b", b, None)], codec="png")
    before = {p.name: p.stat().st_size for p in (root / "data").iterdir()}
    add_proxy(root, 72)
    meta = json.loads((root / "_metadata.json").read_text())
    assert meta["streams"] == {
        "proxy_72": {
            "proxy_of": "bytes",
            "H": 72,
            "W": 128,
            "encoding": "jpeg",
            "quality": 90,
            "size": 72,
        }
    }
    assert "streams" not in meta["videos"][0]
    assert meta["videos"][1]["streams"] == {"proxy_72": {"H": 72, "W": 72}}
    after = {p.name: p.stat().st_size for p in (root / "data").iterdir()}
    assert {k: after[k] for k in before} == before  # the frames' data files as they were
    table = lance.dataset(str(root)).to_table()
    proxy = _decoded(table.column("proxy_72").to_pylist())
    assert [p.shape for p in proxy] == [(72, 128, 3)] * 12 + [(72, 72, 3)] * 7
    full = table.column("bytes").to_pylist()
    # Within 35 dB of the full frames read at the proxy's size (issue 46's bar), on average;
    # a sharp red square at 72 px costs JPEG's halved chroma a little more in a few frames.
    expected = [
        *_read_at(full[:12], (144, 256), (72, 128)),
        *_read_at(full[12:], (96, 96), (72, 72)),
    ]
    psnrs = [_psnr(got, want) for got, want in zip(proxy, expected, strict=True)]
    assert np.mean(psnrs) >= 35 and min(psnrs) >= 33, psnrs
    with pytest.raises(ValueError, match="already has a column 'proxy_72'"):
        add_proxy(root, 72)


def test_add_proxy_names_an_undecodable_frame(tmp_path: Path) -> None:
    import pyarrow as pa

    from hf_lvf.write import add_proxy

    frames = [np.full((40, 40, 3), i, np.uint8) for i in range(4)]
    root = write_frames(tmp_path / "r", [("clip", frames, None)])
    ds = lance.dataset(str(root))
    table = ds.to_table()
    blobs = table.column("bytes").to_pylist()
    blobs[2] = b"RIFF\x00\x00\x00\x00WEBPjunk"
    broken = table.set_column(2, "bytes", pa.array(blobs, pa.large_binary()))
    version = lance.write_dataset(broken, str(root), mode="overwrite").version
    meta = json.loads((root / "_metadata.json").read_text())
    meta["lance_version"] = version
    (root / "_metadata.json").write_text(json.dumps(meta))
    with pytest.raises(Exception, match=r"frame 2 of .*'clip'"):
        add_proxy(root, 16)
    assert "streams" not in json.loads((root / "_metadata.json").read_text())


def test_cli_add_proxy(tmp_path: Path, capsys) -> None:
    from hf_lvf.cli import main

    frames = [np.full((48, 64, 3), i * 20, np.uint8) for i in range(3)]
    root = write_frames(tmp_path / "r", [("clip", frames, None)])
    assert main(["add-proxy", str(root), "--size", "24"]) == 0
    assert "proxy_24" in capsys.readouterr().out
    meta = json.loads((root / "_metadata.json").read_text())
    assert meta["streams"]["proxy_24"]["H"] == 24 and meta["streams"]["proxy_24"]["W"] == 32


def test_appended_frames_get_the_roots_proxies(tmp_path: Path) -> None:
    """A proxy is made from each appended frame's main image: the root never has a frame
    without one (FORMAT.md: a null is a broken root)."""
    from hf_lvf.write import add_proxy

    root = write_frames(tmp_path / "r", [("a", _smooth(3, 144, 256, 0), None)], codec="png")
    add_proxy(root, 72)
    more = _smooth(4, 96, 192, 1)
    write_frames(root, [("b", more, None)], codec="png", mode="append")
    meta = json.loads((root / "_metadata.json").read_text())
    assert meta["videos"][1]["streams"] == {"proxy_72": {"H": 72, "W": 144}}
    table = lance.dataset(str(root)).to_table()
    assert table.column("proxy_72").null_count == 0
    proxy = _decoded(table.column("proxy_72").to_pylist()[3:])
    expected = _read_at(table.column("bytes").to_pylist()[3:], (96, 192), (72, 144))
    assert min(_psnr(got, want) for got, want in zip(proxy, expected, strict=True)) >= 33


def test_merged_roots_keep_each_videos_stream_sizes(tmp_path: Path) -> None:
    from hf_lvf.write import merge_roots

    a = write_frames(tmp_path / "a", [("x", _frames(3, 0), None)], video_column=TOP)
    b = write_frames(tmp_path / "b", [("y", _frames(2, 1, wrist=(4, 6)), None)], video_column=TOP)
    merged = merge_roots([a, b], tmp_path / "m")
    meta = json.loads((merged / "_metadata.json").read_text())
    assert meta["streams"][WRIST]["H"] == 8
    # b's video is 4x6 as its own root said at the top level: the merged entry says so.
    assert [v.get("streams") for v in meta["videos"]] == [None, {WRIST: {"H": 4, "W": 6}}]
    png = write_frames(tmp_path / "p", [("z", _frames(2, 2), None)], video_column=TOP, codec="png")
    with pytest.raises(ValueError, match="encod|png"):
        merge_roots([a, png], tmp_path / "m2")


# --- the read side: streams as sample keys -------------------------------------------------

SIDE = "observation.images.side"


def _three_cameras(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            TOP: rng.integers(0, 255, (16, 24, 3), np.uint8),
            WRIST: rng.integers(0, 255, (8, 12, 3), np.uint8),
            SIDE: rng.integers(0, 255, (10, 14, 3), np.uint8),
        }
        for _ in range(n)
    ]


def _camera_root(tmp_path: Path) -> tuple[Path, list[dict]]:
    a, b = _three_cameras(6, 0), _three_cameras(4, 1)
    videos = [
        {"key": "a", "frames": a, "frame_fields": {"observation.state": np.arange(6.0)[:, None]}},
        {"key": "b", "frames": b, "frame_fields": {"observation.state": -np.arange(4.0)[:, None]}},
    ]
    return write_frames(tmp_path / "r", videos, codec="png", video_column=TOP), a + b


def _check_pixels(sample: dict, frames: list[dict], names=(WRIST, SIDE)) -> None:
    first = 0 if sample["video_idx"] == 0 else 6
    for j, f in enumerate(np.asarray(sample["frame_indices"]).tolist()):
        np.testing.assert_array_equal(sample["video"][j], frames[first + f][TOP])
        for name in names:
            np.testing.assert_array_equal(sample[name][j], frames[first + f][name], err_msg=name)


def test_every_stream_is_a_sample_key_with_exact_pixels(tmp_path: Path) -> None:
    import datasets

    from hf_lvf import VideoWindows

    root, frames = _camera_root(tmp_path)
    view = VideoWindows(root, window_length=3, hop_size=2)
    assert view.streams == {WRIST: (8, 12), SIDE: (10, 14)}
    assert view.features[WRIST] == datasets.Array4D((3, 8, 12, 3), "uint8")
    assert view.features[SIDE] == datasets.Array4D((3, 10, 14, 3), "uint8")
    taken = view.take(range(len(view)))  # one dense read
    shared = list(view.iter_samples(batch_size=2))  # strips, windows sharing frames
    assert len(taken) == len(shared) == len(view) > 2
    for a, b in zip(taken, shared, strict=True):
        _check_pixels(a, frames)
        _check_pixels(b, frames)
        assert a[WRIST].dtype == np.uint8 and a[WRIST].flags.writeable
        assert not b[WRIST].flags.writeable  # views into the strip, as video
        np.testing.assert_array_equal(a["observation.state"], b["observation.state"])
    # frame_size resizes each stream as it resizes video.
    resized = VideoWindows(root, window_length=3, frame_size=(6, 6))[0]
    assert resized["video"].shape == resized[WRIST].shape == resized[SIDE].shape == (3, 6, 6, 3)


def _columns_taken(monkeypatch, rows: list[int] | None = None) -> list[list[str]]:
    """The columns of every Lance ``take`` from now on, one list a take (and, in ``rows``,
    how many rows each took)."""
    asked: list[list[str]] = []
    take = lance.LanceDataset.take

    def counting(self, indices, columns=None, **kwargs):
        asked.append(list(columns or []))
        if rows is not None:
            rows.append(len(indices))
        return take(self, indices, columns=columns, **kwargs)

    monkeypatch.setattr(lance.LanceDataset, "take", counting)
    return asked


def test_streams_picks_and_a_stream_not_picked_is_not_read(tmp_path: Path, monkeypatch) -> None:
    from hf_lvf import VideoWindows

    root, frames = _camera_root(tmp_path)
    asked = _columns_taken(monkeypatch)
    import pickle

    view = pickle.loads(pickle.dumps(VideoWindows(root, window_length=2, streams=[SIDE])))
    sample = view[3]  # the selection travels (DataLoader workers)
    _check_pixels(sample, frames, names=(SIDE,))
    assert WRIST not in sample and WRIST not in view.features
    assert asked and all(SIDE in c and "bytes" in c for c in asked)  # one take: both
    assert not any(WRIST in c for c in asked)
    asked.clear()
    none = VideoWindows(root, window_length=2, streams=[])
    assert set(none[0]) & {WRIST, SIDE} == set() and list(none.iter_samples())
    assert asked and not any(WRIST in c or SIDE in c for c in asked)
    with pytest.raises(ValueError, match=r"'observation.images.nope', not an image stream"):
        VideoWindows(root, window_length=2, streams=["observation.images.nope"])


def test_a_camera_at_offsets_is_read_as_lerobot_pads_it(tmp_path: Path, monkeypatch) -> None:
    """A stream named in frame_offsets= is read at the offsets from each window's last
    frame, clamped to its video (the edge image repeated), with ``<name>_is_pad``, as
    LeRobot's delta_timestamps reads a camera; the other streams stay at the window's
    frames, and a streaming load_dataset gives the same samples."""
    import datasets

    from hf_lvf import VideoWindows

    root, frames = _camera_root(tmp_path)
    offsets = {WRIST: [-2, 0, 1], "observation.state": [-1, 0]}
    view = VideoWindows(root, window_length=2, frame_offsets=offsets)
    assert view.streams == {SIDE: (10, 14)} and view.streams_at_offsets == {WRIST: (8, 12)}
    assert view.features[WRIST] == datasets.Array4D((3, 8, 12, 3), "uint8")
    samples = list(view.iter_samples())
    assert len(samples) == len(view) == 8  # 5 windows of a, 3 of b
    pads = 0
    for sample in samples:
        first, length = (0, 6) if sample["video_idx"] == 0 else (6, 4)
        last = int(np.asarray(sample["frame_indices"])[-1])
        reached = [last + k for k in offsets[WRIST]]
        want = np.stack([frames[first + min(max(f, 0), length - 1)][WRIST] for f in reached])
        np.testing.assert_array_equal(sample[WRIST], want)
        assert sample[WRIST + "_is_pad"].tolist() == [not 0 <= f < length for f in reached]
        pads += int(sample[WRIST + "_is_pad"].sum())
        _check_pixels(sample, frames, names=(SIDE,))
        assert sample["observation.state_is_pad"].tolist() == [last - 1 < 0, False]
    assert pads > 0 and view[0][WRIST].shape == (3, 8, 12, 3)
    # The camera's offset rows are read in its own take, of its column alone; the frames'
    # take holds the window's rows and the field's offset rows, never the camera's.
    counts: list[int] = []
    asked = _columns_taken(monkeypatch, counts)
    one = VideoWindows(root, window_length=2, frame_offsets={WRIST: [-3], "observation.state": [0]})
    one[3]  # video a, frames 3 and 4: the wrist camera at frame 1
    taken = sorted(zip(counts, asked, strict=True), key=lambda t: "bytes" in t[1])
    assert [(n, "bytes" in c, WRIST in c) for n, c in taken] == [(1, False, True), (2, True, False)]
    # TOP, the camera of ``video`` (video_column), at offsets under its own key: its images
    # come from bytes, in a take of their own, of that column alone
    counts.clear(), asked.clear()
    top = VideoWindows(root, window_length=2, frame_offsets={TOP: [-3, 0, 2]})
    sample = top[3]  # video a (6 frames), frames 3 and 4: TOP at frames 1, 4 and 6 (clamped)
    np.testing.assert_array_equal(sample[TOP], np.stack([frames[k][TOP] for k in (1, 4, 5)]))
    assert sample[TOP + "_is_pad"].tolist() == [False, False, True]
    _check_pixels(sample, frames)
    taken = sorted(zip(counts, asked, strict=True), key=lambda t: WRIST in t[1])
    streams = [(n, "bytes" in c, WRIST in c or SIDE in c) for n, c in taken]
    assert streams == [(3, True, False), (2, True, True)]
    kwargs = {"data_dir": str(root), "window_length": 2, "split": "train"}
    stream = datasets.load_dataset("hf_lvf", streaming=True, frame_offsets=offsets, **kwargs)
    for a, b in zip(stream.with_format("numpy"), samples, strict=True):
        np.testing.assert_array_equal(np.asarray(a[WRIST]), b[WRIST])
        assert list(a[WRIST + "_is_pad"]) == b[WRIST + "_is_pad"].tolist()
    cache = str(tmp_path / "cache")
    with pytest.raises(ValueError, match="pass streaming=True"):
        datasets.load_dataset("hf_lvf", cache_dir=cache, frame_offsets=offsets, **kwargs)


def test_cameras_at_the_same_offsets_are_read_in_one_take(tmp_path: Path, monkeypatch) -> None:
    """LeRobot's cameras at one set of offsets (TOP, the camera of ``video``, and WRIST): one
    take of both columns for their offset rows, beside the window's take; a camera at other
    offsets (SIDE) a take of its own. Each camera's images are its own, at its frames."""
    from hf_lvf import VideoWindows

    root, frames = _camera_root(tmp_path)
    counts: list[int] = []
    asked = _columns_taken(monkeypatch, counts)
    offsets = {TOP: [-1, 0], WRIST: [-1, 0], SIDE: [-2]}
    view = VideoWindows(root, window_length=1, sampling="every_frame", frame_offsets=offsets)
    sample = view[7]  # video b (from row 6), frame 1
    for name, reached in ((TOP, (0, 1)), (WRIST, (0, 1)), (SIDE, (0,))):  # SIDE at -1: clamped
        np.testing.assert_array_equal(
            sample[name], np.stack([frames[6 + k][name] for k in reached])
        )
    assert sample[SIDE + "_is_pad"].tolist() == [True]
    takes = sorted(
        (n, sorted(c for c in cols if c in ("bytes", WRIST, SIDE)))
        for n, cols in zip(counts, asked, strict=True)
    )
    assert takes == [(1, ["bytes"]), (1, [SIDE]), (2, ["bytes", WRIST])], takes


def test_a_proxy_at_offsets_is_refused(tmp_path: Path) -> None:
    from hf_lvf import VideoWindows
    from hf_lvf.write import add_proxy

    root = write_frames(tmp_path / "r", [("a", _smooth(4, 32, 48, 0), None)], codec="png")
    add_proxy(root, 16)
    with pytest.raises(ValueError, match="'proxy_16' is a proxy stream"):
        VideoWindows(root, window_length=2, frame_offsets={"proxy_16": [0, 1]})


def test_a_root_without_streams_reads_as_before(tmp_path: Path) -> None:
    """Without streams in _metadata.json, a binary column is a per-frame field, refused."""
    from hf_lvf import VideoWindows
    from hf_lvf.errors import LayoutError

    root, _ = _camera_root(tmp_path)
    plain = write_frames(tmp_path / "plain", [("a", [f[TOP] for f in _frames(3, 0)], None)])
    assert sorted(VideoWindows(plain, window_length=2)[0]) == [
        "filename", "frame_indices", "sample_idx", "start_frame", "video", "video_idx"
    ]  # fmt: skip
    meta = json.loads((root / "_metadata.json").read_text())
    del meta["streams"]
    (root / "_metadata.json").write_text(json.dumps(meta))
    with pytest.raises(LayoutError, match=r"column 'observation.images.wrist' .* type large_bin"):
        VideoWindows(root, window_length=2)[0]


def _replace_image(root: Path, row: int, name: str, value: bytes | None) -> None:
    """Rewrite the root's table with stream ``name``'s image of ``row`` replaced (and
    _metadata.json pointing at the new version)."""
    import lance
    import pyarrow as pa

    dataset = lance.dataset(str(root))
    table = dataset.to_table()
    parent, child = name.rsplit(".", 1)
    parts = parent.split(".")

    def replaced(array: pa.StructArray, path: list[str]) -> pa.StructArray:
        children = []
        for field in array.type:
            column = array.field(field.name)
            if path and field.name == path[0]:
                column = replaced(column, path[1:])
            elif not path and field.name == child:
                values = column.to_pylist()
                values[row] = value
                column = pa.array(values, type=column.type)
            children.append(column)
        return pa.StructArray.from_arrays(children, fields=list(array.type))

    top = table.column(parts[0]).combine_chunks()
    table = table.set_column(table.column_names.index(parts[0]), parts[0], replaced(top, parts[1:]))
    version = lance.write_dataset(table, str(root), mode="overwrite").version
    meta = json.loads((root / "_metadata.json").read_text())
    meta["lance_version"] = version
    (root / "_metadata.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("value", [None, b"not an image"])
def test_a_broken_stream_image_names_the_video_and_frame(tmp_path: Path, value) -> None:
    from hf_lvf import VideoWindows
    from hf_lvf.errors import FrameDecodeError

    root, _ = _camera_root(tmp_path)
    _replace_image(root, 7, SIDE, value)  # frame 1 of video 1 ('b')
    view = VideoWindows(root, window_length=2)
    view[0]  # another video's frames read on
    pattern = r"stream 'observation.images.side' of frame 1 of video 1 \('b'"
    with pytest.raises(FrameDecodeError, match=pattern):
        view.take([view.plan.normalize(np.arange(len(view)))[-3]])
    with pytest.raises(FrameDecodeError, match=pattern):
        list(view.iter_samples())


def test_a_proxy_is_no_sample_key(tmp_path: Path) -> None:
    from hf_lvf import VideoWindows
    from hf_lvf.write import add_proxy

    root = write_frames(tmp_path / "r", [("a", _smooth(4, 32, 48, 0), None)], codec="png")
    add_proxy(root, 16)
    proxy = next(iter(json.loads((root / "_metadata.json").read_text())["streams"]))
    view = VideoWindows(root, window_length=2)
    assert view.streams == {} and proxy not in view[0] and proxy not in view.features
    with pytest.raises(ValueError, match="a proxy is none"):
        VideoWindows(root, window_length=2, streams=[proxy])


def test_a_frame_size_a_proxy_covers_reads_only_the_proxy(tmp_path: Path, monkeypatch) -> None:
    """A read at a frame_size within a proxy takes the proxy's column, never ``bytes``, and
    decodes it to pixels within the proxy's fidelity of the full frames read the same way;
    a larger frame_size, or proxies=False, reads the full frames as before."""
    import pickle

    from hf_lvf import VideoWindows
    from hf_lvf.write import add_proxy

    videos = [("a", _smooth(8, 144, 256, 0), None), ("b", _smooth(6, 96, 96, 3), None)]
    root = write_frames(tmp_path / "r", videos, codec="png")
    add_proxy(root, 72)  # a: 72x128, b: 72x72
    add_proxy(root, 48)  # a: 48x85, b: 48x48
    asked = _columns_taken(monkeypatch)
    full = VideoWindows(root, window_length=3, frame_size=(40, 40), proxies=False)
    assert full.images == "bytes"
    want = [s["video"] for s in full.iter_samples()]
    assert asked and all("bytes" in c and "proxy_48" not in c for c in asked)
    for size, serving in [((40, 40), "proxy_48"), ((48, 48), "proxy_48"), ((60, 72), "proxy_72")]:
        asked.clear()
        view = pickle.loads(pickle.dumps(VideoWindows(root, window_length=3, frame_size=size)))
        assert view.images == serving, size  # the smallest proxy that covers the size
        got = [s["video"] for s in view.iter_samples()]
        assert asked and all(serving in c and "bytes" not in c for c in asked), (size, asked)
        if size == (40, 40):
            assert len(got) == len(want)
            psnrs = [_psnr(g, w) for g, w in zip(got, want, strict=True)]
            assert min(psnrs) >= 33 and np.mean(psnrs) >= 35, psnrs
    # The proxy's own pixels: a read at its size decodes them as stored (no resize).
    table = lance.dataset(str(root)).to_table()
    stored = _decoded(table.column("proxy_48").to_pylist()[8:])
    view = VideoWindows(root, window_length=3, frame_size=(48, 48))
    last = view[len(view) - 1]  # video b, its last 3 frames
    np.testing.assert_array_equal(last["video"], np.stack(stored[-3:]))
    # No proxy covers 73 rows (nor b's 96 columns at 80): the full frames serve it.
    for size in [(73, 73), (48, 100)]:
        asked.clear()
        view = VideoWindows(root, window_length=3, frame_size=size)
        assert view.images == "bytes" and view[0]["video"].shape == (3, *size, 3)
        assert asked and all("bytes" in c and "proxy_72" not in c for c in asked)
    with pytest.raises(ValueError, match="proxies must be True, False or a proxy stream's name"):
        VideoWindows(root, window_length=3, frame_size=(40, 40), proxies=1)


def _two_proxies(tmp_path: Path) -> Path:
    from hf_lvf.write import add_proxy

    videos = [("a", _smooth(8, 144, 256, 0), None), ("b", _smooth(6, 96, 96, 3), None)]
    root = write_frames(tmp_path / "r", videos, codec="png")
    add_proxy(root, 72)  # a: 72x128, b: 72x72
    add_proxy(root, 48)  # a: 48x85, b: 48x48
    return root


def test_proxies_names_the_proxy_that_serves_every_read(tmp_path: Path, monkeypatch) -> None:
    """``proxies="proxy_72"`` reads that proxy where the smallest covering one (proxy_48)
    would serve, and its columns alone; its pixels are those of a read at its own size,
    resized; without frame_size the proxy's sizes must agree; a name the root has not is
    refused, naming those it has."""
    from hf_lvf import VideoWindows

    root = _two_proxies(tmp_path)
    asked = _columns_taken(monkeypatch)
    forced = VideoWindows(root, window_length=3, frame_size=(40, 40), proxies="proxy_72")
    assert forced.images == "proxy_72"
    got = [s["video"] for s in forced.iter_samples()]
    assert asked and all("proxy_72" in c and "bytes" not in c for c in asked), asked
    assert all("proxy_48" not in c for c in asked)
    smallest = [s["video"] for s in VideoWindows(root, window_length=3, frame_size=(40, 40))]
    assert len(got) == len(smallest) and any(
        not np.array_equal(a, b) for a, b in zip(got, smallest, strict=True)
    )  # another stream, resized from 72 rows, not from 48
    # At the proxy's own size (b is 72x72 in proxy_72): exactly its stored images.
    table = lance.dataset(str(root)).to_table()
    stored = _decoded(table.column("proxy_72").to_pylist()[8:])
    own = VideoWindows(root, window_length=3, frame_size=(72, 72), proxies="proxy_72")
    np.testing.assert_array_equal(own[len(own) - 1]["video"], np.stack(stored[-3:]))
    with pytest.raises(ValueError, match="in stream 'proxy_72'"):  # 72x128 and 72x72
        VideoWindows(root, window_length=3, proxies="proxy_72")
    with pytest.raises(
        ValueError, match=r"no proxy stream of that name; its proxies: 'proxy_48', 'proxy_72'"
    ):
        VideoWindows(root, window_length=3, frame_size=(40, 40), proxies="proxy_96")


@pytest.mark.parametrize("streaming", [False, True])
def test_load_dataset_takes_proxies(tmp_path: Path, streaming: bool) -> None:
    """``load_dataset(..., proxies=...)`` reads what ``VideoWindows`` reads with it, through
    the map-style references too (their feature carries it)."""
    import datasets

    from hf_lvf import VideoWindows

    root = _two_proxies(tmp_path)
    kwargs = {"data_dir": str(root), "window_length": 3, "frame_size": (40, 40), "split": "train"}
    for proxies in (False, "proxy_72", True):
        cache = {} if streaming else {"cache_dir": str(tmp_path / f"cache-{proxies}")}
        ds = datasets.load_dataset(
            "hf_lvf", streaming=streaming, proxies=proxies, **kwargs, **cache
        )
        want = VideoWindows(root, window_length=3, frame_size=(40, 40), proxies=proxies)
        rows = list(ds.with_format("numpy"))
        assert len(rows) == len(want), proxies
        for a, b in zip(rows, want.iter_samples(), strict=True):
            np.testing.assert_array_equal(np.asarray(a["video"]), b["video"], err_msg=str(proxies))
    with pytest.raises(ValueError, match="proxies must be True, False or a proxy stream's name"):
        datasets.load_dataset("hf_lvf", streaming=True, proxies=0.5, **kwargs)


def test_describe_and_info_say_which_reads_a_proxy_serves(tmp_path: Path, capsys) -> None:
    import hf_lvf
    from hf_lvf.cli import main
    from hf_lvf.write import add_proxy

    videos = [("a", _smooth(4, 96, 128, 0), None), ("b", _smooth(4, 80, 80, 1), None)]
    root = write_frames(tmp_path / "r", videos, codec="png")
    assert hf_lvf.describe(root)["streams"] == {}
    add_proxy(root, 40)  # a: 40x53, b: 40x40
    assert hf_lvf.describe(root)["streams"] == {
        "proxy_40": {"proxy_of": "bytes", "encoding": "jpeg", "max_frame_size": [40, 40]}
    }
    assert main(["info", str(root)]) == 0
    said = capsys.readouterr().out
    assert "proxy of bytes: serves reads at frame_size <= 40x40, jpeg" in said, said
    root, _ = _camera_root(tmp_path / "cameras")
    streams = hf_lvf.describe(root)["streams"]
    assert set(streams) == {WRIST, SIDE} and all(s["proxy_of"] is None for s in streams.values())


@pytest.mark.parametrize("streaming", [False, True])
def test_load_dataset_reads_the_streams(tmp_path: Path, streaming: bool) -> None:
    import datasets

    from hf_lvf import VideoWindows

    root, frames = _camera_root(tmp_path)
    view = VideoWindows(root, window_length=2)
    kwargs = {"data_dir": str(root), "window_length": 2, "split": "train"}
    if streaming:
        ds = datasets.load_dataset("hf_lvf", streaming=True, **kwargs)
    else:
        ds = datasets.load_dataset("hf_lvf", cache_dir=str(tmp_path / "cache"), **kwargs)
    got = list(ds.with_format("numpy"))
    assert len(got) == len(view)
    for a, b in zip(got, view.iter_samples(), strict=True):
        assert set(a) == set(b)
        for name in ("video", WRIST, SIDE, "observation.state"):
            np.testing.assert_array_equal(np.asarray(a[name]), b[name], err_msg=name)
        _check_pixels(a, frames)
    # streams= picks the cameras: one feature, one key; the other camera is not read.
    cache = {} if streaming else {"cache_dir": str(tmp_path / "cache")}
    side = datasets.load_dataset("hf_lvf", streaming=streaming, streams=[SIDE], **kwargs, **cache)
    picked = VideoWindows(root, window_length=2, streams=[SIDE])
    if not streaming:
        assert SIDE in side.features and WRIST not in side.features
    rows = list(side.with_format("numpy"))
    assert len(rows) == len(picked)
    for a, b in zip(rows, picked.iter_samples(), strict=True):
        assert WRIST not in a and set(a) == set(b)
        np.testing.assert_array_equal(np.asarray(a[SIDE]), b[SIDE])
    with pytest.raises(ValueError, match="streams must be a list of stream names"):
        datasets.load_dataset("hf_lvf", streaming=True, streams=SIDE, **kwargs)


def test_the_card_preview_has_a_strip_per_camera(tmp_path: Path) -> None:
    """The preview of a root with cameras: for each video, one row for ``video``'s camera,
    then one per other camera, each tile the core's frame of that camera at the tile size;
    a root without streams keeps its one row a video, uncaptioned."""
    import io

    from PIL import Image

    from hf_lvf import VideoWindows
    from hf_lvf.card import render_preview
    from hf_lvf.card.preview import tile_origin

    root, _ = _camera_root(tmp_path)
    sheet = np.asarray(Image.open(io.BytesIO(render_preview(root, frames_per_video=3))))
    tile = (round(128 * 8 / 12), 128)  # the first video's aspect, 128 wide (2x, at least 128)
    view = VideoWindows(root, window_length=1, frame_size=tile)
    last = int(view.plan.first_window[1]) + 3  # video b's frame 3 (of 0, 2, 3)
    assert list(view.streams) == [WRIST, SIDE]  # the strips' order after video's
    for row, (key, index, column) in enumerate(
        [("video", 0, 0), (WRIST, 0, 0), (SIDE, 5, 2), ("video", last, 2), (WRIST, last, 2)]
    ):
        y, x = tile_origin(row, column, tile, captions=True)
        np.testing.assert_array_equal(
            sheet[y : y + tile[0], x : x + tile[1]], view.take([index])[0][key][0], err_msg=key
        )
    assert sheet.shape[0] > 6 * tile[0]  # 6 strips: 2 videos x 3 cameras
    plain = write_frames(tmp_path / "plain", [("a", _smooth(4, 8, 12, 0), None)], codec="png")
    one = np.asarray(Image.open(io.BytesIO(render_preview(plain, frames_per_video=2))))
    assert one.shape[0] < 2 * tile[0]  # one strip, no caption band
