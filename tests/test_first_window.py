"""The first window comes first: a pass, a stream and a DataLoader over a stream hand out the
first window once its own frames are decoded, before the frames of any other window are read
(the order of events, never a time)."""

from __future__ import annotations

import threading

import datasets
import numpy as np
import pytest
import torch
from _roots import assert_same_samples, hf_root

import hf_lvf
from hf_lvf.read.batches import FrameBatches, handed_out

PARAMS = {"window_length": 4, "hop_size": 2}
LENGTHS = (20, 9, 12)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return hf_root(tmp_path_factory.mktemp("first") / "clips", LENGTHS)


@pytest.fixture
def events(monkeypatch):
    """``("read", rows)`` for every Lance read that starts a decode, in order, whatever view
    (the builder's own too); the test adds what it is handed."""
    log: list[tuple[str, object]] = []
    original = FrameBatches._decode

    def decode(self, rows, *args):
        log.append(("read", sorted(int(r) for r in rows)))
        return original(self, rows, *args)

    monkeypatch.setattr(FrameBatches, "_decode", decode)
    return log


def _rows_of_window(view: hf_lvf.VideoWindows, index: int) -> list[int]:
    return sorted(set(view._rows(np.array([index]))[3].ravel().tolist()))


def test_a_pass_hands_out_its_first_window_before_reading_another(root, events):
    view = hf_lvf.VideoWindows(root, **PARAMS)
    want = view.take(range(len(view)))
    events.clear()
    samples = iter(view)
    first = next(samples)
    events.append(("handed out", first["sample_idx"]))
    rest = list(samples)
    assert events[:2] == [("read", _rows_of_window(view, 0)), ("handed out", 0)]
    assert [e[0] for e in events[2:]] == ["read"] * (len(events) - 2) and len(events) > 2
    assert_same_samples([first, *rest], want)
    # Every frame is still read once over the pass: the first strip is only window 0's.
    read = [r for kind, rows in events if kind == "read" for r in rows]
    needed = set(view._rows(np.arange(len(view)))[3].ravel().tolist())
    assert len(read) == len(set(read)) and set(read) == needed


def test_iter_samples_of_any_order_starts_with_its_first_window(root, events):
    view = hf_lvf.VideoWindows(root, **PARAMS)
    order = [7, 3, 4, 0]
    want = view.take(order)
    events.clear()
    samples = view.iter_samples(order)
    first = next(samples)
    assert events == [("read", _rows_of_window(view, 7))]
    assert_same_samples([first, *samples], want)


def test_a_stream_hands_out_its_first_window_before_reading_another(root, events):
    view = hf_lvf.VideoWindows(root, **PARAMS)
    stream = view.to_iterable_dataset()
    events.clear()
    first = next(iter(stream))
    assert first["sample_idx"] == 0
    assert events == [("read", _rows_of_window(view, 0))]


def test_a_streaming_load_dataset_hands_out_its_first_window_first(root, events):
    view = hf_lvf.VideoWindows(root, **PARAMS)
    stream = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, **PARAMS
    )
    events.clear()
    first = next(iter(stream))
    assert first["sample_idx"] == 0
    assert events == [("read", _rows_of_window(view, 0))]


def test_a_dataloader_over_a_stream_reads_its_first_batch_before_the_rest(root, events):
    view = hf_lvf.VideoWindows(root, **PARAMS)
    stream = view.to_iterable_dataset().with_format("torch")
    loader = torch.utils.data.DataLoader(stream, batch_size=2, num_workers=0)
    events.clear()
    batch = next(iter(loader))
    assert batch["sample_idx"].tolist() == [0, 1]
    # Window 0 alone, then the strip window 1 starts; nothing past that strip is read.
    assert [e[0] for e in events] == ["read", "read"]
    assert events[0] == ("read", _rows_of_window(view, 0))


def test_handed_out_waits_for_the_first_strip_only():
    log: list[str] = []

    def start(strip):
        log.append(f"start {strip}")
        return lambda: log.append(f"finish {strip}") or [strip]

    out = handed_out(iter([0, 1, 2]), start, before_read=lambda: log.append("read"))
    assert next(out) == 0
    assert log == ["read", "start 0", "finish 0"]
    assert list(out) == [1, 2]
    # After the first strip, each strip starts before the one before it is handed out.
    assert log[3:] == ["read", "start 1", "read", "start 2", "finish 1", "finish 2"]


def test_the_first_batch_of_a_read_ahead_is_handed_out_before_fetching_ahead():
    from hf_lvf.frames import ReadAheadBudget, read_ahead

    log: list[tuple[list[int], bool]] = []

    def fetch(rows):
        log.append((rows.tolist(), threading.current_thread() is threading.main_thread()))
        return [b"x"] * len(rows)

    batches = [np.array([0, 1]), np.array([2, 3]), np.array([4])]
    fetched = read_ahead(fetch, batches, ReadAheadBudget(depth=2))
    assert next(fetched).rows.tolist() == [0, 1]
    assert log == [([0, 1], True)]  # in this thread, and nothing fetched ahead yet
    assert [f.rows.tolist() for f in fetched] == [[2, 3], [4]]
    assert sorted(log[1:]) == [([2, 3], False), ([4], False)]  # then ahead, on threads
