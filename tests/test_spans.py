"""Captioned spans (FORMAT.md: ``videos[v].spans``): the columnar span table, its checks, and
windows planned inside spans (``windows_in="spans"``) in every front end.

Spans are written into ``_metadata.json`` by the tests themselves; expected numbering is
the plan formula applied per span by a brute-force loop here, or a literal list."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path

import datasets
import numpy as np
import pytest
from _loading import assert_rows_equal, core_samples
from _roots import assert_same_values, set_spans

from hf_lvf import VideoWindows
from hf_lvf.errors import LayoutError
from hf_lvf.layout import read_layout
from hf_lvf.layout import spans as spans_module
from hf_lvf.layout.spans import layout_spans
from hf_lvf.plan import WindowParams, plan_spans
from hf_lvf.write.synthetic import write_synthetic_root

KEYS = ["video", "video_idx", "filename", "start_frame", "frame_indices", "sample_idx"]
SPANS = {
    0: [
        {"start_frame": 0, "end_frame": 6, "caption": "a dog runs"},
        {"start_frame": 4, "end_frame": 10, "caption": "a dog sits", "score": 1},
    ],
    2: [{"start_frame": 2, "end_frame": 12, "caption": "a bird", "score": 0.5, "event": True}],
}


@pytest.fixture
def root(tmp_path) -> Path:
    base = write_synthetic_root(
        tmp_path / "root", num_videos=3, num_frames=[10, 6, 12], frame_size=(16, 16)
    )
    return set_spans(base, SPANS)


def brute_force_spans(spans, window_length, frame_skip, hop_size, min_video_frames):
    """(video, span, start frame) of every window, the FORMAT.md formula applied per span."""
    stride = frame_skip + 1
    span_frames = (window_length - 1) * stride + 1
    needed = max(span_frames, min_video_frames or span_frames)
    windows = []
    for s, (video, start, end) in enumerate(spans):
        if end - start >= needed:
            for offset in range(0, end - start - span_frames + 1, hop_size):
                windows.append((video, s, start + offset))
    return windows


# --- the span table ---------------------------------------------------------------------------


def test_span_table_is_columnar_with_every_field(root):
    spans = layout_spans(read_layout(str(root)))
    assert spans.table.to_pydict() == {
        "video_idx": [0, 0, 2],
        "start_frame": [0, 4, 2],
        "end_frame": [6, 10, 12],
        "caption": ["a dog runs", "a dog sits", "a bird"],
        "score": [None, 1.0, 0.5],
        "event": [None, None, True],
    }
    assert spans.offsets.tolist() == [0, 2, 2, 3]
    # Typed as metadata fields are; a bool some span lacks is int8 (placeholder -1).
    assert spans.fields == {"caption": "string", "score": "float64", "event": "int8"}
    assert spans.rows([1]) == [
        {"start_frame": 4, "end_frame": 10, "caption": "a dog sits", "score": 1.0}
    ]


def test_a_field_of_mixed_types_is_kept_as_text(root):
    tagged = {"start_frame": 0, "end_frame": 2}
    set_spans(root, {1: [{**tagged, "tag": 3}], 2: [{**tagged, "tag": "x"}]})
    spans = layout_spans(read_layout(str(root)))
    assert spans.table.column("tag").to_pylist() == ["3", "x"]
    assert spans.fields == {"tag": "string"}


def test_spans_are_cached_and_mapped_on_reopen(root, monkeypatch):
    layout = read_layout(str(root))
    first = layout_spans(layout)
    spans_module._MEMO.clear()
    monkeypatch.setattr(spans_module, "_parse", lambda layout: pytest.fail("parsed again"))
    again = layout_spans(read_layout(str(root)))
    assert again.table.equals(first.table)
    assert again is not first


def test_a_root_without_spans_has_an_empty_table(tmp_path):
    root = write_synthetic_root(tmp_path / "r", num_videos=2, num_frames=8, frame_size=(16, 16))
    spans = layout_spans(read_layout(str(root)))
    assert len(spans) == 0 and spans.offsets.tolist() == [0, 0, 0] and spans.fields == {}


def test_empty_span_lists_and_the_word_spans_elsewhere(tmp_path):
    root = write_synthetic_root(tmp_path / "r", num_videos=2, num_frames=8, frame_size=(16, 16))
    path = root / "_metadata.json"
    meta = json.loads(path.read_text())
    meta["videos"][0]["spans"] = []
    meta["videos"][1]["metadata"]["note"] = 'no "spans" here'
    path.write_text(json.dumps(meta))
    assert len(layout_spans(read_layout(str(root)))) == 0
    del meta["videos"][0]["spans"]
    path.write_text(json.dumps(meta))
    assert len(layout_spans(read_layout(str(root)))) == 0


BAD_SPANS = [
    (
        {"start_frame": 4, "end_frame": 4},
        r"spans\[0\] \{'start_frame': 4, 'end_frame': 4\}: end_frame must be > start_frame",
    ),
    (
        {"start_frame": 2, "end_frame": 7, "caption": "x"},
        r"spans\[0\] \{'start_frame': 2, 'end_frame': 7, 'caption': 'x'\}: it must lie inside "
        r"the video's 6 frames \(0 <= start_frame < end_frame <= T=6\)",
    ),
    ({"start_frame": -1, "end_frame": 3}, r"spans\[0\] .*: it must lie inside the video's 6"),
    (
        {"start_frame": 1.5, "end_frame": 3},
        r"spans\[0\] .*: start_frame must be an integer frame number, got 1.5",
    ),
    ({"end_frame": 3}, r"spans\[0\] \{'end_frame': 3\}: start_frame must be an integer frame"),
    ([0, 3], r"spans\[0\] must be an object, got \[0, 3\]"),
    (
        {"start_frame": 0, "end_frame": 3, "box": [1, 2]},
        r"spans\[0\] .*field 'box' must be a scalar, got \[1, 2\]",
    ),
]


@pytest.mark.parametrize(("span", "match"), BAD_SPANS)
def test_bad_spans_are_named_errors(root, span, match):
    set_spans(root, {0: SPANS[0], 1: [span]})
    where = f"{root / '_metadata.json'}: videos\\[1\\] \\('clip_001'\\) "
    with pytest.raises(LayoutError, match=where + match):
        VideoWindows(root, window_length=2, windows_in="spans")
    # The error is the same whichever path parsed the spans, and for describe too.
    with pytest.raises(LayoutError, match=match):
        layout_spans(read_layout(str(root)))


def test_spans_that_are_not_a_list(root):
    set_spans(root, {1: "0-3"})
    with pytest.raises(LayoutError, match=r"videos\[1\] \('clip_001'\) field spans must be a list"):
        VideoWindows(root, window_length=2, windows_in="spans")


# --- windows inside spans -----------------------------------------------------------------------


def test_windows_inside_spans_literal(root):
    w = VideoWindows(root, window_length=3, hop_size=2, windows_in="spans")
    got = [(s["video_idx"], s["start_frame"], s["span_idx"], s["caption"]) for s in w]
    assert got == [
        (0, 0, 0, "a dog runs"),
        (0, 2, 0, "a dog runs"),
        (0, 4, 1, "a dog sits"),
        (0, 6, 1, "a dog sits"),
        (2, 2, 2, "a bird"),
        (2, 4, 2, "a bird"),
        (2, 6, 2, "a bird"),
        (2, 8, 2, "a bird"),
    ]
    sample = w[2]
    assert list(sample) == [*KEYS, "span_idx", "caption", "score", "event", "label"]
    assert sample["frame_indices"].tolist() == [4, 5, 6] and sample["sample_idx"] == 2
    assert (sample["score"], sample["event"], sample["label"]) == (1.0, -1, 0)
    assert np.isnan(w[0]["score"])  # a span without the field: the float placeholder
    assert w.plan.windows_per_video.tolist() == [4, 0, 4]
    assert_same_values(
        w.segment_info(4),
        {
            "video_idx": 2,
            "filename": "clip_002",
            "start_frame": 2,
            "frame_indices": [2, 3, 4],
            "span_idx": 2,
            "caption": "a bird",
            "score": 0.5,
            "event": 1,
        },
    )
    # frame_skip and min_video_frames apply to each span as to a video.
    w = VideoWindows(root, window_length=2, frame_skip=2, hop_size=3, windows_in="spans")
    assert [(s["span_idx"], s["frame_indices"].tolist()) for s in w] == [
        (0, [0, 3]),
        (1, [4, 7]),
        (2, [2, 5]),
        (2, [5, 8]),
        (2, [8, 11]),
    ]
    w = VideoWindows(root, window_length=2, min_video_frames=7, windows_in="spans")
    assert {s["span_idx"] for s in w} == {2}


def test_windows_inside_spans_equal_the_formula_per_span():
    rng = random.Random(5)
    for _ in range(300):
        num_videos = rng.randrange(1, 5)
        spans = []
        for v in range(num_videos):
            for _ in range(rng.randrange(0, 4)):
                start = rng.randrange(0, 30)
                spans.append((v, start, start + rng.randrange(1, 25)))
        kwargs = dict(
            window_length=rng.randrange(1, 6),
            frame_skip=rng.randrange(0, 3),
            hop_size=rng.randrange(1, 5),
            min_video_frames=rng.choice([None, 0, rng.randrange(0, 20)]),
        )
        want = brute_force_spans(spans, **kwargs)
        video, start, end = (np.array([s[i] for s in spans], np.int64) for i in range(3))
        plan = plan_spans(video, start, end, num_videos, WindowParams(**kwargs, windows_in="spans"))
        assert len(plan) == len(want)
        idx = np.arange(len(want))
        video_idx, start_frame = plan.locate(idx)
        got = zip(video_idx.tolist(), plan.span_of(idx).tolist(), start_frame.tolist(), strict=True)
        assert list(got) == want
        counts = np.bincount([v for v, _, _ in want], minlength=num_videos).tolist()
        assert plan.windows_per_video.tolist() == counts


def test_pixels_and_captions_are_their_spans(root):
    inside = VideoWindows(root, window_length=3, hop_size=2, windows_in="spans")
    whole = VideoWindows(root, window_length=3, hop_size=1)
    by_start = {(s["video_idx"], s["start_frame"]): s["video"] for s in whole}
    captions = [s["caption"] for v in sorted(SPANS) for s in SPANS[v]]
    samples = inside.take(range(len(inside)))
    assert [s["caption"] for s in samples] == [captions[s["span_idx"]] for s in samples]
    for got in (samples, list(inside.iter_samples(batch_size=3))):
        for s in got:
            np.testing.assert_array_equal(s["video"], by_start[(s["video_idx"], s["start_frame"])])
    restored = pickle.loads(pickle.dumps(inside))
    assert [s["caption"] for s in restored] == [s["caption"] for s in samples]


def test_without_the_option_windows_are_the_reference_readers(root, tmp_path):
    plain = write_synthetic_root(
        tmp_path / "plain", num_videos=3, num_frames=[10, 6, 12], frame_size=(16, 16)
    )
    with_spans = VideoWindows(root, window_length=3, hop_size=2)
    without = VideoWindows(plain, window_length=3, hop_size=2)
    # The reference reader's numbering: video by video, starts 0, hop, ... up to T - span.
    want = [(v, s) for v, t in enumerate([10, 6, 12]) for s in range(0, t - 3 + 1, 2)]
    got = list(with_spans)
    assert [(s["video_idx"], s["start_frame"]) for s in got] == want
    for a, b in zip(got, without, strict=True):
        assert list(a) == [*KEYS, "label"]  # nothing of the spans: the reference reader's keys
        np.testing.assert_array_equal(a.pop("video"), b.pop("video"))
        assert_same_values(a, b)


def test_span_mode_refusals(root, tmp_path):
    with pytest.raises(ValueError, match=r"windows_in must be 'videos' or 'spans', got 'span'"):
        VideoWindows(root, windows_in="span")
    with pytest.raises(ValueError, match=r"windows_in='spans' .* takes no short_videos='pad'"):
        VideoWindows(root, windows_in="spans", short_videos="pad")
    with pytest.raises(ValueError, match=r"windows_in='spans' .* takes no fps=8"):
        VideoWindows(root, windows_in="spans", fps=8)
    plain = write_synthetic_root(tmp_path / "p", num_videos=1, num_frames=4, frame_size=(16, 16))
    with pytest.raises(LayoutError, match=r"_metadata.json holds no spans: windows_in='spans'"):
        VideoWindows(plain, windows_in="spans")
    set_spans(root, {0: [{"start_frame": 0, "end_frame": 2, "label": "x"}]})
    with pytest.raises(LayoutError, match=r"span field 'label' has the name of a metadata field"):
        VideoWindows(root, windows_in="spans")
    set_spans(root, {0: [{"start_frame": 0, "end_frame": 2, "span_idx": 1}]})
    with pytest.raises(LayoutError, match=r"span field 'span_idx' has the name of the sample key"):
        VideoWindows(root, windows_in="spans")


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])
def test_load_dataset_inside_spans(root, streaming):
    # Every span has a score (NaN, the placeholder of a missing one, equals nothing).
    set_spans(root, {v: [{"score": 0.0, **s} for s in spans] for v, spans in SPANS.items()})
    params = {"window_length": 3, "hop_size": 2, "windows_in": "spans"}
    ds = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=streaming, **params
    )
    features = ds.features
    assert [k for k in features][6:] == ["span_idx", "score", "caption", "event", "label"]
    assert features["caption"] == datasets.Value("string")
    assert features["score"] == datasets.Value("float64")
    assert features["span_idx"] == datasets.Value("int64")
    assert_rows_equal(ds, core_samples(root, **params))
    if not streaming:
        assert ds["caption"] == ["a dog runs"] * 2 + ["a dog sits"] * 2 + ["a bird"] * 4
        torch_rows = ds.with_format("numpy")[:3]
        assert torch_rows["span_idx"].tolist() == [0, 0, 1]
