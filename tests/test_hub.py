"""hf_lvf and the Hub, against the local Hub stand-in (tests/hub_server.py) and the real clients."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import datasets
import numpy as np
import pytest
from _compat import needs_endpoint_validation
from _loading import assert_rows_equal, core_samples
from _roots import assert_same_values
from hub_server import HubServer
from huggingface_hub import DatasetCard, HfApi

from hf_lvf import RootNotFoundError, VideoWindows, WindowVideo, push_to_hub
from hf_lvf.card import user_sections
from hf_lvf.cli import main
from hf_lvf.errors import HubError, LayoutError
from hf_lvf.location import (
    HubPath,
    download_root,
    lance_location,
    parse_hub_uri,
    pin_data_files,
    pin_root,
    pin_roots,
    read_hub_file,
)
from hf_lvf.publish import push_card
from hf_lvf.write.synthetic import write_synthetic_root

pytestmark = pytest.mark.hub

REPO = "org/clips"
PARAMS = {"window_length": 4, "hop_size": 3}


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hub-roots")
    return {
        "v1": write_synthetic_root(base / "v1", num_videos=3, num_frames=[20, 14, 17]),
        "v2": write_synthetic_root(
            base / "v2", num_videos=2, num_frames=[12, 25], frame_size=(48, 32)
        ),
        # Big enough that a few windows are a small part of it.
        "big": write_synthetic_root(
            base / "big", num_videos=12, num_frames=100, frame_size=(96, 96)
        ),
    }


def _root_size(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def _all_samples(windows: VideoWindows) -> list[dict]:
    return windows.take(range(len(windows)))


def _assert_same_windows(remote: VideoWindows, local: VideoWindows) -> None:
    assert len(remote) == len(local)
    for got, want in zip(_all_samples(remote), _all_samples(local), strict=True):
        assert got.keys() == want.keys()
        np.testing.assert_array_equal(got.pop("video"), want.pop("video"))
        assert_same_values(got, want)


def _clear_cache(hub: HubServer) -> None:
    """Forget downloaded files, so the next read goes to the server."""
    from huggingface_hub import constants

    shutil.rmtree(constants.HF_HUB_CACHE, ignore_errors=True)


# --- URIs -------------------------------------------------------------------------------------


def test_parse_hub_uri():
    assert parse_hub_uri("hf://datasets/org/repo") == HubPath("org/repo", "", None)
    assert parse_hub_uri("hf://datasets/org/repo@v1.0/a/b/") == HubPath("org/repo", "a/b", "v1.0")
    assert parse_hub_uri("hf://datasets/org/repo@refs/pr/3/sub") == HubPath(
        "org/repo", "sub", "refs/pr/3"
    )
    assert parse_hub_uri("hf://datasets/org/repo@my%2Fbranch/sub").revision == "my/branch"
    assert HubPath("org/repo", "sub", "my/branch").revision_uri == (
        "hf://datasets/org/repo@my%2Fbranch/sub"
    )
    with pytest.raises(ValueError, match="must look like 'hf://datasets/<namespace>/<name>"):
        parse_hub_uri("hf://org/model")
    with pytest.raises(ValueError, match="must name a repo"):
        parse_hub_uri("hf://datasets/org")
    with pytest.raises(ValueError, match="has empty, '.' or '..' segments"):
        parse_hub_uri("hf://datasets/org/repo/a/../b")


# --- publishing and reading back --------------------------------------------------------------


def test_push_then_read_by_repo_id(hub: HubServer, roots):
    commit = push_to_hub(roots["v1"], REPO, token=hub.token, card_options=PARAMS)
    assert commit.oid == hub.head(REPO)
    files = hub.list_files(REPO)
    local = sorted(
        f.relative_to(roots["v1"]).as_posix() for f in roots["v1"].rglob("*") if f.is_file()
    )
    assert files == sorted([".gitattributes", "README.md", "hf_lvf_preview.png", *local])
    for name in local:  # byte for byte
        assert hub.read_file(REPO, name) == (roots["v1"] / name).read_bytes()
    # One commit on top of the repo's initial one.
    assert [
        c.title for c in HfApi(token=hub.token).list_repo_commits(REPO, repo_type="dataset")
    ] == [
        "Upload lance-video-frames root (repo top) with hf_lvf",
        "initial commit",
    ]

    hub.clear_requests()
    remote = VideoWindows(f"hf://datasets/{REPO}", **PARAMS)
    _assert_same_windows(remote, VideoWindows(roots["v1"], **PARAMS))
    assert remote.uri == f"hf://datasets/{REPO}"
    # Every read was pinned to the commit the revision resolved to.
    reads = hub.requests_matching("/resolve/") + hub.requests_matching("/tree/")
    assert reads and all(commit.oid in r.path for r in reads)


def test_sub_folder_roots_and_the_card(hub: HubServer, roots):
    push_to_hub(
        roots["v1"], REPO, path_in_repo="videos/train", token=hub.token, card_options=PARAMS
    )
    push_to_hub(roots["v2"], REPO, path_in_repo="videos/test", token=hub.token)
    files = hub.list_files(REPO)
    assert {"videos/train/_metadata.json", "videos/test/_metadata.json"} <= set(files)
    assert {"hf_lvf_preview-videos-train.png", "hf_lvf_preview-videos-test.png"} <= set(files)
    for split, name in (("train", "v1"), ("test", "v2")):
        remote = VideoWindows(f"hf://datasets/{REPO}/videos/{split}", revision="main", **PARAMS)
        _assert_same_windows(remote, VideoWindows(roots[name], **PARAMS))

    card = DatasetCard(hub.read_file(REPO, "README.md").decode())
    assert card.data.to_dict()["hf_lvf"]["window_length"] == 4  # kept from the first push
    assert '"train": "hf://datasets/org/clips@main/videos/train/**",' in card.text
    assert '"test": "hf://datasets/org/clips@main/videos/test/**",' in card.text
    assert "| `videos/train` | 3 | 51 |" in card.text and "| `videos/test` | 2 | 37 |" in card.text
    assert "](hf_lvf_preview-videos-train.png)" in card.text
    assert "](hf_lvf_preview-videos-test.png)" in card.text


def test_pinned_revision_reads_the_old_data_after_a_new_push(hub: HubServer, roots):
    old = push_to_hub(roots["v1"], REPO, path_in_repo="sub", token=hub.token)
    new = push_to_hub(roots["v2"], REPO, path_in_repo="sub", token=hub.token)
    assert old.oid != new.oid
    uri = f"hf://datasets/{REPO}/sub"
    _assert_same_windows(
        VideoWindows(uri, revision=old.oid, **PARAMS), VideoWindows(roots["v1"], **PARAMS)
    )
    _assert_same_windows(VideoWindows(uri, **PARAMS), VideoWindows(roots["v2"], **PARAMS))
    _assert_same_windows(
        VideoWindows(f"hf://datasets/{REPO}@{old.oid}/sub", **PARAMS),
        VideoWindows(roots["v1"], **PARAMS),
    )
    # The second push replaced the Lance files of the first instead of piling up beside them.
    files = [f for f in hub.list_files(REPO) if f.startswith("sub/")]
    local = sorted(
        f"sub/{f.relative_to(roots['v2']).as_posix()}"
        for f in roots["v2"].rglob("*")
        if f.is_file()
    )
    assert files == local
    # A pinned view stays pinned when it travels to a worker.
    import pickle

    pinned = VideoWindows(uri, revision=old.oid, **PARAMS)
    clone = pickle.loads(pickle.dumps(pinned))
    np.testing.assert_array_equal(clone.read_video([0]), pinned.read_video([0]))
    assert len(clone) == len(VideoWindows(roots["v1"], **PARAMS))


def test_branch_and_tag_like_revisions(hub: HubServer, roots):
    push_to_hub(roots["v1"], REPO, token=hub.token)
    push_to_hub(roots["v2"], REPO, revision="dev", token=hub.token)
    _assert_same_windows(
        VideoWindows(f"hf://datasets/{REPO}", **PARAMS), VideoWindows(roots["v1"], **PARAMS)
    )
    _assert_same_windows(
        VideoWindows(f"hf://datasets/{REPO}", revision="dev", **PARAMS),
        VideoWindows(roots["v2"], **PARAMS),
    )
    with pytest.raises(ValueError, match="conflicting revisions"):
        VideoWindows(f"hf://datasets/{REPO}@main", revision="dev")
    with pytest.raises(ValueError, match="revision= and token= apply to hf:// roots only"):
        VideoWindows(roots["v1"], revision="dev")


def test_streaming_reads_only_the_bytes_it_needs(hub: HubServer, roots):
    push_to_hub(roots["big"], REPO, token=hub.token)
    _clear_cache(hub)
    hub.clear_requests()
    windows = VideoWindows(f"hf://datasets/{REPO}", window_length=8, hop_size=8)
    first = windows.read_video([0, 1, 2])
    np.testing.assert_array_equal(
        first, VideoWindows(roots["big"], window_length=8, hop_size=8).read_video([0, 1, 2])
    )
    size = _root_size(roots["big"])
    served = hub.bytes_served()
    assert served < size / 5, (served, size)
    assert any(r.range for r in hub.requests_matching("/data/"))


def test_download_root_into_the_cache(hub: HubServer, roots):
    push_to_hub(roots["v1"], REPO, path_in_repo="train", token=hub.token)
    push_to_hub(roots["v2"], REPO, path_in_repo="test", token=hub.token)
    local = download_root(f"hf://datasets/{REPO}/train")
    assert local.name == "train" and (local / "_metadata.json").is_file()
    # Only that root came down: not the other root, the card or the pictures.
    snapshot = local.parent
    assert sorted(p.name for p in snapshot.iterdir()) == ["train"]
    _assert_same_windows(VideoWindows(local, **PARAMS), VideoWindows(roots["v1"], **PARAMS))
    hub.clear_requests()
    assert download_root(f"hf://datasets/{REPO}/train", revision=hub.head(REPO)) == local
    assert not hub.requests_matching("/resolve/", method="GET")  # once per commit


@needs_endpoint_validation
def test_card_only_update_keeps_the_user_text(hub: HubServer, roots):
    push_to_hub(roots["v1"], REPO, token=hub.token, card_options={"license": "cc-by-4.0"})
    text = hub.read_file(REPO, "README.md").decode()
    edited = text.replace(user_sections(text)["description"], "Synthetic clips for tests.")
    HfApi(token=hub.token).upload_file(
        path_or_fileobj=edited.encode(), path_in_repo="README.md", repo_id=REPO, repo_type="dataset"
    )
    before = hub.list_files(REPO)
    hub.clear_requests()
    url = push_card(REPO, token=hub.token, card_options={"window_length": 2})
    assert url.endswith(hub.head(REPO))
    assert hub.requests_matching("/api/validate-yaml", method="POST")  # DatasetCard.push_to_hub
    assert hub.list_files(REPO) == before
    card = DatasetCard(hub.read_file(REPO, "README.md").decode())
    assert user_sections(card.text)["description"] == "Synthetic clips for tests."
    assert card.data.license == "cc-by-4.0"
    assert "    window_length=2,\n" in card.text
    assert "](hf_lvf_preview.png)" in card.text  # the picture of the last push is still there
    # A push regenerates the card and keeps the text again.
    push_to_hub(roots["v1"], REPO, token=hub.token)
    text = hub.read_file(REPO, "README.md").decode()
    assert user_sections(text)["description"] == "Synthetic clips for tests."


# --- refusals and errors ----------------------------------------------------------------------


def test_push_refuses_what_is_not_a_root(hub: HubServer, roots, tmp_path):
    with pytest.raises(
        RootNotFoundError, match="is not a lance-video-frames root: no _metadata.json"
    ):
        push_to_hub(tmp_path, REPO, token=hub.token)
    half = tmp_path / "half"
    half.mkdir()
    shutil.copy(roots["v1"] / "_metadata.json", half)
    with pytest.raises(LayoutError, match=r"no Lance table \(_versions/ is missing\)"):
        push_to_hub(half, REPO, token=hub.token)
    with pytest.raises(RootNotFoundError, match="is not a folder"):
        push_to_hub(tmp_path / "missing", REPO, token=hub.token)
    with pytest.raises(ValueError, match="root must be a local folder to push"):
        push_to_hub(f"hf://datasets/{REPO}", REPO, token=hub.token)
    with pytest.raises(ValueError, match="repo_id must be 'namespace/name', got 'clips'"):
        push_to_hub(roots["v1"], "clips", token=hub.token)
    assert not hub.requests  # refused before any request


def test_push_without_write_access(hub: HubServer, roots, capsys):
    with pytest.raises(HubError, match="pass token="):
        push_to_hub(roots["v1"], REPO, token=False)
    assert main(["push", str(roots["v1"]), REPO]) == 2  # no token in the environment
    err = capsys.readouterr().err
    assert err.startswith("hf-lvf: error: the Hub answered 401") and err.count("\n") == 1
    assert "pass token=" in err


def test_private_repo_needs_a_token(hub: HubServer, roots, capsys):
    push_to_hub(roots["v1"], REPO, private=True, token=hub.token)
    uri = f"hf://datasets/{REPO}"
    with pytest.raises(
        HubError, match=r"was not found .*, or it is private: .* pass token="
    ) as info:
        VideoWindows(uri, **PARAMS)
    assert "hf auth login" in str(info.value) and "\n" not in str(info.value)
    assert main(["card", uri, "-o", "unused.md"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("hf-lvf: error: dataset repo 'org/clips' was not found")
        and err.count("\n") == 1
    )
    _assert_same_windows(
        VideoWindows(uri, token=hub.token, **PARAMS), VideoWindows(roots["v1"], **PARAMS)
    )


def test_missing_repo_revision_or_path(hub: HubServer, roots):
    push_to_hub(roots["v1"], REPO, path_in_repo="train", token=hub.token)
    with pytest.raises(HubError, match="dataset repo 'org/nope' was not found"):
        VideoWindows("hf://datasets/org/nope", token=hub.token)
    with pytest.raises(HubError, match="revision 'v9' does not exist in dataset repo 'org/clips'"):
        VideoWindows(f"hf://datasets/{REPO}/train", revision="v9")
    with pytest.raises(
        RootNotFoundError, match=r"'hf://datasets/org/clips/test' is not a lance-video-frames root"
    ):
        VideoWindows(f"hf://datasets/{REPO}/test")
    with pytest.raises(RootNotFoundError, match="no _metadata.json there"):
        download_root(f"hf://datasets/{REPO}/test")
    pinned = pin_root(f"hf://datasets/{REPO}")
    with pytest.raises(HubError, match=r"does not exist at revision .* check the path in the repo"):
        read_hub_file(f"hf://datasets/{REPO}/nothing.txt", pinned.storage_options)


# --- faults -----------------------------------------------------------------------------------


def test_busy_server_is_retried(hub: HubServer, roots, caplog):
    push_to_hub(roots["v1"], REPO, path_in_repo="train", token=hub.token)
    _clear_cache(hub)
    # The first requests of every kind are refused: the revision lookup, the metadata
    # download and lance's range reads.
    api_fault = hub.inject(503, times=2, retry_after=0, path_contains="/api/")
    file_fault = hub.inject(429, times=1, retry_after=0, path_contains="/_metadata.json")
    data_fault = hub.inject(503, times=2, retry_after=1, path_contains="/data/")
    with caplog.at_level(logging.WARNING, logger="hf_lvf.location"):
        remote = VideoWindows(f"hf://datasets/{REPO}/train", **PARAMS)
        _assert_same_windows(remote, VideoWindows(roots["v1"], **PARAMS))
    assert (api_fault.hits, file_fault.hits, data_fault.hits) == (2, 1, 2)
    assert "the Hub answered 503 while resolving revision 'main'" in caplog.text


def test_server_that_stays_down_is_a_clear_error(hub: HubServer, roots):
    push_to_hub(roots["v1"], REPO, token=hub.token)
    hub.inject(503, times=10, retry_after=0, path_contains="/api/")
    with pytest.raises(
        HubError, match=r"the Hub answered 503 .*; the Hub is busy or down; try again later"
    ):
        VideoWindows(f"hf://datasets/{REPO}")


def test_connection_dropped_mid_read(hub: HubServer, roots):
    push_to_hub(roots["big"], REPO, token=hub.token)
    _clear_cache(hub)
    meta = hub.inject(drop_mid_body=True, times=1, path_contains="/_metadata.json", method="GET")
    data = hub.inject(drop_mid_body=True, times=1, path_contains="/data/", method="GET")
    remote = VideoWindows(f"hf://datasets/{REPO}", window_length=8, hop_size=20)
    _assert_same_windows(remote, VideoWindows(roots["big"], window_length=8, hop_size=20))
    assert (meta.hits, data.hits) == (1, 1)


# --- the command line -------------------------------------------------------------------------


def test_cli_push(hub: HubServer, roots, capsys):
    argv = ["push", str(roots["v1"]), REPO, "--token", hub.token, "--path-in-repo", "train"]
    assert main([*argv, "--license", "mit", "--window-length", "5", "--commit-message", "v1"]) == 0
    out = capsys.readouterr().out
    sha = hub.head(REPO)
    assert f"commit  {sha}" in out and f"/datasets/{REPO}/commit/{sha}" in out
    card = DatasetCard(hub.read_file(REPO, "README.md").decode())
    assert card.data.license == "mit" and card.data.to_dict()["hf_lvf"]["window_length"] == 5
    commits = HfApi(token=hub.token).list_repo_commits(REPO, repo_type="dataset")
    assert commits[0].title == "v1"
    _assert_same_windows(
        VideoWindows(f"hf://datasets/{REPO}/train", window_length=5),
        VideoWindows(roots["v1"], window_length=5),
    )


def test_cli_card_of_a_hub_root(hub: HubServer, roots, tmp_path, capsys):
    push_to_hub(roots["v1"], REPO, path_in_repo="train", token=hub.token)
    out = tmp_path / "README.md"
    assert (
        main(["card", f"hf://datasets/{REPO}/train", "-o", str(out), "--window-length", "3"]) == 0
    )
    text = out.read_text()
    assert '    "hf://datasets/org/clips/train",\n' in text  # repo and path taken from the URI
    assert "| 3 | 51 |" in text
    picture = tmp_path / "hf_lvf_preview-train.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"preview  {picture}" in capsys.readouterr().out


# --- datasets: load_dataset("hf_lvf", ...) from the Hub -------------------------------------

MODES = pytest.mark.parametrize("streaming", [False, True], ids=["downloaded", "streaming"])


def _push_splits(hub: HubServer, roots) -> str:
    push_to_hub(roots["v1"], REPO, path_in_repo="videos/train", token=hub.token)
    return push_to_hub(roots["v2"], REPO, path_in_repo="videos/test", token=hub.token).oid


@MODES
def test_load_dataset_by_repo_id(hub: HubServer, roots, streaming):
    sha = _push_splits(hub, roots)
    params = {**PARAMS, "frame_size": (32, 32)}  # the two roots differ in size
    ds = datasets.load_dataset(
        "hf_lvf", data_dir=f"hf://datasets/{REPO}/videos", streaming=streaming, **params
    )
    assert list(ds) == ["train", "test"]
    assert_rows_equal(ds["train"], core_samples(roots["v1"], **params))
    assert_rows_equal(ds["test"], core_samples(roots["v2"], **params))
    # The data_files form the card shows.
    ds = datasets.load_dataset(
        "hf_lvf",
        data_files={"train": f"hf://datasets/{REPO}@main/videos/train/**"},
        split="train",
        streaming=streaming,
        **PARAMS,
    )
    assert_rows_equal(ds, core_samples(roots["v1"], **PARAMS))
    if not streaming:
        # Downloaded once into the Hugging Face cache (that commit), then read locally.
        from huggingface_hub import constants

        refs = ds.cast_column("video", WindowVideo(decode=False))["video"]
        (local,) = {ref["root"] for ref in refs}  # each reference names its root
        assert local.startswith(constants.HF_HUB_CACHE) and local.endswith(f"{sha}/videos/train")
        hub.clear_requests()
        assert_rows_equal(ds, core_samples(roots["v1"], **PARAMS))
        assert not hub.requests


@MODES
def test_load_dataset_pinned_revision_after_a_new_push(hub: HubServer, roots, streaming):
    old = push_to_hub(roots["v1"], REPO, path_in_repo="sub", token=hub.token).oid
    # Loaded (and, in map mode, cached) before the new push...
    first = datasets.load_dataset(
        "hf_lvf",
        data_files=f"hf://datasets/{REPO}@main/sub/**",
        split="train",
        streaming=streaming,
        **PARAMS,
    )
    assert_rows_equal(first, core_samples(roots["v1"], **PARAMS))
    push_to_hub(roots["v2"], REPO, path_in_repo="sub", token=hub.token)
    pinned = datasets.load_dataset(
        "hf_lvf",
        data_files=f"hf://datasets/{REPO}@{old}/sub/**",
        split="train",
        streaming=streaming,
        **PARAMS,
    )
    assert_rows_equal(pinned, core_samples(roots["v1"], **PARAMS))
    # ...main now means the new commit: no stale cache, every read from that commit.
    latest = datasets.load_dataset(
        "hf_lvf",
        data_files=f"hf://datasets/{REPO}@main/sub/**",
        split="train",
        streaming=streaming,
        **PARAMS,
    )
    assert_rows_equal(latest, core_samples(roots["v2"], **PARAMS))


def test_streaming_dataset_reads_a_small_part_of_the_root(hub: HubServer, roots, small_reads):
    # small_reads: with 24 MiB reads this small root would be one read (streaming reads the
    # shards of a worker as one sequence).
    push_to_hub(roots["big"], REPO, token=hub.token)
    _clear_cache(hub)
    hub.clear_requests()
    ds = datasets.load_dataset(
        "hf_lvf",
        data_dir=f"hf://datasets/{REPO}",
        split="train",
        streaming=True,
        window_length=8,
        hop_size=8,
    )
    first = [row for _, row in zip(range(3), ds, strict=False)]
    want = VideoWindows(roots["big"], window_length=8, hop_size=8).take([0, 1, 2])
    assert_rows_equal(first, want)
    # The first read and at most 8 fetched ahead, with the video_id/frame_idx pages each
    # read checks.
    assert hub.bytes_served() < _root_size(roots["big"]) * 0.7


@MODES
def test_load_dataset_private_missing_and_busy(hub: HubServer, roots, streaming):
    push_to_hub(roots["v1"], REPO, path_in_repo="train", private=True, token=hub.token)
    with pytest.raises(HubError, match="or it is private: check the repo id, or pass token="):
        datasets.load_dataset(
            "hf_lvf", data_dir=f"hf://datasets/{REPO}", streaming=streaming, **PARAMS
        )
    with pytest.raises(RootNotFoundError, match="none of its sub-folders is one"):
        datasets.load_dataset(
            "hf_lvf", data_dir=f"hf://datasets/{REPO}/nope", token=hub.token, streaming=streaming
        )
    hub.inject(503, times=2, retry_after=0, path_contains="/api/")
    ds = datasets.load_dataset(
        "hf_lvf",
        data_dir=f"hf://datasets/{REPO}",
        token=hub.token,
        split="train",
        streaming=streaming,
        **PARAMS,
    )
    assert_rows_equal(ds, core_samples(roots["v1"], **PARAMS))


def test_pinning_helpers(hub: HubServer, roots):
    # Only _metadata.json matters to these helpers: commit it straight into the server.
    meta = (roots["v1"] / "_metadata.json").read_bytes()
    hub.create_repo(REPO)
    sha = hub.commit(
        REPO, {"videos/train/_metadata.json": meta, "videos/test/_metadata.json": meta}
    )
    hub.clear_requests()
    pinned = pin_roots([f"hf://datasets/{REPO}/videos/train", f"hf://datasets/{REPO}/videos/test"])
    assert [p.sha for p in pinned] == [sha, sha]
    assert len(hub.requests_matching(f"/api/datasets/{REPO}")) == 1  # resolved once
    assert pinned[1].uri == f"hf://datasets/{REPO}/videos/test"
    assert pinned[1].storage_options == {"hf_revision": sha}
    assert pin_data_files(
        {"train": f"hf://datasets/{REPO}/videos/train/**", "test": [f"hf://datasets/{REPO}/videos"]}
    ) == {
        "train": f"hf://datasets/{REPO}@{sha}/videos/train/**",
        "test": [
            f"hf://datasets/{REPO}@{sha}/videos/test/_metadata.json",
            f"hf://datasets/{REPO}@{sha}/videos/train/_metadata.json",
        ],
    }
    assert pin_data_files(["local/*.json"]) == ["local/*.json"]
    assert lance_location(f"hf://datasets/{REPO}@{sha}/videos", {"a": "b"}) == (
        f"hf://datasets/{REPO}/videos",
        {"a": "b", "hf_revision": sha},
    )
    assert lance_location("/data/root", None) == ("/data/root", {})
