"""Tests of the local Hub stand-in (tests/hub_server.py), driven by the real clients.

They also pin down how huggingface_hub and pylance react to the server's answers and faults,
which the Hub tests of hf_lvf rely on.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from _compat import needs_endpoint_validation
from hub_server import HubServer
from huggingface_hub import (
    DatasetCard,
    HfApi,
    HfFileSystem,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

pytestmark = pytest.mark.hub

REPO = "org/frames"


@pytest.fixture
def api(hub: HubServer) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=hub.token)


@pytest.fixture
def repo(api: HfApi) -> str:
    api.create_repo(REPO, repo_type="dataset")
    return REPO


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _upload(api: HfApi, path: str, data: bytes, message: str = "upload") -> str:
    info = api.upload_file(
        path_or_fileobj=data,
        path_in_repo=path,
        repo_id=REPO,
        repo_type="dataset",
        commit_message=message,
    )
    return info.oid


# ----------------------------------------------------------------------------- repos and auth


def test_create_repo_conflict_and_exist_ok(hub: HubServer, api: HfApi) -> None:
    url = api.create_repo(REPO, repo_type="dataset")
    assert url == f"{hub.endpoint}/datasets/{REPO}"
    assert url.repo_id == REPO and url.repo_type == "dataset"

    with pytest.raises(HfHubHTTPError) as excinfo:
        api.create_repo(REPO, repo_type="dataset")
    assert excinfo.value.response.status_code == 409
    assert api.create_repo(REPO, repo_type="dataset", exist_ok=True) == url

    info = api.dataset_info(REPO)
    assert info.id == REPO and not info.private
    assert len(info.sha) == 40
    assert [s.rfilename for s in info.siblings] == [".gitattributes"]
    assert api.repo_exists(REPO, repo_type="dataset")
    assert not api.repo_exists("org/other", repo_type="dataset")

    # Model repos work too, and a repo id without namespace lands in the user's namespace.
    assert api.create_repo("solo") == f"{hub.endpoint}/{hub_user(api)}/solo"
    assert api.model_info(f"{hub_user(api)}/solo").sha


def hub_user(api: HfApi) -> str:
    return api.whoami()["name"]


def test_auth_rules(hub: HubServer) -> None:
    anonymous = HfApi(endpoint=hub.endpoint, token=False)
    with pytest.raises(HfHubHTTPError) as excinfo:
        anonymous.create_repo(REPO, repo_type="dataset")
    assert excinfo.value.response.status_code == 401

    assert HfApi(endpoint=hub.endpoint).whoami(token=hub.token)["name"] == "test-user"
    with pytest.raises(HfHubHTTPError, match="Invalid user token"):
        HfApi(endpoint=hub.endpoint).whoami(token="hf_wrong")
    # A wrong token is refused on every route, as the Hub does.
    with pytest.raises(HfHubHTTPError) as excinfo:
        HfApi(endpoint=hub.endpoint, token="hf_wrong").list_repo_refs("org/x", repo_type="dataset")
    assert excinfo.value.response.status_code == 401


def test_private_repo_needs_a_token(hub: HubServer, api: HfApi, tmp_path: Path) -> None:
    api.create_repo(REPO, repo_type="dataset", private=True)
    _upload(api, "a.txt", b"secret")
    assert api.dataset_info(REPO).private

    anonymous = HfApi(endpoint=hub.endpoint, token=False)
    with pytest.raises(RepositoryNotFoundError):
        anonymous.dataset_info(REPO)
    with pytest.raises(RepositoryNotFoundError):
        list(anonymous.list_repo_tree(REPO, repo_type="dataset"))
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download(REPO, "a.txt", repo_type="dataset", token=False, cache_dir=tmp_path)
    assert not HfFileSystem(token=False).exists(f"datasets/{REPO}/a.txt")

    path = hf_hub_download(REPO, "a.txt", repo_type="dataset", token=hub.token, cache_dir=tmp_path)
    assert Path(path).read_bytes() == b"secret"
    assert HfFileSystem(token=hub.token).cat(f"datasets/{REPO}/a.txt") == b"secret"


def test_gated_repo(hub: HubServer, api: HfApi, repo: str, tmp_path: Path) -> None:
    _upload(api, "a.txt", b"gated")
    hub.set_repo(repo, gated="auto")
    assert HfApi(endpoint=hub.endpoint, token=False).dataset_info(repo).gated == "auto"
    with pytest.raises(GatedRepoError):
        hf_hub_download(repo, "a.txt", repo_type="dataset", token=False, cache_dir=tmp_path)
    path = hf_hub_download(repo, "a.txt", repo_type="dataset", token=hub.token, cache_dir=tmp_path)
    assert Path(path).read_bytes() == b"gated"


def test_missing_repo_revision_and_file(hub: HubServer, api: HfApi, repo: str) -> None:
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("org/missing")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/missing", "a.txt", repo_type="dataset")
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info(repo, revision="nope")
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info(repo, revision="refs/pr/9")
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(repo, "a.txt", repo_type="dataset", revision="0" * 40)
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(repo, "missing.txt", repo_type="dataset")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(repo, "données/é t#?.txt", repo_type="dataset")
    _upload(api, "données/é t#?.txt", b"unicode")
    path = hf_hub_download(repo, "données/é t#?.txt", repo_type="dataset")
    assert Path(path).read_bytes() == b"unicode"
    with pytest.raises(EntryNotFoundError):
        list(api.list_repo_tree(repo, "no/such/dir", repo_type="dataset"))
    assert api.get_paths_info(repo, ["missing.txt"], repo_type="dataset") == []
    assert not api.file_exists(repo, "missing.txt", repo_type="dataset")

    # Unknown routes answer 404 with a JSON error.
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        urllib.request.urlopen(f"{hub.endpoint}/api/no/such/route", timeout=5)
    assert excinfo.value.code == 404
    assert "error" in json.loads(excinfo.value.read())


# ----------------------------------------------------------------------------- content


def test_upload_folder_listing_and_snapshot(
    hub: HubServer, api: HfApi, repo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"data/part-{i}.bin": bytes([i]) * (100 + i) for i in range(5)}
    files |= {"data/nested/deep.txt": b"deep", "meta.json": b"{}"}
    _write_tree(tmp_path / "src", files)
    commit = api.upload_folder(folder_path=tmp_path / "src", repo_id=repo, repo_type="dataset")
    assert len(commit.oid) == 40 and commit.oid == api.dataset_info(repo).sha

    monkeypatch.setattr(hub, "page_size", 3)
    hub.clear_requests()
    tree = list(api.list_repo_tree(repo, repo_type="dataset", recursive=True))
    assert len(hub.requests_matching("/tree/")) > 1  # followed the Link header
    sizes = {e.path: e.size for e in tree if hasattr(e, "size")}
    assert sizes == {
        **{k: len(v) for k, v in files.items()},
        ".gitattributes": sizes[".gitattributes"],
    }
    folders = {e.path for e in tree if not hasattr(e, "size")}
    assert folders == {"data", "data/nested"}
    top = {e.path for e in api.list_repo_tree(repo, repo_type="dataset")}
    assert top == {".gitattributes", "data", "meta.json"}
    assert {e.path for e in api.list_repo_tree(repo, "data/nested", repo_type="dataset")} == {
        "data/nested/deep.txt"
    }

    expanded = api.get_paths_info(repo, ["meta.json", "data"], repo_type="dataset", expand=True)
    assert [e.path for e in expanded] == ["meta.json", "data"]
    assert expanded[0].last_commit.oid == commit.oid

    local = Path(snapshot_download(repo, repo_type="dataset", cache_dir=tmp_path / "cache"))
    got = {p.relative_to(local).as_posix(): p.read_bytes() for p in local.rglob("*") if p.is_file()}
    assert got.pop(".gitattributes")
    assert got == files


def test_two_commits_pinning_first_sha(api: HfApi, repo: str, tmp_path: Path) -> None:
    first = _upload(api, "v.txt", b"one", "first")
    second = _upload(api, "v.txt", b"two", "second")
    assert first != second
    cache = tmp_path / "cache"

    def read(revision: str | None) -> bytes:
        path = hf_hub_download(
            repo, "v.txt", repo_type="dataset", revision=revision, cache_dir=cache
        )
        return Path(path).read_bytes()

    assert read(first) == b"one"
    assert read(second) == b"two"
    assert read(None) == b"two"
    assert api.dataset_info(repo, revision=first).sha == first
    assert [c.title for c in api.list_repo_commits(repo, repo_type="dataset")] == [
        "second",
        "first",
        "initial commit",
    ]
    fs = HfFileSystem()
    assert fs.cat(f"datasets/{repo}@{first}/v.txt") == b"one"
    assert fs.cat(f"datasets/{repo}/v.txt") == b"two"

    # An unchanged file is skipped by the client (preupload tells it the remote oid).
    assert _upload(api, "v.txt", b"two") == second

    # parent_commit guards against concurrent commits.
    with pytest.raises(HfHubHTTPError) as excinfo:
        api.upload_file(
            path_or_fileobj=b"three",
            path_in_repo="v.txt",
            repo_id=repo,
            repo_type="dataset",
            parent_commit=first,
        )
    assert excinfo.value.response.status_code == 412


def test_branches_and_pull_requests(hub: HubServer, api: HfApi, repo: str, tmp_path: Path) -> None:
    base = _upload(api, "a.txt", b"main")
    api.create_branch(repo, branch="dev", repo_type="dataset")
    api.upload_file(
        path_or_fileobj=b"dev",
        path_in_repo="a.txt",
        repo_id=repo,
        repo_type="dataset",
        revision="dev",
    )
    pr = api.upload_file(
        path_or_fileobj=b"pr",
        path_in_repo="a.txt",
        repo_id=repo,
        repo_type="dataset",
        create_pr=True,
    )
    assert pr.pr_revision == "refs/pr/1"
    assert hub.head(repo) == base

    refs = api.list_repo_refs(repo, repo_type="dataset", include_pull_requests=True)
    assert {b.name for b in refs.branches} == {"main", "dev"}
    assert [p.ref for p in refs.pull_requests] == ["refs/pr/1"]

    def read(revision: str) -> bytes:
        path = hf_hub_download(
            repo, "a.txt", repo_type="dataset", revision=revision, cache_dir=tmp_path
        )
        return Path(path).read_bytes()

    assert (read("main"), read("dev"), read("refs/pr/1")) == (b"main", b"dev", b"pr")
    # HfFileSystem sends refs/pr/N unquoted in the URL path; HfApi sends refs%2Fpr%2F1.
    assert HfFileSystem().cat(f"datasets/{repo}@refs/pr/1/a.txt") == b"pr"
    assert api.dataset_info(repo, revision="refs/pr/1").sha == pr.oid


def test_hffs_range_reads(hub: HubServer, api: HfApi, repo: str) -> None:
    data = bytes(range(256)) * 800  # 204_800 bytes
    _upload(api, "big.bin", data)
    fs = HfFileSystem()
    assert fs.info(f"datasets/{repo}/big.bin")["size"] == len(data)
    assert fs.ls(f"datasets/{repo}", detail=False) == [
        f"datasets/{repo}/.gitattributes",
        f"datasets/{repo}/big.bin",
    ]
    hub.clear_requests()
    with fs.open(f"datasets/{repo}/big.bin", "rb", block_size=4096) as f:
        f.seek(100_000)
        assert f.read(1000) == data[100_000:101_000]
    reads = hub.requests_matching("/resolve/", method="GET")
    assert reads and all(r.range and r.status == 206 for r in reads)
    assert hub.bytes_served("/resolve/") < len(data) // 10

    # Suffix ranges and open-ended ranges, straight through HTTP.
    url = f"{hub.endpoint}/datasets/{repo}/resolve/main/big.bin"
    for header, expected in (("bytes=-10", data[-10:]), ("bytes=204790-", data[-10:])):
        request = urllib.request.Request(url, headers={"Range": header})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 206
            assert response.headers["Content-Range"] == f"bytes 204790-204799/{len(data)}"
            assert response.read() == expected
    request = urllib.request.Request(url, headers={"Range": f"bytes={len(data)}-"})
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        urllib.request.urlopen(request, timeout=5)
    assert excinfo.value.code == 416


@needs_endpoint_validation
def test_dataset_card_push_and_load(hub: HubServer, repo: str) -> None:
    card = DatasetCard("---\nlicense: apache-2.0\ntags:\n- video\n---\n\n# Frames\n\nHello.\n")
    card.push_to_hub(repo, token=hub.token, repo_type="dataset")
    loaded = DatasetCard.load(repo, repo_type="dataset")
    assert loaded.data.license == "apache-2.0"
    assert loaded.data.tags == ["video"]
    assert "Hello." in loaded.text
    assert hub.requests_matching("/api/validate-yaml")


def test_direct_state_api_and_concurrent_commits(hub: HubServer, api: HfApi) -> None:
    hub.create_repo(REPO)
    sha = hub.commit(REPO, {"x/y.txt": b"direct"})
    assert hub.list_files(REPO) == [".gitattributes", "x/y.txt"]
    assert api.dataset_info(REPO).sha == sha == hub.head(REPO)

    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            _upload(api, f"w/{i}.txt", str(i).encode())
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert [f for f in hub.list_files(REPO) if f.startswith("w/")] == sorted(
        f"w/{i}.txt" for i in range(8)
    )
    assert hub.read_file(REPO, "w/3.txt") == b"3"
    assert len(api.list_repo_commits(REPO, repo_type="dataset")) == 10


# ----------------------------------------------------------------------------- faults


def test_503_with_retry_after_then_success(
    hub: HubServer, api: HfApi, repo: str, tmp_path: Path
) -> None:
    _upload(api, "a.txt", b"payload")
    hub.clear_requests()
    fault = hub.inject(503, times=2, retry_after=0, path_contains="/resolve/main/a.txt")
    start = time.monotonic()
    path = hf_hub_download(repo, "a.txt", repo_type="dataset", cache_dir=tmp_path)
    assert Path(path).read_bytes() == b"payload"
    assert fault.hits == 2
    # HEAD without retries fails, HEAD with http_backoff fails, sleeps Retry-After + 1 s, succeeds.
    # Only a.txt's: the session's server may still answer reads another test left behind.
    served = [(r.method, r.status) for r in hub.requests_matching("/resolve/main/a.txt")]
    assert served == [("HEAD", 503), ("HEAD", 503), ("HEAD", 200), ("GET", 200)], [
        (r.method, r.path, r.status) for r in hub.requests
    ]
    assert time.monotonic() - start >= 0.9  # the one sleep of Retry-After + 1 s was taken


def test_503_is_not_retried_by_repo_info(hub: HubServer, api: HfApi, repo: str) -> None:
    hub.inject(503, times=1, retry_after=0, path_contains=f"/api/datasets/{repo}", method="GET")
    with pytest.raises(HfHubHTTPError) as excinfo:
        api.dataset_info(repo)
    assert excinfo.value.response.status_code == 503
    assert excinfo.value.response.headers["Retry-After"] == "0"
    assert api.dataset_info(repo).id == repo


def test_hffs_range_read_retries_503(hub: HubServer, api: HfApi, repo: str) -> None:
    data = bytes(range(256)) * 100
    _upload(api, "b.bin", data)
    fs = HfFileSystem()
    fs.info(f"datasets/{repo}/b.bin")
    fault = hub.inject(503, times=1, retry_after=0, path_contains="/resolve/", method="GET")
    with fs.open(f"datasets/{repo}/b.bin", "rb", block_size=1024) as f:
        f.seek(5000)
        assert f.read(100) == data[5000:5100]
    assert fault.hits == 1


def test_dropped_connection_is_retried(
    hub: HubServer, api: HfApi, repo: str, tmp_path: Path
) -> None:
    data = bytes(range(256)) * 1000
    _upload(api, "big.bin", data)
    hub.clear_requests()
    # Only big.bin's: the session's server may still answer reads another test left behind
    # (CI saw three such GETs), and those must neither take the fault nor be counted.
    big = "/resolve/main/big.bin"
    fault = hub.inject(drop_mid_body=True, times=1, path_contains=big, method="GET")
    path = hf_hub_download(repo, "big.bin", repo_type="dataset", cache_dir=tmp_path)
    assert Path(path).read_bytes() == data
    assert fault.hits == 1
    gets = hub.requests_matching(big, method="GET")
    assert len(gets) == 2, [(r.method, r.path, r.range, r.bytes_sent) for r in hub.requests]
    assert gets[0].bytes_sent == len(data) // 2 and gets[0].range is None
    # httpx hands the body over in 10 MB chunks, so a file this small had no byte written when
    # the connection dropped: the client starts again from 0 (bigger files resume with a Range).
    assert gets[1].range is None and gets[1].status == 200


def test_short_content_length_fails_the_consistency_check(
    hub: HubServer, api: HfApi, repo: str, tmp_path: Path
) -> None:
    _upload(api, "big.bin", b"x" * 10_000)
    hub.inject(wrong_content_length=True, times=1, path_contains="/resolve/", method="GET")
    with pytest.raises(OSError, match="Consistency check failed"):
        hf_hub_download(repo, "big.bin", repo_type="dataset", cache_dir=tmp_path)


# ----------------------------------------------------------------------------- lance hf://


def _lance_table(n: int) -> pa.Table:
    return pa.table(
        {"id": pa.array(range(n), pa.int64()), "blob": [bytes([i % 251]) * 64 for i in range(n)]}
    )


def test_lance_reads_a_pinned_revision(
    hub: HubServer, api: HfApi, repo: str, tmp_path: Path
) -> None:
    local = tmp_path / "ds.lance"
    lance.write_dataset(_lance_table(2000), local)
    first = api.upload_folder(
        folder_path=local, path_in_repo="sub", repo_id=repo, repo_type="dataset"
    ).oid
    lance.write_dataset(_lance_table(10), local, mode="append")
    second = api.upload_folder(
        folder_path=local, path_in_repo="sub", repo_id=repo, repo_type="dataset"
    ).oid

    uri = f"hf://datasets/{repo}/sub"
    hub.clear_requests()
    old = lance.dataset(uri, storage_options={"hf_revision": first})
    assert old.to_table().equals(_lance_table(2000))
    assert old.version == 1
    assert all(f"/{first}/" in r.path for r in hub.requests)

    new = lance.dataset(uri, storage_options={"hf_revision": second})
    assert new.to_table().equals(lance.dataset(local).to_table())
    assert lance.dataset(uri).count_rows() == 2010  # no hf_revision: main
    assert [v["version"] for v in new.versions()] == [1, 2]

    # Metadata-only work streams a small part of the repo.
    hub.clear_requests()
    assert lance.dataset(uri, storage_options={"hf_revision": second}).count_rows() == 2010
    repo_size = sum(f.stat().st_size for f in local.rglob("*") if f.is_file())
    assert hub.bytes_served() < repo_size // 5


def test_lance_retries_503_a_few_times(
    hub: HubServer, api: HfApi, repo: str, tmp_path: Path
) -> None:
    local = tmp_path / "ds.lance"
    lance.write_dataset(_lance_table(100), local)
    sha = api.upload_folder(
        folder_path=local, path_in_repo="sub", repo_id=repo, repo_type="dataset"
    ).oid
    uri = f"hf://datasets/{repo}/sub"

    # A few 503s are retried at once: Retry-After (60 s, twice) is not waited for.
    fault = hub.inject(503, times=2, retry_after=60, path_contains="/resolve/")
    start = time.monotonic()
    assert lance.dataset(uri, storage_options={"hf_revision": sha}).count_rows() == 100
    assert fault.hits == 2 and time.monotonic() - start < 60

    # Persistent 503s give up after a few attempts (3 or 4 were seen) with an error.
    hub.clear_requests()
    hub.inject(503, times=50, retry_after=0, path_contains="/resolve/")
    with pytest.raises((OSError, ValueError), match="503"):
        lance.dataset(uri, storage_options={"hf_revision": sha}).count_rows()
    assert 2 <= len(hub.requests_matching("/resolve/")) <= 6


def test_lance_private_repo_needs_hf_token(hub: HubServer, api: HfApi, tmp_path: Path) -> None:
    api.create_repo(REPO, repo_type="dataset", private=True)
    local = tmp_path / "ds.lance"
    lance.write_dataset(_lance_table(10), local)
    sha = api.upload_folder(
        folder_path=local, path_in_repo="sub", repo_id=REPO, repo_type="dataset"
    ).oid
    uri = f"hf://datasets/{REPO}/sub"
    with pytest.raises((OSError, ValueError), match="PermissionDenied"):
        lance.dataset(uri, storage_options={"hf_revision": sha})
    options = {"hf_revision": sha, "hf_token": hub.token}
    assert lance.dataset(uri, storage_options=options).count_rows() == 10
    # "@rev" in the URI is not parsed: it becomes part of the repo name.
    with pytest.raises((OSError, ValueError)):
        lance.dataset(f"hf://datasets/{REPO}@{sha}/sub", storage_options={"hf_token": hub.token})


def test_latency_stall_and_the_request_log(hub: HubServer, api: HfApi, repo: str) -> None:
    data = bytes(range(256)) * 400
    _upload(api, "big.bin", data)
    url = f"{hub.endpoint}/datasets/{repo}/resolve/main/big.bin"
    hub.clear_requests()
    hub.latency = 0.2
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.read() == data
    hub.latency = 0.0
    (record,) = hub.requests
    assert record.ended - record.started >= 0.2  # a lower bound the server sleeps for
    assert hub.count("/resolve/", method="GET") == 1 and hub.count("/api/") == 0

    # A stall: half of the body, then nothing for a while. A client with a shorter read
    # timeout gives up; a patient one gets every byte.
    fault = hub.inject(stall=1.5, times=2, path_contains="/resolve/")
    with urllib.request.urlopen(url, timeout=0.5) as response, pytest.raises(TimeoutError):
        response.read()
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.read() == data
    assert fault.hits == 2
    with pytest.raises(ValueError, match="inject\\(\\) needs a status"):
        hub.inject(times=1)
