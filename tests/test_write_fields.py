"""Writing and growing roots with per-frame fields and spans (FORMAT.md): write_frames with
frame_fields and spans, append and merge refusing other schemas, add_frame_columns.

Oracles are the arrays built here, read back with lance directly (not hf_lvf's reader)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from _roots import make_frames

from hf_lvf import VideoWindows
from hf_lvf.errors import LayoutError
from hf_lvf.write import add_frame_columns, merge_roots, write_frames


def _fields(num_frames: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "action": rng.standard_normal((num_frames, 6)).astype(np.float32),
        "observation.state": rng.standard_normal((num_frames, 2, 3)).astype(np.float64),
        "timestamp": (np.arange(num_frames) / 10).astype(np.float32),
        "step": np.arange(num_frames, dtype=np.int16),
        "done": np.arange(num_frames) == num_frames - 1,
        "note": [f"frame {i} of {seed}" for i in range(num_frames)],
    }


def _video(key: str, num_frames: int, seed: int, **more) -> dict:
    return {
        "key": key,
        "frames": make_frames(num_frames, 8, 12, seed=seed),
        "frame_fields": _fields(num_frames, seed),
        **more,
    }


def _table(root) -> pa.Table:
    return lance.dataset(str(root)).to_table()


def _meta(root) -> dict:
    return json.loads((Path(root) / "_metadata.json").read_text())


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and a digest of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _data_files(root) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (Path(root) / "data").iterdir()}


def _column(table: pa.Table, *path: str) -> np.ndarray:
    column = table.column(path[0]).combine_chunks()
    for child in path[1:]:
        column = column.field(child)
    return np.array(column.to_pylist())


# --- write_frames ---------------------------------------------------------------------------


def test_frame_fields_are_written_beside_the_frames_exactly_with_their_dtypes(tmp_path):
    root = write_frames(tmp_path / "root", [_video("a", 5, 0), _video("b", 37, 1)])
    table = _table(root)
    assert table.schema.names[3:] == ["action", "observation", "timestamp", "step", "done", "note"]
    kinds = table.schema
    assert kinds.field("action").type == pa.list_(pa.float32(), 6)
    assert kinds.field("observation").type == pa.struct(
        [("state", pa.list_(pa.list_(pa.float64(), 3), 2))]
    )
    assert kinds.field("step").type == pa.int16() and kinds.field("done").type == pa.bool_()
    want = {k: np.concatenate([np.asarray(_fields(5, 0)[k]), np.asarray(_fields(37, 1)[k])])
            for k in _fields(1, 0)}  # fmt: skip
    np.testing.assert_array_equal(_column(table, "action").astype(np.float32), want["action"])
    state = _column(table, "observation", "state")
    np.testing.assert_array_equal(state, want["observation.state"])
    np.testing.assert_array_equal(_column(table, "timestamp").astype(np.float32), want["timestamp"])
    np.testing.assert_array_equal(_column(table, "step"), want["step"])
    np.testing.assert_array_equal(_column(table, "done"), want["done"])
    assert table.column("note").to_pylist() == list(want["note"])
    assert table.column("frame_idx").to_pylist() == [*range(5), *range(37)]
    # A reader that asks only for the frames (as the reference reader does) is unaffected.
    assert len(VideoWindows(root, window_length=4)) == 2 + 34


def test_spans_are_written_into_the_video_entry(tmp_path):
    spans = [
        {"start_frame": 0, "end_frame": 4, "caption": "a dog runs", "score": 0.5},
        {"start_frame": np.int64(3), "end_frame": 9, "caption": "it stops", "score": 1},
    ]
    videos = [
        ("plain", make_frames(3, 8, 8, seed=0), {"label": 1}),  # the original form still works
        {"key": "v", "frames": iter(make_frames(9, 8, 8, seed=1)), "spans": spans},
    ]
    root = write_frames(tmp_path / "root", videos)
    entries = _meta(root)["videos"]
    assert "spans" not in entries[0]
    assert entries[1]["spans"] == [
        {"start_frame": 0, "end_frame": 4, "caption": "a dog runs", "score": 0.5},
        {"start_frame": 3, "end_frame": 9, "caption": "it stops", "score": 1},
    ]
    assert _table(root).schema.names == ["video_id", "frame_idx", "bytes"]


def test_frame_fields_of_videos_streamed_from_a_generator(tmp_path):
    def videos():
        for i, n in enumerate((40, 3)):  # more frames than one record batch
            yield {**_video(f"v{i}", n, i), "frames": iter(make_frames(n, 8, 12, seed=i))}

    root = write_frames(tmp_path / "root", videos())
    steps = _column(_table(root), "step")
    np.testing.assert_array_equal(steps, [*range(40), *range(3)])


# --- refusals, nothing left -----------------------------------------------------------------


def _bad_span(start: int, end: int) -> dict:
    return _video("v", 6, 1, spans=[{"start_frame": start, "end_frame": end, "caption": "x"}])


@pytest.mark.parametrize(
    ("second", "error", "match"),
    [
        (
            {**_video("v", 6, 1), "frames": make_frames(7, 8, 12, seed=1)},
            ValueError,
            r"per-frame field 'action' of video 'v' has 6 values for 7 frames",
        ),
        (
            _video("v", 6, 1, frame_fields={"action": np.zeros((6, 6)), "step": np.zeros(5)}),
            ValueError,
            r"per-frame field 'step' of video 'v' has 5 values for 6 frames",
        ),
        (
            {**_video("v", 6, 1), "frame_fields": {**_fields(6, 1), "action": np.zeros((6, 6))}},
            ValueError,
            r"per-frame fields of video 'v' \(action: fixed_size_list<item: double>\[6\].*\) "
            r"differ from those of video 'a' \(the first\) \(action: fixed_size_list<item: float>",
        ),
        (
            {**_video("v", 6, 1), "frame_fields": {**_fields(6, 1), "action": np.zeros((6, 5))}},
            ValueError,
            r"differ from those of video 'a'",
        ),
        (_bad_span(2, 7), ValueError, r"span 0 of video 'v' has end_frame=7, past the video's 6"),
        (_bad_span(4, 4), ValueError, r"span 0 of video 'v' has start_frame=4, end_frame=4"),
        (_bad_span(5, 2), ValueError, r"0 <= start_frame < end_frame"),
        (_bad_span(-1, 2), ValueError, r"0 <= start_frame < end_frame"),
        (
            _video("v", 6, 1, spans=[{"start_frame": 0, "end_frame": 2, "score": 1.0}]),
            ValueError,
            r"spans of video 'v' have the fields \{score: number\} but those of video 'a' have "
            r"\{caption: string\}",
        ),
        (
            _video("v", 6, 1, spans=[{"start_frame": 0, "end_frame": 2, "video": "x"}]),
            ValueError,
            r"span 0 of video 'v': field 'video' would shadow the sample key",
        ),
        (
            _video("v", 6, 1, spans=[{"start_frame": 0, "end_frame": 2, "caption": [1]}]),
            TypeError,
            r"span 0 field 'caption' of video 'v' must be a str, int, float, bool or None",
        ),
        (
            _video("v", 6, 1, frame_fields={"x": np.array([None] * 6, object)}),
            TypeError,
            r"per-frame field 'x' of video 'v' must be an array of numbers or bools",
        ),
        ({"key": "v", "frames": [], "clip": 1}, TypeError, r"videos\[1\] must have the keys"),
        (
            _video("v", 6, 1, frame_fields={"bytes": np.zeros(6)}),
            ValueError,
            r"per-frame field name 'bytes' of video 'v'",
        ),
    ],
)
def test_a_bad_video_is_refused_before_anything_is_written(tmp_path, second, error, match):
    first = _video("a", 4, 0, spans=[{"start_frame": 0, "end_frame": 4, "caption": "first"}])
    with pytest.raises(error, match=match):
        write_frames(tmp_path / "root", [first, second])
    assert list(tmp_path.iterdir()) == []  # no root, no scratch folder


def test_a_bad_streamed_video_leaves_no_root(tmp_path):
    encoded = []

    def frames(n):
        for frame in make_frames(n, 8, 12, seed=3):
            encoded.append(1)
            yield frame

    def videos():
        yield {**_video("a", 4, 0), "frames": frames(4)}
        yield {**_video("b", 5, 1), "frames": frames(6)}  # one frame more than values

    with pytest.raises(ValueError, match=r"video 'b' has more frames than the 5 values"):
        write_frames(tmp_path / "root", videos())
    assert list(tmp_path.iterdir()) == []
    assert len(encoded) == 10  # it was caught as the frames came

    later = ({**_video("b", 5, 1), "frame_fields": {"action": np.zeros((5, 6), np.float32)}},)
    with pytest.raises(ValueError, match=r"per-frame fields of video 'b' \(action"):
        write_frames(tmp_path / "root", iter([_video("a", 4, 0), *later]))
    assert list(tmp_path.iterdir()) == []

    with pytest.raises(ValueError, match=r"video 'b' has 3 frames but 5 values in each of its"):
        write_frames(tmp_path / "root", iter([{**_video("b", 5, 1), "frames": frames(3)}]))
    assert list(tmp_path.iterdir()) == []

    spans = [{"start_frame": 0, "end_frame": 9}]
    with pytest.raises(
        ValueError, match=r"span 0 of video 'c' has end_frame=9, past the video's 4"
    ):
        write_frames(tmp_path / "root", iter([{"key": "c", "frames": frames(4), "spans": spans}]))
    assert list(tmp_path.iterdir()) == []


# --- append and merge -----------------------------------------------------------------------


def test_append_with_the_same_fields_and_refused_with_others(tmp_path):
    spans = [{"start_frame": 0, "end_frame": 2, "caption": "c"}]
    root = write_frames(tmp_path / "root", [_video("a", 4, 0, spans=spans)])
    write_frames(root, [_video("b", 3, 1)], mode="append")  # no spans: agrees with any
    steps = _column(_table(root), "step")
    np.testing.assert_array_equal(steps, [0, 1, 2, 3, 0, 1, 2])
    before = _snapshot(root)
    other = {**_video("c", 3, 2), "frame_fields": {"action": np.zeros((3, 6), np.float32)}}
    match = (
        r"fields of video 'c' \(action: .*\) differ from those of root '.*root' \(action: .*, ob"
    )
    with pytest.raises(ValueError, match=match):
        write_frames(root, [other], mode="append")
    with pytest.raises(ValueError, match=r"per-frame fields of video 'c' \(no per-frame fields\)"):
        write_frames(root, [("c", make_frames(3, 8, 12, seed=2), None)], mode="append")
    scored = _video("c", 3, 2, spans=[{"start_frame": 0, "end_frame": 2, "score": 2.0}])
    with pytest.raises(ValueError, match=r"spans of video 'c' have the fields \{score: number\} "
                       r"but those of root '.*root' have \{caption: string\}"):  # fmt: skip
        write_frames(root, [scored], mode="append")
    assert _snapshot(root) == before


def test_merge_copies_the_fields_and_refuses_roots_with_others(tmp_path):
    first = write_frames(tmp_path / "one", [_video("a", 4, 0)])
    second = write_frames(tmp_path / "two", [_video("b", 3, 1)])
    merged = merge_roots([first, second], tmp_path / "merged")
    table = _table(merged)
    assert table.schema == _table(first).schema
    want = np.concatenate([_fields(4, 0)["action"], _fields(3, 1)["action"]])
    np.testing.assert_array_equal(_column(table, "action").astype(np.float32), want)
    assert table.column("note").to_pylist() == _fields(4, 0)["note"] + _fields(3, 1)["note"]

    plain = write_frames(tmp_path / "plain", [("c", make_frames(3, 8, 12, seed=2), None)])
    with pytest.raises(ValueError, match=r"per-frame fields of root '.*plain' \(no per-frame "
                       r"fields\) differ from those of root '.*one' \(action"):  # fmt: skip
        merge_roots([first, plain], tmp_path / "refused")
    spanned = [{**_video("d", 3, 3), "spans": [{"start_frame": 0, "end_frame": 1, "event": 1}]}]
    captioned = [
        {**_video("e", 3, 4), "spans": [{"start_frame": 0, "end_frame": 1, "caption": ""}]}
    ]
    with pytest.raises(ValueError, match=r"spans of root '.*capt' have the fields \{caption"):
        merge_roots(
            [write_frames(tmp_path / "span", spanned), write_frames(tmp_path / "capt", captioned)],
            tmp_path / "refused",
        )
    assert not (tmp_path / "refused").exists()


# --- add_frame_columns ----------------------------------------------------------------------


def _plain_root(tmp_path, lengths=(5, 3, 4)) -> Path:
    videos = [(f"v{i}", make_frames(n, 8, 12, seed=i), {"label": i}) for i, n in enumerate(lengths)]
    return write_frames(tmp_path / "root", videos, lossless=True)


def test_columns_from_a_table_are_added_without_rewriting_the_frames(tmp_path):
    root = _plain_root(tmp_path)
    files, old_meta = _data_files(root), _meta(root)
    opened = VideoWindows(root, window_length=2)
    old_rows = [opened[i]["video"] for i in range(len(opened))]
    ids = np.repeat([0, 1, 2], [5, 3, 4]).astype(np.int32)
    frames = np.concatenate([np.arange(5), np.arange(3), np.arange(4)]).astype(np.int32)
    score = np.arange(12, dtype=np.float32) * 1.5
    embed = np.arange(24, dtype=np.float16).reshape(12, 2)
    shuffle = np.random.default_rng(0).permutation(12)  # any order: the keys place the rows
    table = pa.table(
        {
            "video_id": ids[shuffle],
            "frame_idx": frames[shuffle],
            "quality.score": score[shuffle],
            "embed": pa.FixedSizeListArray.from_arrays(pa.array(embed[shuffle].reshape(-1)), 2),
        }
    )
    assert add_frame_columns(root, table) == root

    after = _data_files(root)
    assert {name: after[name] for name in files} == files  # same files, same sizes
    assert len(after) == len(files) + len(lance.dataset(str(root)).get_fragments())
    got = _table(root)
    assert got.schema.field("quality").type == pa.struct([("score", pa.float32())])
    np.testing.assert_array_equal(_column(got, "quality", "score").astype(np.float32), score)
    np.testing.assert_array_equal(_column(got, "embed").astype(np.float16), embed)
    meta = _meta(root)
    assert meta["lance_version"] == old_meta["lance_version"] + 1
    assert meta["videos"] == old_meta["videos"]
    assert meta["lineage"]["columns_added"][0]["columns"].startswith("quality: struct")
    # The reader opened before still reads the version it opened; its schema has no new column.
    old = lance.dataset(str(root), version=old_meta["lance_version"])
    assert old.schema.names == ["video_id", "frame_idx", "bytes"]
    for i, pixels in enumerate(old_rows):
        np.testing.assert_array_equal(opened[i]["video"], pixels)


def test_columns_computed_from_each_videos_frames(tmp_path):
    root = _plain_root(tmp_path)
    calls = []

    def brightness(frames, video):
        calls.append((video.key, frames.shape))
        return {"brightness": frames.mean(axis=(1, 2, 3)).astype(np.float32),
                "who": [video.key] * len(frames)}  # fmt: skip

    add_frame_columns(root, brightness)
    assert calls == [("v0", (5, 8, 12, 3)), ("v1", (3, 8, 12, 3)), ("v2", (4, 8, 12, 3))]
    want = np.concatenate([np.stack(make_frames(n, 8, 12, seed=i)).mean(axis=(1, 2, 3))
                           for i, n in enumerate((5, 3, 4))]).astype(np.float32)  # fmt: skip
    got = _table(root)
    np.testing.assert_array_equal(_column(got, "brightness").astype(np.float32), want)
    assert got.column("who").to_pylist() == ["v0"] * 5 + ["v1"] * 3 + ["v2"] * 4
    # Appending now needs those columns.
    with pytest.raises(ValueError, match=r"differ from those of root .* \(brightness: float"):
        write_frames(
            root, [("v3", make_frames(2, 8, 12, seed=3), None)], mode="append", lossless=True
        )


def _keyed(lengths, **columns) -> pa.Table:
    ids = np.repeat(np.arange(len(lengths)), lengths).astype(np.int32)
    frames = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
    return pa.table({"video_id": ids, "frame_idx": frames, **columns})


@pytest.mark.parametrize(
    ("values", "error", "match"),
    [
        (_keyed((5, 3, 3), s=np.zeros(11)), ValueError, r"no row for frame 3 of video_id 2"),
        (
            pa.concat_tables([_keyed((5, 3, 4), s=np.zeros(12)), _keyed((1,), s=np.zeros(1))]),
            ValueError,
            r"more than one row for frame 0 of video_id 0",
        ),
        (_keyed((5, 3, 5), s=np.zeros(13)), ValueError, r"row 12 .* names frame 4 of video_id 2"),
        (_keyed((5, 3, 4)), ValueError, r"has no column besides video_id and frame_idx"),
        (pa.table({"frame_idx": [0], "s": [1.0]}), ValueError, r"integer columns 'video_id'"),
        (_keyed((5, 3, 4), bytes=np.zeros(12)), ValueError, r"field name 'bytes'"),
        (
            _keyed((5, 3, 4), s=pa.array([[1.0]] * 12, pa.list_(pa.float32()))),
            TypeError,
            r"per-frame field 's' of the table has type list<item: float>",
        ),
        (
            lambda frames, video: {"s": np.zeros(len(frames) + (video.key == "v1"))},
            ValueError,
            r"per-frame field 's' of video 'v1' has 4 values for 3 frames",
        ),
        (
            lambda frames, video: {
                "s": np.zeros(len(frames), np.int64 if video.key == "v2" else float)
            },
            ValueError,
            r"per-frame fields of video 'v2' \(s: int64\) differ from those of the first video "
            r"'v0' \(s: double\)",
        ),
        (lambda frames, video: None, TypeError, r"returned NoneType for video 'v0'"),
        ([1, 2], TypeError, r"values must be a pyarrow Table"),
    ],
)
def test_bad_new_columns_leave_the_root_as_it_was(tmp_path, values, error, match):
    root = _plain_root(tmp_path)
    before = _snapshot(root)
    with pytest.raises(error, match=match):
        add_frame_columns(root, values)
    assert _snapshot(root) == before


def test_a_column_the_root_has_is_refused(tmp_path):
    root = write_frames(tmp_path / "root", [_video("a", 4, 0)])
    before = _snapshot(root)
    with pytest.raises(ValueError, match=r"already has a column 'observation'"):
        add_frame_columns(root, _keyed((4,), **{"observation.other": np.zeros(4)}))
    with pytest.raises(FileNotFoundError, match="not a lance-video-frames root"):
        add_frame_columns(tmp_path / "nowhere", _keyed((4,), s=np.zeros(4)))
    assert _snapshot(root) == before


@pytest.mark.s3
def test_add_frame_columns_on_s3(s3):
    bucket, options = s3.new_bucket(), s3.options()
    uri = f"s3://{bucket}/root"
    videos = [(f"v{i}", make_frames(n, 8, 12, seed=i), None) for i, n in enumerate((4, 3))]
    write_frames(uri, videos, storage_options=options)
    data = {k for k in s3.keys(bucket, "root/data/")}
    opened = VideoWindows(uri, storage_options=options)
    score = np.arange(7, dtype=np.float32)
    assert add_frame_columns(uri, _keyed((4, 3), score=score), storage_options=options) == uri
    assert data < set(s3.keys(bucket, "root/data/"))
    table = lance.dataset(uri, storage_options=options).to_table()
    np.testing.assert_array_equal(table.column("score").to_numpy(), score)
    meta = json.loads(
        s3.client().get_object(Bucket=bucket, Key="root/_metadata.json")["Body"].read()
    )
    assert meta["lance_version"] == lance.dataset(uri, storage_options=options).version
    assert len(opened) == 7 and len(VideoWindows(uri, storage_options=options)) == 7

    def frame_number(frames, video):
        return {"n": np.arange(len(frames), dtype=np.int32)}

    add_frame_columns(uri, frame_number, storage_options=options)
    table = lance.dataset(uri, storage_options=options).to_table()
    assert table.column("n").to_pylist() == [0, 1, 2, 3, 0, 1, 2]


def test_ids_are_placed_alike_when_dense_or_sparse():
    from hf_lvf.write.columns import _video_of_id

    for known in (np.array([3, 1, 2, 0]), np.array([10**9, 5, 70_000, 3])):
        ids = known[[2, 0, 0, 3, 1]]
        np.testing.assert_array_equal(_video_of_id(known, ids), [2, 0, 0, 3, 1])
        assert known[_video_of_id(known, np.array([4]))][0] != 4  # an unknown id is told apart


def test_converting_into_a_root_with_other_fields_is_refused_before_any_work(tmp_path):
    from _videos import write_video

    from hf_lvf.convert import convert_videos

    write_video(tmp_path / "videos" / "clip.mp4", num_frames=4, seed=0)
    root = write_frames(tmp_path / "root", [_video("a", 4, 0)])
    before = _snapshot(root)
    match = r"per-frame fields of the converted videos \(no per-frame fields\) differ from those "
    with pytest.raises(ValueError, match=match + r"of root '.*root' \(action"):
        convert_videos(tmp_path / "videos", root, mode="append", workers=0, progress=False)
    assert _snapshot(root) == before


def test_columns_committed_by_a_writer_killed_before_publishing_are_set_aside(tmp_path):
    from hf_lvf.write.frame_table import commit_columns, write_columns

    root = _plain_root(tmp_path)
    base = _meta(root)["lance_version"]
    schema = pa.schema([("score", pa.float32())])
    batch = pa.record_batch([pa.array(np.ones(12, np.float32))], schema=schema)
    written = write_columns(root, [batch], schema, base=base)
    commit_columns(root, written, base=base)  # committed, _metadata.json not updated
    assert lance.dataset(str(root)).schema.names[-1] == "score"

    add_frame_columns(root, _keyed((5, 3, 4), score=np.arange(12, dtype=np.float32)))
    got = _table(root)
    assert got.schema.names == ["video_id", "frame_idx", "bytes", "score"]
    np.testing.assert_array_equal(got.column("score").to_numpy(), np.arange(12))
    assert lance.dataset(str(root)).version == _meta(root)["lance_version"]
    fragments = lance.dataset(str(root)).get_fragments()
    referenced = {f.path for fragment in fragments for f in fragment.metadata.files}
    assert set(_data_files(root)) == referenced  # the killed writer's file is gone


def test_columns_added_to_a_root_from_another_tool_across_its_files(tmp_path):
    from _roots import foreign_videos, write_foreign_root

    lengths = (10, 2, 17, 6)
    root = write_foreign_root(tmp_path / "root", foreign_videos(lengths))  # 7 rows a file
    files = _data_files(root)
    assert len(files) == 5
    assert "lance_version" not in _meta(root)
    value = np.arange(35, dtype=np.float64) ** 2
    add_frame_columns(root, _keyed(lengths, value=value))
    add_frame_columns(root, lambda frames, video: {"h": np.full(len(frames), frames.shape[1])})
    got = _table(root)
    np.testing.assert_array_equal(got.column("value").to_numpy(), value)
    assert got.column("h").to_pylist() == [foreign_videos(lengths)[0]["frames"][0].shape[0]] * 35
    after = _data_files(root)
    assert {name: after[name] for name in files} == files and len(after) == 15
    assert _meta(root)["lance_version"] == lance.dataset(str(root)).version


def test_a_frame_that_does_not_decode_is_named_and_leaves_the_root(tmp_path):
    from _roots import foreign_videos, write_foreign_root

    from hf_lvf import FrameDecodeError

    videos = foreign_videos((3, 4))
    root = write_foreign_root(tmp_path / "root", videos, blobs={(1, 2): b"not an image"})
    before = _snapshot(root)
    with pytest.raises(FrameDecodeError, match=r"frame 2 of videos\[1\]"):
        add_frame_columns(root, lambda frames, video: {"n": np.zeros(len(frames))})
    assert _snapshot(root) == before


def test_rows_out_of_frame_order_get_no_column(tmp_path):
    from _roots import foreign_videos, write_foreign_root

    written = write_foreign_root(tmp_path / "written", foreign_videos((3, 4)))
    table = lance.dataset(str(written)).to_table()
    root = tmp_path / "root"
    lance.write_dataset(table.take([0, 2, 1, 3, 4, 5, 6]), str(root))  # frames 1, 2 swapped
    (root / "_metadata.json").write_bytes((written / "_metadata.json").read_bytes())
    before = _snapshot(root)
    match = r"Lance row 1 of root .* holds video_id 0, frame_idx 2, but _metadata.json places"
    with pytest.raises(LayoutError, match=match):
        add_frame_columns(root, _keyed((3, 4), s=np.zeros(7)))
    with pytest.raises(LayoutError, match=match):
        add_frame_columns(root, lambda frames, video: {"s": np.zeros(len(frames))})
    assert _snapshot(root) == before


@pytest.mark.s3
def test_fields_and_spans_written_and_appended_on_s3(s3):
    bucket, options = s3.new_bucket(), s3.options()
    uri = f"s3://{bucket}/root"
    spans = [{"start_frame": 1, "end_frame": 3, "caption": "c"}]
    write_frames(uri, [_video("a", 4, 0, spans=spans)], storage_options=options)
    write_frames(uri, [_video("b", 3, 1)], mode="append", storage_options=options)
    table = lance.dataset(uri, storage_options=options).to_table()
    assert table.column("step").to_pylist() == [0, 1, 2, 3, 0, 1, 2]
    keys = s3.keys(bucket, "root/")
    other = {**_video("c", 3, 2), "frame_fields": {"action": np.zeros((3, 6), np.float32)}}
    with pytest.raises(ValueError, match=r"per-frame fields of video 'c' \(action"):
        write_frames(uri, [other], mode="append", storage_options=options)
    assert s3.keys(bucket, "root/") == keys
    body = s3.client().get_object(Bucket=bucket, Key="root/_metadata.json")["Body"].read()
    assert json.loads(body)["videos"][0]["spans"] == spans
