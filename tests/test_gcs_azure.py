"""Roots on ``az://`` and ``gs://``: Azure's emulator (Azurite) and a GCS emulator
(fake-gcs-server) on 127.0.0.1 (``tests/_emulators.py``), the real lance and pyarrow clients,
lance's option names only.

What tests/test_s3.py shows for ``s3://`` holds here for what does not depend on the store:
every front end reads from the bucket what it reads from the same root on disk, hf_lvf's own
files (``_metadata.json``, a copy for a map-style dataset, an identity for caches) go
through pyarrow with the options lance takes, and a missing bucket, a missing root or a
refused key is one named error, at once. On Azure, writing, converting, appending and merging
straight into a container give what they give locally. fake-gcs-server does not take
lance's uploads (GCS's XML API), so a ``gs://`` root is written locally and uploaded here;
docs/guides/object-storage.md says so.
"""

from __future__ import annotations

import logging
import os

import datasets
import numpy as np
import pytest
from _roots import hf_root, make_frames

import hf_lvf
from hf_lvf import RootNotFoundError, VideoWindows
from hf_lvf.convert import convert_videos
from hf_lvf.errors import StoreError
from hf_lvf.location import read_store_file, write_store_file
from hf_lvf.location.store import store_file_identity
from hf_lvf.write import write_frames
from hf_lvf.write.store_roots import LOCK_NAME, store_write_lock

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe")

PARAMS = {"window_length": 4, "hop_size": 2}
SPLITS = {"train": (12, 3, 20, 9), "test": (10, 7)}
STORES = [
    pytest.param("az", marks=pytest.mark.azure, id="az"),
    pytest.param("gs", marks=pytest.mark.gcs, id="gs"),
]


@pytest.fixture(params=STORES)
def store(request):
    """The session's emulator for each scheme."""
    return request.getfixturevalue({"az": "azurite", "gs": "fake_gcs"}[request.param])


@pytest.fixture(scope="module")
def local_roots(tmp_path_factory):
    """Two splits written locally by hf_lvf."""
    local = tmp_path_factory.mktemp("roots") / "clips"
    for offset, (split, lengths) in enumerate(SPLITS.items()):
        hf_root(local / split, lengths, metadata=lambda i, o=offset: {"label": (i + o) % 3})
    return local


def _ids_pixels(samples) -> tuple[list[int], np.ndarray]:
    samples = list(samples)
    ids = [int(s["sample_idx"]) for s in samples]
    return ids, np.stack([np.asarray(s["video"]) for s in samples])


def _assert_same(got, want) -> None:
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def _all_windows(root, options=None, **more) -> tuple[list[int], np.ndarray]:
    view = VideoWindows(str(root), storage_options=options, **PARAMS, **more)
    return _ids_pixels(view.iter_samples())


def _files(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _videos(keys, *, num_frames: int = 9) -> list:
    return [(k, make_frames(num_frames, 32, 48, seed=i), {"label": i}) for i, k in enumerate(keys)]


# --- reading ------------------------------------------------------------------------------


def test_every_front_end_reads_from_the_bucket_what_it_reads_from_disk(
    store, local_roots, tmp_path
):
    bucket, options = store.new_bucket(), store.options()
    uri = store.upload(local_roots, bucket, "clips")
    local = VideoWindows(local_roots / "train", **PARAMS)
    remote = VideoWindows(f"{uri}/train", storage_options=options, **PARAMS)
    assert len(remote) == len(local) > 0
    _assert_same(_ids_pixels(remote.iter_samples()), _ids_pixels(local.iter_samples()))
    picked = np.random.default_rng(0).permutation(len(local))[:7]
    np.testing.assert_array_equal(remote.read_video(picked), local.read_video(picked))
    shuffled = _ids_pixels(remote.to_iterable_dataset(shuffle=True, seed=3))
    _assert_same(shuffled, _ids_pixels(local.to_iterable_dataset(shuffle=True, seed=3)))

    # load_dataset(data_dir=...): splits from the bucket's folders; streaming reads the
    # bucket, map-style reads a copy in the datasets cache (one per state of the root).
    for streaming in (True, False):
        ds = datasets.load_dataset(
            "hf_lvf",
            data_dir=uri,
            storage_options=options,
            streaming=streaming,
            cache_dir=str(tmp_path / "cache"),
            **PARAMS,
        )
        assert list(ds) == list(SPLITS)
        for split in SPLITS:
            rows = ds[split] if streaming else ds[split].with_format("numpy")
            _assert_same(_ids_pixels(rows), _all_windows(local_roots / split))
    copies = [_files(c) for c in (tmp_path / "cache" / "downloads" / "hf_lvf-roots").iterdir()]
    want = [_files(local_roots / split) for split in SPLITS]
    assert len(copies) == len(want) and all(copy in want for copy in copies)  # byte for byte


def test_hf_lvf_files_go_through_pyarrow_with_lance_options(store, tmp_path):
    bucket, options = store.new_bucket(), store.options()
    uri = f"{store.scheme}://{bucket}/notes/a.json"
    write_store_file(uri, b'{"n": 1}', options)
    assert store.read(bucket, "notes/a.json") == b'{"n": 1}'  # the emulator has it
    assert read_store_file(uri, options) == b'{"n": 1}'
    first = store_file_identity(uri, options)
    assert first == store_file_identity(uri, options) and first.startswith("8-")
    assert len(first) > len("8-")  # the object's ETag: it changes with the object
    write_store_file(uri, b'{"n": 2}', options)
    assert store_file_identity(uri, options) not in ("", first)
    assert (
        read_store_file(f"{store.scheme}://{bucket}/notes/b.json", options, missing_ok=True) is None
    )


def test_a_missing_bucket_or_root_is_a_named_error_at_once(store, local_roots, caplog):
    bucket, options = store.new_bucket(), store.options()
    uri = store.upload(local_roots / "train", bucket, "clips/train")
    with caplog.at_level(logging.WARNING, logger="hf_lvf"):
        with pytest.raises(StoreError) as info:
            VideoWindows(f"{store.scheme}://no-such-bucket/clips", storage_options=options)
        assert "bucket 'no-such-bucket' does not exist" in str(info.value)
        with pytest.raises(RootNotFoundError) as info:
            VideoWindows(f"{store.scheme}://{bucket}/elsewhere", storage_options=options)
        assert "elsewhere" in str(info.value)
        assert len(VideoWindows(uri, storage_options=options, **PARAMS)) > 0
    assert not [r for r in caplog.records if "trying again" in r.getMessage()]  # no retries


# --- Azure: keys and writing ----------------------------------------------------------------


@pytest.mark.azure
def test_a_wrong_account_key_is_refused_at_once_and_never_shown(
    azurite, local_roots, tmp_path, caplog
):
    bucket = azurite.new_bucket()
    uri = azurite.upload(local_roots / "train", bucket, "clips/train")
    wrong = "A" * 86 + "=="  # a well-formed key that is not the account's
    options = azurite.options(azure_storage_account_key=wrong)
    calls = {
        "VideoWindows": lambda: VideoWindows(uri, storage_options=options, **PARAMS),
        "load_dataset": lambda: datasets.load_dataset(
            "hf_lvf", data_dir=uri, storage_options=options, streaming=True, **PARAMS
        ),
        "write_frames": lambda: write_frames(
            f"az://{bucket}/new", _videos(["a"]), storage_options=options
        ),
        "append": lambda: write_frames(uri, _videos(["a"]), mode="append", storage_options=options),
    }
    with caplog.at_level(logging.WARNING, logger="hf_lvf"):
        for name, call in calls.items():
            with pytest.raises(StoreError) as info:
                call()
            message = str(info.value)
            assert "refused" in message and "azure_storage_account_key" in message, (name, message)
            assert f"bucket {bucket!r}" in message and wrong not in message, (name, message)
    assert not [r for r in caplog.records if "trying again" in r.getMessage()]  # at once
    assert not any(wrong in r.getMessage() for r in caplog.records)
    assert azurite.keys(bucket, "new") == []  # nothing was written


@pytest.mark.azure
def test_writing_converting_and_appending_straight_to_azure_reads_like_local(azurite, tmp_path):
    from _videos import write_video

    bucket, options = azurite.new_bucket(), azurite.options()
    frames = f"az://{bucket}/frames"
    write_frames(frames, _videos(["a", "b"]), storage_options=options)
    write_frames(tmp_path / "frames", _videos(["a", "b"]))
    identity = store_file_identity(f"{frames}/_metadata.json", options)
    more = _videos(["c", "d"], num_frames=6)
    write_frames(frames, more, mode="append", storage_options=options)
    write_frames(tmp_path / "frames", more, mode="append")
    assert store_file_identity(f"{frames}/_metadata.json", options) != identity
    _same_roots(frames, tmp_path / "frames", options)

    for i in range(3):
        write_video(tmp_path / "first" / f"cat/v{i}.mp4", num_frames=8, seed=i)
    write_video(tmp_path / "second" / "cat/w0.mp4", num_frames=6, seed=10)
    converted = f"az://{bucket}/converted"
    summary = convert_videos(  # (a pool's workers write as this does: tests/test_s3.py)
        tmp_path / "first", converted, workers=0, progress=False, storage_options=options
    )
    assert summary.root == converted and summary.num_videos == 3
    convert_videos(tmp_path / "first", tmp_path / "converted", workers=0, progress=False)
    for root, store_options in ((converted, options), (tmp_path / "converted", None)):
        convert_videos(
            tmp_path / "second",
            root,
            workers=0,
            mode="append",
            progress=False,
            storage_options=store_options,
        )
    _same_roots(converted, tmp_path / "converted", options)
    assert not [k for k in azurite.keys(bucket) if ".hf_lvf" in k]  # no lock or note left

    merged = hf_lvf.write.merge_roots(
        [converted, tmp_path / "frames"], f"az://{bucket}/merged", storage_options=options
    )
    hf_lvf.write.merge_roots([tmp_path / "converted", tmp_path / "frames"], tmp_path / "merged")
    _same_roots(merged, tmp_path / "merged", options, frame_size=(32, 48))
    with pytest.raises(FileExistsError):
        write_frames(converted, _videos(["z"]), storage_options=options)
    write_frames(converted, _videos(["z"]), mode="overwrite", storage_options=options)
    assert hf_lvf.read_layout(converted, storage_options=options).paths_of(np.arange(1)) == ["z"]


def _same_roots(remote: str, local, options: dict, **more) -> None:
    _assert_same(_all_windows(remote, options, **more), _all_windows(local, **more))
    got = hf_lvf.read_layout(remote, storage_options=options)
    want = hf_lvf.read_layout(str(local))
    assert got.paths_of(np.arange(len(got))) == want.paths_of(np.arange(len(want)))
    assert got.num_rows == want.num_rows


@pytest.mark.azure
def test_one_writer_at_a_time_on_azure(azurite):
    bucket, options = azurite.new_bucket(), azurite.options()
    uri = f"az://{bucket}/root"
    write_frames(uri, _videos(["a"]), storage_options=options)
    with store_write_lock(uri, options):
        assert f"root/{LOCK_NAME}" in azurite.keys(bucket, "root")
        with pytest.raises(BlockingIOError, match=f"{os.getpid()}"):
            write_frames(uri, _videos(["b"]), mode="append", storage_options=options)
    assert f"root/{LOCK_NAME}" not in azurite.keys(bucket, "root")
    write_frames(uri, _videos(["b"]), mode="append", storage_options=options)
    assert hf_lvf.read_layout(uri, storage_options=options).paths_of(np.arange(2)) == ["a", "b"]


@pytest.mark.azure
def test_azure_storage_use_emulator_reaches_azurite_as_lance_does(azurite, monkeypatch):
    # lance's shortcut for Azurite: its fixed key, at AZURITE_BLOB_STORAGE_URL (default
    # http://127.0.0.1:10000); lance needs the account named. hf_lvf's own files follow.
    bucket = azurite.new_bucket()
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", azurite.endpoint.rsplit("/", 1)[0])
    options = {
        "azure_storage_use_emulator": "true",
        "azure_storage_account_name": "devstoreaccount1",
    }
    uri = f"az://{bucket}/root"
    write_frames(uri, _videos(["a", "b"]), storage_options=options)
    assert "root/_metadata.json" in azurite.keys(bucket, "root")
    _assert_same(_all_windows(uri, options), _all_windows(uri, azurite.options()))


@pytest.mark.parametrize(
    ("endpoint", "blob", "dfs", "scheme"),
    [
        # Azurite's form (the account in the path): pyarrow adds the account after the host.
        ("http://127.0.0.1:10000/acct", "127.0.0.1:10000", "127.0.0.1:10000", "http"),
        # Azure's (the account in the host): pyarrow puts it before an authority with a dot.
        (
            "https://acct.blob.core.windows.net",
            ".blob.core.windows.net",
            ".dfs.core.windows.net",
            "https",
        ),
        (None, ".blob.core.windows.net", ".dfs.core.windows.net", "https"),  # pyarrow's own
    ],
)
def test_an_azure_endpoint_as_lance_takes_it_is_where_pyarrow_goes(endpoint, blob, dfs, scheme):
    from hf_lvf.location.paths import AZURITE_KEY, store_filesystem

    options = {"azure_storage_account_name": "acct", "azure_storage_account_key": AZURITE_KEY}
    if endpoint:
        options["azure_storage_endpoint"] = endpoint
    made = store_filesystem("az", options).__reduce__()[1][0]  # the filesystem's arguments
    assert made["account_name"] == "acct"
    assert (made["blob_storage_authority"], made["dfs_storage_authority"]) == (blob, dfs)
    assert made["blob_storage_scheme"] == made["dfs_storage_scheme"] == scheme
