"""``_metadata.json`` parsing and the checks against the Lance table: one error per mistake."""

from __future__ import annotations

import io
import json
import re
import tracemalloc

import lance
import numpy as np
import pyarrow as pa
import pytest
from _roots import FRAME_SIZE, foreign_videos, make_frames, read_meta, webp, write_foreign_root
from PIL import Image

import hf_lvf.read.windows as windows_module
from hf_lvf import FrameDecodeError, RootNotFoundError, VideoInfo, VideoWindows, read_layout
from hf_lvf.errors import LayoutError


@pytest.fixture(scope="module")
def foreign(tmp_path_factory):
    return write_foreign_root(
        tmp_path_factory.mktemp("layout") / "foreign",
        foreign_videos(),
        top_level_extra={"producer": {"name": "other-tool", "version": "9"}, "n_videos": 5},
    )


def rewrite(root, tmp_path, edit):
    """A copy of ``root``'s metadata, edited, beside the same Lance table (symlinked)."""
    copy = tmp_path / "edited"
    copy.mkdir()
    for item in root.iterdir():
        if item.name != "_metadata.json":
            (copy / item.name).symlink_to(item)
    meta = read_meta(root)
    edited = edit(meta)
    text = edited if isinstance(edited, str) else json.dumps(meta if edited is None else edited)
    (copy / "_metadata.json").write_text(text)
    return copy


# --- what a foreign root reads as -------------------------------------------------


def test_foreign_layout(foreign):
    layout = read_layout(str(foreign))
    assert layout.uri == str(foreign)
    assert layout.num_frames.tolist() == [10, 2, 17, 6, 13]
    assert layout.start_rows.tolist() == [0, 10, 12, 29, 35]
    assert layout.frame_sizes.tolist() == [list(FRAME_SIZE)] * 5
    assert layout.num_rows == 48
    video = layout.videos[2]
    assert video == VideoInfo(
        video_idx=2,
        id=2,  # no "id": the position stands in
        key=None,
        path="/footage/cam2/take_02.mkv",
        num_frames=17,
        height=32,
        width=48,
        start_row=12,
        metadata={"action": "act0", "score": 0.5, "label": 2},
        checksum=None,
        extra={"x_tool_note": {"shot": 2, "tags": ["a", "b"]}},
    )
    # Unknown fields are kept, at the top level and per video.
    assert layout.header["producer"] == {"name": "other-tool", "version": "9"}
    assert video.to_json()["x_tool_note"] == {"shot": 2, "tags": ["a", "b"]}
    assert len(lance.dataset(str(foreign)).get_fragments()) > 1


def test_optional_fields_read_when_present(foreign, tmp_path):
    def edit(meta):
        meta["videos"][0].update(id=40, key="k0", checksum="ab12")

    layout = read_layout(str(rewrite(foreign, tmp_path, edit)))
    video = layout.videos[0]
    assert (video.id, video.key, video.checksum) == (40, "k0", "ab12")


def test_read_layout_never_opens_lance(tmp_path):
    meta = {"layout": "lance-video-frames", "videos": [dict(T=3, H=2, W=2, start_row=0, path="a")]}
    (tmp_path / "_metadata.json").write_text(json.dumps(meta))
    assert read_layout(str(tmp_path)).num_rows == 3
    w = VideoWindows(tmp_path)  # planning needs no Lance table either
    assert len(w) == 3
    with pytest.raises(LayoutError, match="cannot open the Lance table of root"):
        w[0]


# --- bad metadata --------------------------------------------------------------------


def test_no_metadata_file(tmp_path):
    for uri in (tmp_path, tmp_path / "missing"):
        with pytest.raises(
            RootNotFoundError, match="is not a lance-video-frames root: no _metadata.json"
        ):
            read_layout(str(uri))
        with pytest.raises(FileNotFoundError):
            VideoWindows(uri)


def test_metadata_is_a_directory(tmp_path):
    (tmp_path / "_metadata.json").mkdir()
    with pytest.raises(LayoutError, match="is a directory, expected a JSON file"):
        read_layout(str(tmp_path))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{not json", "is not valid JSON"),
        (b"\xff\xfe\x00", "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object, got list"),
        ('{"videos": []}', "has layout None; hf_lvf reads only layout 'lance-video-frames'"),
        ('{"layout": "lance", "videos": []}', "has layout 'lance'; hf_lvf reads only layout"),
        ('{"layout": "lance-video-frames"}', "lists no videos"),
        ('{"layout": "lance-video-frames", "videos": []}', "lists no videos"),
        ('{"layout": "lance-video-frames", "videos": {"a": 1}}', "lists no videos"),
        (
            '{"layout": "lance-video-frames", "videos": [3]}',
            r"videos\[0\] must be an object, got 3",
        ),
    ],
)
def test_bad_metadata_text(tmp_path, text, match):
    path = tmp_path / "_metadata.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(LayoutError, match=match):
        read_layout(str(tmp_path))
    with pytest.raises(ValueError, match=match):
        VideoWindows(tmp_path)


def test_utf8_bom_metadata_reads_as_without_it(foreign, tmp_path):
    with_bom = rewrite(foreign, tmp_path, lambda meta: "\ufeff" + json.dumps(meta))
    assert (with_bom / "_metadata.json").read_bytes()[:3] == b"\xef\xbb\xbf"
    plain, bom = VideoWindows(foreign, window_length=2), VideoWindows(with_bom, window_length=2)
    assert len(bom) == len(plain) == 43
    for i in (0, 7, 42):
        a, b = plain[i], bom[i]
        assert np.array_equal(a["video"], b["video"])
        assert a["filename"] == b["filename"]
    assert read_layout(str(with_bom)).num_frames.tolist() == [10, 2, 17, 6, 13]


def test_utf16_bom_stays_an_error(tmp_path):
    (tmp_path / "_metadata.json").write_bytes('{"layout": 1}'.encode("utf-16"))
    with pytest.raises(LayoutError, match="is not valid JSON"):
        read_layout(str(tmp_path))


def test_malformed_json_names_file_offset_and_text(tmp_path):
    (tmp_path / "_metadata.json").write_text('{"layout": "lance-video-frames", "videos": [x]}')
    with pytest.raises(LayoutError) as caught:
        read_layout(str(tmp_path))
    message = str(caught.value)
    assert "_metadata.json is not valid JSON" in message
    assert message.endswith(
        "_metadata.json is not valid JSON: JSON is malformed: invalid character at byte 44,"
        ' around \'nce-video-frames", "videos": [x]}\''
    )
    (tmp_path / "_metadata.json").write_bytes(b"\xef\xbb\xbf{,}")
    bom_error = r"object keys must be strings at byte 4, around '\{,\}'$"
    with pytest.raises(LayoutError, match=bom_error):
        read_layout(str(tmp_path))


@pytest.mark.parametrize("field", ["T", "H", "W", "start_row", "path"])
def test_video_missing_required_field(foreign, tmp_path, field):
    def edit(meta):
        del meta["videos"][3][field]

    root = rewrite(foreign, tmp_path, edit)
    with pytest.raises(LayoutError, match=rf"videos\[3\] is missing required field\(s\) {field}$"):
        read_layout(str(root))


def test_missing_fields_named_with_key(foreign, tmp_path):
    def edit(meta):
        meta["videos"][1] = {"key": "clip_1", "path": "p"}

    with pytest.raises(
        LayoutError,
        match=r"videos\[1\] \(key 'clip_1'\) is missing required field\(s\) T, H, W, start_row",
    ):
        read_layout(str(rewrite(foreign, tmp_path, edit)))


@pytest.mark.parametrize(
    ("field", "value", "minimum"),
    [("T", -1, 0), ("H", 0, 1), ("W", "48", 1), ("start_row", 1.5, 0), ("T", True, 0)],
)
def test_video_bad_integer(foreign, tmp_path, field, value, minimum):
    def edit(meta):
        meta["videos"][0][field] = value

    match = (
        rf"videos\[0\] field {field} must be an integer >= {minimum}, got {re.escape(repr(value))}"
    )
    with pytest.raises(LayoutError, match=match):
        read_layout(str(rewrite(foreign, tmp_path, edit)))


@pytest.mark.parametrize(
    ("metadata", "match"),
    [
        ([1], r"field metadata must be an object, got \[1\]"),
        ({"tags": ["a"]}, r"metadata field 'tags' must be a scalar, got \['a'\]"),
        ({"video_idx": 3}, "metadata field 'video_idx' would shadow the sample key of that name"),
        ({"video": "x"}, "metadata field 'video' would shadow the sample key"),
    ],
)
def test_video_bad_metadata(foreign, tmp_path, metadata, match):
    def edit(meta):
        meta["videos"][4]["metadata"] = metadata

    with pytest.raises(LayoutError, match=match):
        read_layout(str(rewrite(foreign, tmp_path, edit)))


@pytest.mark.parametrize(
    ("start_row", "what"), [(9, "overlaps the previous video"), (11, "leaves a gap")]
)
def test_row_ranges_overlap_or_gap(foreign, tmp_path, start_row, what):
    def edit(meta):
        meta["videos"][1]["start_row"] = start_row

    match = (
        rf"videos\[1\] \('/footage/cam1/take_01.mkv'\) starts at row {start_row} but the previous "
        rf"videos end at row 10: its row range {what}"
    )
    with pytest.raises(LayoutError, match=match):
        read_layout(str(rewrite(foreign, tmp_path, edit)))


@pytest.mark.parametrize("value", ["3", 1.5, True, [1]])
def test_video_bad_id(foreign, tmp_path, value):
    def edit(meta):
        meta["videos"][2]["id"] = value

    match = rf"videos\[2\] field id must be an integer, got {re.escape(repr(value))}"
    with pytest.raises(LayoutError, match=match):
        read_layout(str(rewrite(foreign, tmp_path, edit)))


def test_null_id_means_no_id(foreign, tmp_path):
    def edit(meta):
        meta["videos"][2]["id"] = None

    assert read_layout(str(rewrite(foreign, tmp_path, edit))).videos[2].id == 2


def test_first_video_must_start_at_row_zero(foreign, tmp_path):
    def edit(meta):
        for video in meta["videos"]:
            video["start_row"] += 1

    with pytest.raises(LayoutError, match=r"videos\[0\] .* starts at row 1 .* leaves a gap"):
        read_layout(str(rewrite(foreign, tmp_path, edit)))


# --- checks against the Lance table, at the first read ------------------------------


def test_rows_past_the_lance_table(foreign, tmp_path):
    def edit(meta):
        meta["videos"][-1]["T"] += 2

    w = VideoWindows(rewrite(foreign, tmp_path, edit))  # metadata alone is consistent
    match = (
        r"videos\[4\] \('/footage/cam4/take_04.mkv'\) spans rows 35..49, past the Lance table's "
        "48 rows"
    )
    with pytest.raises(LayoutError, match=match):
        w[0]
    with pytest.raises(LayoutError, match=match):  # and again: nothing half-open is kept
        w.take([1, 2])


def test_rows_short_of_the_lance_table(foreign, tmp_path):
    def edit(meta):
        meta["videos"][-1]["T"] -= 1

    w = VideoWindows(rewrite(foreign, tmp_path, edit))
    with pytest.raises(
        LayoutError, match="the videos account for 47 rows but the Lance table at .* has 48"
    ):
        w[0]


def _write_table(root, columns):
    lance.write_dataset(pa.table(columns), str(root))
    meta = {
        "layout": "lance-video-frames",
        "videos": [dict(T=2, H=32, W=48, start_row=0, path="v")],
    }
    (root / "_metadata.json").write_text(json.dumps(meta))
    return root


def test_lance_schema_without_bytes(tmp_path):
    frame = webp(make_frames(1, *FRAME_SIZE, seed=0)[0])
    root = _write_table(
        tmp_path / "r",
        {
            "video_id": pa.array([0, 0], pa.int32()),
            "frame_idx": pa.array([0, 1], pa.int32()),
            "image": pa.array([frame, frame], pa.large_binary()),
        },
    )
    w = VideoWindows(root)
    with pytest.raises(
        LayoutError, match="has no 'bytes' column \\(columns: video_id, frame_idx, image\\)"
    ):
        w[0]


def test_lance_bytes_of_wrong_type(tmp_path):
    ids = {"video_id": pa.array([0, 0], pa.int32()), "frame_idx": pa.array([0, 1], pa.int32())}
    root = _write_table(tmp_path / "r", {**ids, "bytes": pa.array(["a", "b"])})
    with pytest.raises(
        LayoutError, match="the 'bytes' column of root .* has type string, expected large_binary"
    ):
        VideoWindows(root)[0]


# --- frames that do not decode ---------------------------------------------------------


def _bad_frame_root(tmp_path, blob):
    videos = foreign_videos((4, 5), with_metadata=False)
    return write_foreign_root(tmp_path / "bad", videos, blobs={(1, 3): blob})


def _frame_match(root, frame_idx=3):
    row = 4 + frame_idx
    return re.escape(
        f"frame {frame_idx} of video 1 ('/footage/cam1/take_01.mkv', Lance row {row}) in root "
        f"{str(root)!r}"
    )


def _riff(*chunks: bytes) -> bytes:
    body = b"WEBP" + b"".join(chunks)
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def _chunk(fourcc: bytes, payload: bytes) -> bytes:
    return fourcc + len(payload).to_bytes(4, "little") + payload + b"\0" * (len(payload) % 2)


def _vp8l_header(width: int, height: int) -> bytes:
    bits = (width - 1) | (height - 1) << 14
    return _riff(_chunk(b"VP8L", bytes([0x2F]) + bits.to_bytes(4, "little") + bytes(16)))


def _vp8x_canvas(width: int, height: int, *, flags: int = 0, then: bytes = b"") -> bytes:
    size = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return _riff(_chunk(b"VP8X", bytes([flags, 0, 0, 0]) + size), then)


def _animated(frame: np.ndarray) -> bytes:
    buf = io.BytesIO()
    first, second = Image.fromarray(frame), Image.fromarray(np.ascontiguousarray(frame[::-1]))
    first.save(buf, format="WEBP", save_all=True, append_images=[second], duration=40)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("make_blob", "problem"),
    [
        (lambda f: webp(f)[:60], "is not a valid WebP image: truncated"),
        (lambda f: webp(f)[:-1], "is not a valid WebP image: truncated"),
        (lambda f: b"RIFF" + bytes(40), "is not a valid WebP image: no RIFF/WEBP signature"),
        (lambda f: b"", r"is in no known image format \(first bytes ''\); a row must be one of"),
        (lambda f: None, r"has no bytes \(null\)"),
        (
            lambda f: _riff(_chunk(b"JUNK", bytes(12))),
            "is not a valid WebP image: unknown first chunk",
        ),
        # A correct header in front of a corrupt bitstream: libwebp's own error.
        (
            lambda f: webp(f)[:30] + b"\xff" * (len(webp(f)) - 30),
            "is not a valid WebP image: WebPDecode",
        ),
        (lambda f: webp(f[:16]), r"decodes to 48x16 \(WxH\) but its video declares 48x32"),
        (
            lambda f: webp(np.ascontiguousarray(f.transpose(1, 0, 2))),
            "decodes to 32x48 \\(WxH\\) but its video declares 48x32",
        ),
        (_animated, "is an animated WebP image; a row must hold one still frame"),
        # The animation flag alone is enough, whatever follows.
        (lambda f: _vp8x_canvas(48, 32, flags=0x02), "is an animated WebP image"),
        (lambda f: _vp8x_canvas(48, 32, then=_chunk(b"ANIM", bytes(6))), "is an animated WebP"),
    ],
)
def test_bad_frame(tmp_path, make_blob, problem):
    root = _bad_frame_root(tmp_path, make_blob(make_frames(1, *FRAME_SIZE, seed=1)[0]))
    w = VideoWindows(root, window_length=2)
    assert w[0]["video"].shape == (2, 32, 48, 3)  # other frames are fine
    with pytest.raises(FrameDecodeError, match=_frame_match(root) + " " + problem):
        w.take([0, 5])  # window 5 = frames 2, 3 of video 1
    with pytest.raises(ValueError, match=problem):
        w.read_video([-1])
    with pytest.raises(FrameDecodeError, match=problem):
        list(w.iter_samples())


def test_a_pass_hands_out_every_strip_before_a_bad_frame(tmp_path, monkeypatch):
    # Strips of 10 frames, each decoding while the one before is handed out: the error
    # comes when the pass reaches the strip with the bad frame, after every window before.
    monkeypatch.setattr(windows_module, "_STRIP_BYTES", 3 * FRAME_SIZE[0] * FRAME_SIZE[1])
    videos = foreign_videos((12, 30), with_metadata=False)
    root = write_foreign_root(tmp_path / "bad", videos, blobs={(1, 20): b"RIFF"})
    w = VideoWindows(root, window_length=2)
    first_bad = 11 + 19  # video 0 has 11 windows; window 19 of video 1 holds frames 19, 20
    got = []
    with pytest.raises(FrameDecodeError, match=re.escape("frame 20 of video 1")):
        for sample in w.iter_samples():
            got.append(np.array(sample["video"]))
    assert first_bad - 10 <= len(got) <= first_bad
    np.testing.assert_array_equal(np.stack(got), w.read_video(np.arange(len(got))))
    # The view reads on: what came before, and a new pass, up to the same frame.
    assert [s["sample_idx"] for s in w.iter_samples(range(3))] == [0, 1, 2]
    with pytest.raises(FrameDecodeError, match=re.escape("frame 20 of video 1")):
        list(w.iter_samples())


def test_a_strip_after_a_failed_one_decodes_the_frames_they_share(tmp_path):
    # The next strip is queued before the one being decoded has ended, and copies the frames
    # it shares with it; where that strip failed, they are decoded again, not copied.
    videos = foreign_videos((12, 30), with_metadata=False)
    root = write_foreign_root(tmp_path / "bad", videos, blobs={(1, 20): b"RIFF"})
    # One decode thread: a strip's frames past its bad one are skipped, so never decoded.
    w = VideoWindows(root, window_length=2, decode_threads=1)
    frames, start = w._frames, 12  # video 1's first Lance row
    failing = frames.start_shared(start + np.array([[19, 20], [20, 21], [21, 22]]))
    after = frames.start_shared(start + np.array([[21, 22], [22, 23]]))  # shares 21, 22
    with pytest.raises(FrameDecodeError, match=re.escape("frame 20 of video 1")):
        failing()
    got = np.stack([np.array(window) for window in after()])
    fresh = VideoWindows(root, window_length=2)  # a view of its own: not w's frame cache
    np.testing.assert_array_equal(got, fresh.read_video([11 + 21, 11 + 22]))


@pytest.mark.parametrize(
    ("blob", "declared"),
    [
        (_vp8l_header(16383, 16383), "16383x16383"),
        (_vp8x_canvas(2**24, 2**24), "16777216x16777216"),
    ],
)
def test_huge_declared_canvas_is_refused_before_decoding(tmp_path, blob, declared):
    # What Pillow's decompression-bomb guard used to catch: the header is read, the size
    # compared with the video's, and nothing is allocated for the declared canvas.
    root = _bad_frame_root(tmp_path, blob)
    w = VideoWindows(root, decode_threads=1)
    tracemalloc.start()
    try:
        with pytest.raises(
            FrameDecodeError,
            match=_frame_match(root) + re.escape(f" decodes to {declared} (WxH) but its video "),
        ):
            w[7]  # video 1, frames 3
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


def test_damaged_frames_never_crash(tmp_path):
    """Every truncation and many byte flips of a frame: decoded or FrameDecodeError."""
    frame = make_frames(1, *FRAME_SIZE, seed=1)[0]
    good = webp(frame)
    rng = np.random.default_rng(0)
    damaged = [good[:n] for n in range(len(good))]
    for _ in range(300):
        blob = bytearray(good)
        for position in rng.integers(0, len(good), size=rng.integers(1, 4)):
            blob[position] = rng.integers(0, 256)
        damaged.append(bytes(blob))
    videos = [{"frames": [frame] * len(damaged), "path": "damaged.mkv"}]
    blobs = {(0, f): blob for f, blob in enumerate(damaged)}
    root = write_foreign_root(tmp_path / "r", videos, blobs=blobs, max_rows_per_file=512)
    w = VideoWindows(root)
    outcomes = {"decoded": 0, "refused": 0}
    for i in range(len(w)):
        try:
            assert w[i]["video"].shape == (1, *FRAME_SIZE, 3)
            outcomes["decoded"] += 1
        except FrameDecodeError as err:
            assert f"frame {i} of video 0 ('damaged.mkv'" in str(err)
            outcomes["refused"] += 1
    assert outcomes["refused"] >= len(good)  # every truncation
    assert outcomes["decoded"] > 0  # a flip in the pixel data decodes, to other pixels
