"""A local root is identified by what its ``_metadata.json`` holds, never by where the bytes
sit: a copy (copytree with copy2, tar, ``cp -a``) and another NFS client's ``st_dev`` read the
same pixels; a rewrite at the same size with the modification time put back is refused.

"Another process" is stood in for by forgetting what this one remembers (the parsed tables
it holds and the digests it knows), so that every open goes through the cache folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from unittest import mock

import datasets
import numpy as np
import pytest
from _loading import PROJECT_ROOT
from _roots import make_frames

import hf_lvf
from hf_lvf import VideoWindows, WindowVideo
from hf_lvf.errors import LayoutError
from hf_lvf.layout import table as table_cache
from hf_lvf.location import files, forget_digests
from hf_lvf.write import write_frames

PARAMS = dict(window_length=4, hop_size=4)
LENGTHS = (12, 9, 8)  # 3 + 2 + 2 windows
OLD = 1_600_000_000  # a modification time long past, so a stat state is remembered


@pytest.fixture(autouse=True)
def _from_project_root(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)


def _root(path: Path) -> Path:
    videos = (
        (f"clip{i}", iter(make_frames(n, 16, 24, seed=i)), {"label": 10 + i})
        for i, n in enumerate(LENGTHS)
    )
    root = Path(write_frames(path, videos))
    for p in root.rglob("*"):  # old times everywhere, as a root written some time ago
        os.utime(p, ns=(OLD * 10**9, OLD * 10**9))
    return root


def _new_process() -> None:
    table_cache.wait_for_writes()
    table_cache._OPEN.clear()
    table_cache._ENTRIES.clear()
    forget_digests()


def _load(root: Path, **kwargs) -> datasets.Dataset:
    return datasets.load_dataset("hf_lvf", data_dir=str(root), split="train", **PARAMS, **kwargs)


def _pixels(ds) -> list[np.ndarray]:
    return [np.asarray(row["video"]) for row in ds]


def _want(root: Path) -> list[np.ndarray]:
    view = VideoWindows(root, **PARAMS)
    return [view[i]["video"] for i in range(len(view))]


def _same(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want) == 7
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def _other_device(offset: int = 7):
    """``os.stat`` as a second NFS client sees the same files: another ``st_dev``."""
    real = os.stat

    def stat(path, *args, **kwargs):
        st = real(path, *args, **kwargs)
        fields = list(st[:10])
        fields[2] += offset  # st_dev
        names = ("atime", "mtime", "ctime", "atime_ns", "mtime_ns", "ctime_ns")
        extra = {f"st_{n}": getattr(st, f"st_{n}") for n in names}
        extra.update(st_blksize=st.st_blksize, st_blocks=st.st_blocks, st_rdev=st.st_rdev)
        return os.stat_result(fields, extra)

    return mock.patch("os.stat", stat)


def _tar_round_trip(paths: list[Path], tmp: Path) -> None:
    """Each of ``paths`` tarred, deleted and extracted at the same path (new inodes and ctimes,
    the same bytes and modification times)."""
    archive = tmp / "backup.tar"
    with tarfile.open(archive, "w") as tar:
        for p in paths:
            tar.add(p, arcname=p.relative_to(tmp))
    for p in paths:
        _away(p)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="fully_trusted")


def _away(path: Path) -> None:
    """Out of the way but kept (until the test ends), so that no copy reuses its inodes."""
    path.rename(path.parent / f"{path.name}.old")


def _copytree_round_trip(paths: list[Path], tmp: Path) -> None:
    for p in paths:
        shutil.copytree(p, tmp / "copy" / p.name, copy_function=shutil.copy2)
        _away(p)
        shutil.copytree(tmp / "copy" / p.name, p, copy_function=shutil.copy2)


def _cp_a_round_trip(paths: list[Path], tmp: Path) -> None:
    if shutil.which("cp") is None:
        pytest.skip("no cp")
    for p in paths:
        subprocess.run(["cp", "-a", str(p), str(tmp / f"{p.name}.bak")], check=True)
        _away(p)
        subprocess.run(["cp", "-a", str(tmp / f"{p.name}.bak"), str(p)], check=True)


def _rsync_a_round_trip(paths: list[Path], tmp: Path) -> None:
    if shutil.which("rsync") is None:
        pytest.skip("no rsync here")
    for p in paths:
        subprocess.run(["rsync", "-a", f"{p}/", f"{tmp / (p.name + '.bak')}/"], check=True)
        _away(p)
        subprocess.run(["rsync", "-a", f"{tmp / (p.name + '.bak')}/", f"{p}/"], check=True)


@pytest.mark.parametrize(
    "copy", [_tar_round_trip, _copytree_round_trip, _cp_a_round_trip, _rsync_a_round_trip]
)
def test_a_root_and_its_saved_dataset_copied_back_read_the_same_pixels(tmp_path, copy):
    root = _root(tmp_path / "root")
    want = _want(root)
    _load(root).save_to_disk(str(tmp_path / "saved"))
    inode = (root / "_metadata.json").stat().st_ino
    copy([root, tmp_path / "saved"], tmp_path)
    assert (root / "_metadata.json").stat().st_ino != inode  # another file, the same bytes
    _new_process()
    _same(_pixels(datasets.load_from_disk(str(tmp_path / "saved"))), want)


def test_another_st_dev_reads_a_saved_dataset_and_reuses_the_cache(tmp_path):
    root = _root(tmp_path / "root")
    want = _want(root)
    cache = tmp_path / "datasets_cache"
    _load(root, cache_dir=str(cache)).save_to_disk(str(tmp_path / "saved"))
    configs = sorted(p.name for p in (cache / "hf_lvf").iterdir())
    assert len(configs) == 1
    _new_process()
    device = os.stat(root / "_metadata.json").st_dev
    with _other_device():
        assert os.stat(root / "_metadata.json").st_dev != device
        _same(_pixels(datasets.load_from_disk(str(tmp_path / "saved"))), want)
        _new_process()
        again = _load(root, cache_dir=str(cache))
        _same(_pixels(again), want)
    assert sorted(p.name for p in (cache / "hf_lvf").iterdir()) == configs  # no second config


def _rewrite_one_label(root: Path) -> None:
    """``_metadata.json`` with one label changed, the same size, the old times put back."""
    path = root / "_metadata.json"
    before = path.stat()
    text = path.read_text()
    meta = json.loads(text)
    assert meta["videos"][1]["metadata"]["label"] == 11
    changed = text.replace('"label": 11', '"label": 12').replace('"label":11', '"label":12')
    assert changed != text and len(changed) == len(text)
    with open(path, "w") as f:  # in place: the same inode
        f.write(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


@pytest.mark.parametrize("remembered", [False, True])
def test_a_rewrite_at_the_same_size_and_mtime_is_refused(tmp_path, monkeypatch, remembered):
    if remembered:  # the digest of the old state is remembered (its times are old enough)
        monkeypatch.setattr(files, "RACY_NS", 0)
    root = _root(tmp_path / "root")
    ds = _load(root)
    ds.save_to_disk(str(tmp_path / "saved"))
    state = files.remembered_digest if remembered else None
    if state is not None:
        assert state(str(root / "_metadata.json")) is not None
    _rewrite_one_label(root)
    for fresh in (False, True):
        if fresh:
            _new_process()
        saved = datasets.load_from_disk(str(tmp_path / "saved"))
        with pytest.raises(LayoutError, match=r"changed since these references were made") as e:
            saved[0]
        assert "load_dataset" in str(e.value) and "relocate_roots" in str(e.value)
    assert VideoWindows(root, **PARAMS)[3]["label"] == 12  # a fresh open sees the new file


def test_a_digest_is_hashed_again_only_for_a_new_stat_state(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "RACY_NS", 0)  # the root's times count as old enough
    root = _root(tmp_path / "root")
    VideoWindows(root, **PARAMS)
    path = str(root / "_metadata.json")
    digest = files.remembered_digest(path)
    assert digest is not None and digest.startswith("sha256:")
    _new_process()

    def no_read(path):
        raise AssertionError(f"{path} read again")

    # Reopening from the cache reads neither the file nor its bytes: the digest is on disk.
    with monkeypatch.context() as patch:
        patch.setattr(files, "read_with_digest", no_read)
        assert len(VideoWindows(root, **PARAMS)) == 7
    with _other_device():  # another machine: hashed once, the same digest
        assert files.remembered_digest(path) is None
        assert files.root_file_identity(str(root)) == digest


def test_a_file_written_just_now_is_not_remembered(tmp_path):
    # Its times are within RACY_NS: a rewrite in the same clock tick would keep them.
    root = _root(tmp_path / "root")
    (root / "_metadata.json").write_bytes((root / "_metadata.json").read_bytes())
    path = str(root / "_metadata.json")
    data, digest = files.read_with_digest(path)
    assert digest.result() == files.content_digest(data, files._table_marker(path))
    assert files.remembered_digest(str(root / "_metadata.json")) is None


def test_a_copy_elsewhere_still_needs_relocate_roots(tmp_path):
    root = _root(tmp_path / "root")
    saved = _load(root)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(root, elsewhere, copy_function=shutil.copy2)
    shutil.rmtree(root)
    with pytest.raises(LayoutError, match=r"which these references read, is gone"):
        saved[0]
    _same(_pixels(hf_lvf.write.relocate_roots(saved, {root: elsewhere})), _want(elsewhere))


def test_references_recorded_by_the_older_identity_read_while_the_file_is_unchanged(tmp_path):
    from hf_lvf.hf import root_binding

    root = _root(tmp_path / "root")
    want = _want(root)
    refs = _load(root).cast_column("video", WindowVideo(decode=False))
    version = refs[0]["video"]["lance_version"]
    legacy = files.legacy_file_identity(str(root))
    assert legacy is not None and legacy.startswith("file:")
    old_id = root_binding._root_id(legacy, version)  # what the code before recorded

    def older(batch):
        return {"video": [{**v, "root_id": old_id} for v in batch["video"]]}

    old = refs.map(older, batched=True).cast_column("video", _load(root).features["video"])
    _same(_pixels(old), want)
    _new_process()
    _rewrite_one_label(root)  # no longer the file it recorded: the hint
    old = refs.map(older, batched=True).cast_column("video", _load(root).features["video"])
    with pytest.raises(LayoutError, match=r"changed since these references were made"):
        old[0]


def test_a_table_source_of_the_older_identity_reads_or_says_open_again(tmp_path, monkeypatch):
    # A view pickled by the code before names its table by the older identity; with that
    # table gone from the cache it reads while the file is unchanged, else the hint.
    root = _root(tmp_path / "root")
    legacy = files.legacy_file_identity(str(root))
    source = table_cache.TableSource(str(root), legacy)
    monkeypatch.setenv("HF_LVF_CACHE", str(tmp_path / "empty_cache"))
    _new_process()
    assert len(source.reopen(str(root)).table) == len(LENGTHS)
    _new_process()
    monkeypatch.setenv("HF_LVF_CACHE", str(tmp_path / "another_empty_cache"))
    _rewrite_one_label(root)
    with pytest.raises(LayoutError, match=r"open the root again"):
        source.reopen(str(root))


def test_another_machine_maps_the_table_instead_of_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "RACY_NS", 0)  # the root's times count as old enough
    root = _root(tmp_path / "root")
    assert VideoWindows(root, **PARAMS)[3]["label"] == 11
    _new_process()

    def no_parse(data, where):
        raise AssertionError(f"{where} parsed again")

    with _other_device(), monkeypatch.context() as patch:
        # Same path, size and mtime as the file hashed before: hashed first, table mapped.
        patch.setattr(table_cache, "_parse", no_parse)
        assert VideoWindows(root, **PARAMS)[3]["label"] == 11
    _new_process()
    _rewrite_one_label(root)  # the same path, size and mtime, other bytes: parsed, not mapped
    with _other_device():
        assert VideoWindows(root, **PARAMS)[3]["label"] == 12


_SAVE_WITH_OLD_CODE = """
import sys
import datasets, hf_lvf
assert hf_lvf.__file__.startswith(sys.argv[1]), hf_lvf.__file__  # the old code, not today's
from hf_lvf.write.synthetic import write_synthetic_root
write_synthetic_root(sys.argv[2], num_videos=2, num_frames=8, frame_size=(16, 16))
ds = datasets.load_dataset("hf_lvf", data_dir=sys.argv[2], split="train", window_length=4,
                           hop_size=2, cache_dir=sys.argv[4])
ds.save_to_disk(sys.argv[3])
"""
# The last commit of main that identified local roots by device, inode and times.
BY_INODE = "49bd288"


def test_a_dataset_saved_by_the_code_before_reads_or_says_open_again(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    repo = PROJECT_ROOT
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", BY_INODE, "hf_lvf"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    root, saved = tmp_path / "root", tmp_path / "saved"
    env = {**os.environ, "PYTHONPATH": str(old)}
    subprocess.run(
        [sys.executable, "-c", _SAVE_WITH_OLD_CODE, str(old), str(root), str(saved)]
        + [str(tmp_path / "datasets_cache")],
        check=True,
        capture_output=True,
        env=env,
        cwd=tmp_path,  # not the checkout: `-c` puts the working directory first on the path
    )
    want = [v["video"] for v in VideoWindows(root, window_length=4, hop_size=2)]
    _new_process()
    ds = datasets.load_from_disk(str(saved))
    got = [np.asarray(row["video"]) for row in ds]
    assert len(got) == len(want) == 6
    for g, w in zip(got, want, strict=True):  # the same machine, the file unchanged: reads
        np.testing.assert_array_equal(g, w)
    _tar_round_trip([root], tmp_path)  # its inode changed: the old identity cannot tell
    _new_process()
    with pytest.raises(LayoutError, match=r"changed since these references were made") as e:
        datasets.load_from_disk(str(saved))[0]
    assert "load_dataset" in str(e.value) and "relocate_roots" in str(e.value)


def test_a_root_written_again_with_the_same_metadata_and_other_pixels_is_refused(tmp_path):
    # Same keys, lengths and sizes: a byte-identical _metadata.json over other frames. The
    # names of the Lance commits differ, and they are part of what identifies the root.
    def write(seed: int) -> Path:
        videos = (
            (f"clip{i}", iter(make_frames(n, 16, 24, seed=seed + i)), {"label": 10 + i})
            for i, n in enumerate(LENGTHS)
        )
        return Path(write_frames(tmp_path / "root", videos, mode="overwrite"))

    root = write(0)
    before = (root / "_metadata.json").read_bytes()
    _load(root).save_to_disk(str(tmp_path / "saved"))
    write(100)
    assert (root / "_metadata.json").read_bytes() == before
    for fresh in (False, True):
        if fresh:
            _new_process()
        saved = datasets.load_from_disk(str(tmp_path / "saved"))
        with pytest.raises(LayoutError, match=r"changed since these references were made"):
            saved[0]
    # A copy of the same root keeps its commits' names, and reads.
    shutil.copytree(root, tmp_path / "copy", copy_function=shutil.copy2)
    shutil.rmtree(root)
    (tmp_path / "copy").rename(root)
    _new_process()
    _same(_pixels(_load(root)), _want(root))
