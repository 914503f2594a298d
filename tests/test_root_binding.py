"""Map-style references know their root: casts, concatenations and interleaves of datasets
over two roots read each row from its own root, and a root that changed under a saved
dataset is a named ``LayoutError``, never another root's pixels."""

from __future__ import annotations

import shutil
from pathlib import Path

import datasets
import numpy as np
import pytest
from _loading import PROJECT_ROOT
from _roots import make_frames

import hf_lvf
from hf_lvf import VideoWindows, WindowVideo
from hf_lvf.errors import LayoutError
from hf_lvf.write import write_frames

PARAMS = dict(window_length=4, hop_size=4)
LENGTHS = {"a": (12, 9), "b": (8, 13, 6)}  # a: 3 + 2 windows, b: 2 + 3 + 1


def _root(path: Path, name: str) -> Path:
    """Root ``name``: its own pixels (seeds differ from the other root's) and labels."""
    offset = 100 if name == "b" else 0
    videos = (
        (f"{name}_clip{i}", iter(make_frames(n, 16, 24, seed=offset + i)), {"label": offset + i})
        for i, n in enumerate(LENGTHS[name])
    )
    return Path(write_frames(path, videos))


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, Path]:
    parent = tmp_path_factory.mktemp("bound")
    return {name: _root(parent / name, name) for name in LENGTHS}


@pytest.fixture(autouse=True)
def _from_project_root(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)


def _load(root: Path) -> datasets.Dataset:
    return datasets.load_dataset("hf_lvf", data_dir=str(root), split="train", **PARAMS)


def _core(root: Path) -> list[np.ndarray]:
    view = VideoWindows(root, **PARAMS)
    return [view[i]["video"] for i in range(len(view))]


def _assert_rows(rows, want: list[tuple[str, np.ndarray]]) -> None:
    rows = list(rows)
    assert len(rows) == len(want)
    for row, (filename, video) in zip(rows, want, strict=True):
        assert row["filename"] == filename
        got = np.asarray(row["video"])
        assert got.dtype == np.uint8 and got.shape == (4, 16, 24, 3)
        np.testing.assert_array_equal(got, video)


def _expected(root: Path, name: str) -> list[tuple[str, np.ndarray]]:
    view = VideoWindows(root, **PARAMS)
    return [(f"{name}_clip{view[i]['video_idx']}", view[i]["video"]) for i in range(len(view))]


def test_the_two_roots_differ(roots):
    # Otherwise a test below could not tell A's pixels from B's.
    a, b = _core(roots["a"]), _core(roots["b"])
    assert (len(a), len(b)) == (3 + 2, 2 + 3 + 1)
    assert not np.array_equal(a[0], b[0])


def test_a_cast_to_the_other_roots_feature_reads_its_own_root(roots):
    ma, mb = _load(roots["a"]), _load(roots["b"])
    assert ma.features["video"] == mb.features["video"]  # the feature names no root
    cast = mb.cast_column("video", ma.features["video"])
    _assert_rows(cast, _expected(roots["b"], "b"))
    _assert_rows(mb.cast(ma.features), _expected(roots["b"], "b"))


def test_concatenate_and_interleave_read_each_rows_root(roots):
    ma, mb = _load(roots["a"]), _load(roots["b"])
    a, b = _expected(roots["a"], "a"), _expected(roots["b"], "b")
    both = datasets.concatenate_datasets([ma, mb])
    _assert_rows(both, a + b)
    _assert_rows(datasets.concatenate_datasets([ma, mb.cast(ma.features)]), a + b)
    # Interleaving alternates A, B, ... until A (5 windows, B has 6) runs out.
    alternating = [row for pair in zip(a, b, strict=False) for row in pair]
    assert len(alternating) == 10
    _assert_rows(datasets.interleave_datasets([ma, mb]), alternating)
    # A batch over both roots reads each row from its own root.
    batch = both.with_format("numpy")[[len(a), 0, len(a) + 5, 4]]["video"]
    for got, (_, video) in zip(batch, [b[0], a[0], b[5], a[4]], strict=True):
        np.testing.assert_array_equal(got, video)
    # ... and so do their streams.
    _assert_rows(both.to_iterable_dataset(), a + b)
    _assert_rows(both.to_iterable_dataset(num_shards=2), a + b)
    stream = datasets.interleave_datasets([ma.to_iterable_dataset(), mb.to_iterable_dataset()])
    _assert_rows(stream, alternating[:-1])  # a stream stops as soon as A has none left


def _stream(root: Path) -> datasets.IterableDataset:
    return datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, **PARAMS
    )


def test_streams_of_pixels_and_of_references_combine(roots):
    """A stream (pixels, Array4D) with a map-style dataset's stream (references, WindowVideo),
    and with a VideoWindows stream: every row its own root's pixels, uint8, in every format."""
    a, b = _expected(roots["a"], "a"), _expected(roots["b"], "b")
    sa, mb = _stream(roots["a"]), _load(roots["b"])
    assert sa.features["video"] != mb.features["video"]  # the two kinds really differ
    alternating = [row for pair in zip(a, b, strict=False) for row in pair]
    for first, second, want in (
        (sa, mb.to_iterable_dataset(), a + b),
        (mb.to_iterable_dataset(), sa, b + a),
        (sa, _load(roots["a"]).to_iterable_dataset(), a + a),
    ):
        _assert_rows(datasets.concatenate_datasets([first, second]), want)
    mixed = datasets.interleave_datasets([sa, mb.to_iterable_dataset()])
    _assert_rows(mixed, alternating[:-1])  # stops as soon as A has none left
    for fmt in ("numpy", "torch"):
        rows = list(mixed.with_format(fmt))
        assert {str(row["video"].dtype) for row in rows} in ({"uint8"}, {"torch.uint8"})
    # VideoWindows' own stream (a source of datasets' interleaving too).
    core_b = VideoWindows(roots["b"], **PARAMS).to_iterable_dataset()
    _assert_rows(datasets.interleave_datasets([sa, core_b]), alternating[:-1])
    _assert_rows(datasets.concatenate_datasets([core_b, mb.to_iterable_dataset()]), b + b)


def test_a_root_replaced_under_a_saved_dataset_is_a_named_error(roots, tmp_path):
    x = tmp_path / "x"
    shutil.copytree(roots["a"], x)
    mx = _load(x)
    _assert_rows(mx.select([0]), _expected(roots["a"], "a")[:1])  # read before: views kept
    mx.save_to_disk(str(tmp_path / "saved"))
    _assert_rows(datasets.load_from_disk(str(tmp_path / "saved")), _expected(roots["a"], "a"))

    shutil.rmtree(x)
    shutil.copytree(roots["b"], x)  # another root at the same path
    saved = datasets.load_from_disk(str(tmp_path / "saved"))
    for read in (lambda: saved[0], lambda: saved[0:2], lambda: next(iter(saved))):
        with pytest.raises(LayoutError, match=rf"root '{x}' changed since these references") as e:
            read()
        assert "_metadata.json does not hold what it held" in str(e.value)
        assert "load_dataset" in str(e.value) and "relocate_roots" in str(e.value)


def test_references_stay_valid_when_the_root_grows_by_appends(roots, tmp_path):
    x = tmp_path / "x"
    shutil.copytree(roots["a"], x)
    mx = _load(x)
    want = [np.asarray(row["video"]) for row in mx]
    frames = iter(make_frames(5, 16, 24, seed=7))
    write_frames(x, [("a_clip2", frames, {"label": 2})], mode="append")
    assert len(_core(x)) == len(want) + 1  # the root did grow
    again = _load(x)  # a fresh load sees the new video; mx keeps its windows, unchanged
    assert len(again) == len(want) + 1
    for got, expected in zip(mx, want, strict=True):
        np.testing.assert_array_equal(np.asarray(got["video"]), expected)


def test_a_root_rewritten_at_a_new_lance_version_is_refused(roots, tmp_path):
    import json

    import lance

    x = tmp_path / "x"
    shutil.copytree(roots["a"], x)
    mx = _load(x)
    # The same rows written again as version 2 (new data files, not an append), and the
    # _metadata.json pointed at it: the references' frames are not provably the same.
    lance.write_dataset(lance.dataset(str(x)).to_table(), str(x), mode="overwrite")
    meta = json.loads((x / "_metadata.json").read_text())
    (x / "_metadata.json").write_text(json.dumps({**meta, "lance_version": 2}))
    with pytest.raises(LayoutError, match=r"Lance table is at version 2 now, .* at version 1"):
        mx[0]


def test_a_moved_root_is_gone_until_relocated(roots, tmp_path):
    x = tmp_path / "x"
    shutil.copytree(roots["a"], x)
    _load(x).save_to_disk(str(tmp_path / "saved"))
    moved = tmp_path / "elsewhere" / "a"
    moved.parent.mkdir()
    shutil.move(x, moved)
    saved = datasets.load_from_disk(str(tmp_path / "saved"))
    with pytest.raises(LayoutError, match=rf"root '{x}', which these references read, is gone"):
        saved[0]
    back = hf_lvf.write.relocate_roots(saved, {x: moved})
    _assert_rows(back, _expected(roots["a"], "a"))
    refs = back.cast_column("video", WindowVideo(decode=False))
    assert {row["video"]["root"] for row in refs} == {str(moved)}
    back.save_to_disk(str(tmp_path / "again"))
    _assert_rows(datasets.load_from_disk(str(tmp_path / "again")), _expected(roots["a"], "a"))


def test_relocating_to_another_root_is_refused(roots, tmp_path):
    x = tmp_path / "x"
    shutil.copytree(roots["a"], x)
    saved = _load(x)
    with pytest.raises(ValueError, match=r"is not a copy of .*: video 0 is 'b_clip0' there"):
        hf_lvf.write.relocate_roots(saved, {x: roots["b"]})
    with pytest.raises(hf_lvf.RootNotFoundError):
        hf_lvf.write.relocate_roots(saved, {x: tmp_path / "nothing"})


@pytest.mark.parametrize("fmt", [None, "numpy", "torch"])
def test_batch_gives_batches_of_windows(roots, fmt):
    # .batch(4) over both roots (11 windows): batches of 4, 4 and 3, one crossing the roots.
    if fmt == "torch":
        pytest.importorskip("torch")
    both = datasets.concatenate_datasets([_load(roots["a"]), _load(roots["b"])])
    want = _expected(roots["a"], "a") + _expected(roots["b"], "b")
    batched = both.batch(4)
    batched = batched.with_format(fmt) if fmt else batched
    assert len(batched) == 3

    def pixels(value) -> np.ndarray:
        return np.stack([np.asarray(v) for v in value]) if fmt is None else np.asarray(value)

    for index, lo in enumerate(range(0, len(want), 4)):
        part = want[lo : lo + 4]
        one = batched[index : index + 1]  # a slice: a batch of batches
        for batch in (batched[index], list(batched)[index], {k: v[0] for k, v in one.items()}):
            video = pixels(batch["video"])
            assert video.dtype == np.uint8 and video.shape == (len(part), 4, 16, 24, 3)
            if fmt is not None:
                assert str(batch["video"].dtype).endswith("uint8")
            np.testing.assert_array_equal(video, np.stack([v for _, v in part]))
            assert list(batch["filename"]) == [f for f, _ in part]
            assert [int(i) for i in batch["sample_idx"]] == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5][
                lo : lo + 4
            ]
