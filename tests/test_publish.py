"""Pushes send only what the repo lacks; a big push goes up in commits that a re-run resumes.

What was sent is read from the Hub stand-in's log of stored uploads (``HubServer.uploads``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from _roots import assert_same_values
from hub_server import HubServer
from huggingface_hub import HfApi

from hf_lvf import VideoWindows, push_to_hub
from hf_lvf.errors import HubError
from hf_lvf.publish import _upload
from hf_lvf.write.synthetic import write_synthetic_root

pytestmark = pytest.mark.hub

REPO = "org/growing"
PARAMS = {"window_length": 4, "hop_size": 2}
CARD_FILES = {"README.md", "hf_lvf_preview.png"}


def _grow(small: Path, full: Path, dest: Path, *, appends: int) -> Path:
    """``small`` grown into ``full`` as a writer appending to it would: new fragments, new
    manifests, a new ``_metadata.json``; the files ``small`` had stay as they were."""
    import lance

    shutil.copytree(small, dest)
    start = lance.dataset(str(small)).count_rows()
    rest = lance.dataset(str(full)).to_table().slice(start)
    for rows in np.array_split(np.arange(rest.num_rows), appends):
        lance.write_dataset(rest.slice(int(rows[0]), len(rows)), str(dest), mode="append")
    # The metadata names the Lance version it describes (see hf_lvf.write.append).
    meta = json.loads((full / "_metadata.json").read_text())
    meta["lance_version"] = lance.dataset(str(dest)).version
    (dest / "_metadata.json").write_text(json.dumps(meta, indent=1) + "\n")
    return dest


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("publish-roots")
    lengths = [12, 9, 15, 10, 11]
    small = write_synthetic_root(base / "small", num_videos=3, num_frames=lengths[:3])
    full = write_synthetic_root(base / "full", num_videos=5, num_frames=lengths)
    return {"small": small, "full": full, "grown": _grow(small, full, base / "grown", appends=2)}


def _files(root: Path) -> set[str]:
    return {f.relative_to(root).as_posix() for f in root.rglob("*") if f.is_file()}


def _changed(old: Path, new: Path) -> set[str]:
    return {
        rel
        for rel in _files(new)
        if not (old / rel).is_file() or (old / rel).read_bytes() != (new / rel).read_bytes()
    }


def _sent(hub: HubServer, since: int) -> list[str]:
    return [path for repo, path in hub.uploads[since:] if repo == REPO]


def _titles(hub: HubServer) -> list[str]:
    commits = HfApi(token=hub.token).list_repo_commits(REPO, repo_type="dataset")
    return [c.title for c in commits]


def _assert_remote_is(hub: HubServer, root: Path) -> None:
    for name in _files(root):  # byte for byte, on one revision
        assert hub.read_file(REPO, name) == (root / name).read_bytes(), name
    remote = VideoWindows(f"hf://datasets/{REPO}", **PARAMS)
    local = VideoWindows(root, **PARAMS)
    assert len(remote) == len(local)
    for got, want in zip(
        remote.take(range(len(remote))), local.take(range(len(local))), strict=True
    ):
        np.testing.assert_array_equal(got.pop("video"), want.pop("video"))
        assert_same_values(got, want)


def test_grown_root_is_what_appending_gives(roots):
    want = VideoWindows(roots["full"], **PARAMS)
    got = VideoWindows(roots["grown"], **PARAMS)
    assert len(got) == len(want) > len(VideoWindows(roots["small"], **PARAMS))
    np.testing.assert_array_equal(got[len(got) - 1]["video"], want[len(want) - 1]["video"])
    assert len(list((roots["grown"] / "data").iterdir())) == 3


def test_second_push_sends_only_new_and_changed_files_in_one_commit(hub: HubServer, roots):
    push_to_hub(roots["small"], REPO, token=hub.token, card_options=PARAMS)
    assert set(_sent(hub, 0)) == _files(roots["small"]) | CARD_FILES
    before = len(hub.uploads)
    push_to_hub(roots["grown"], REPO, token=hub.token)
    sent = _sent(hub, before)
    changed = _changed(roots["small"], roots["grown"])
    # 2 fragments, their transactions and manifests, the version hint and _metadata.json.
    assert {p.split("/")[0] for p in changed} == {
        "data",
        "_transactions",
        "_versions",
        "_metadata.json",
    }
    assert len([p for p in changed if p.startswith("data/")]) == 2
    assert set(sent) - CARD_FILES == changed  # nothing the repo already held
    assert "README.md" in sent
    assert len(_titles(hub)) == 3  # initial commit + one commit per push
    _assert_remote_is(hub, roots["grown"])
    # The same root again: only the card is a candidate, and it did not change either.
    before = len(hub.uploads)
    push_to_hub(roots["grown"], REPO, token=hub.token)
    assert _sent(hub, before) == []


@pytest.mark.parametrize("fault", ["refused", "dropped"])
def test_interrupted_big_push_resumes_without_sending_again(
    hub: HubServer, roots, monkeypatch, fault
):
    push_to_hub(roots["small"], REPO, token=hub.token, card_options=PARAMS)
    # At most 2 files a commit: the 4 new Lance data files go in 2 commits, then the last one.
    monkeypatch.setattr(_upload, "MAX_COMMIT_FILES", 2)
    if fault == "refused":  # the second commit is refused: nothing of it is stored
        hub.inject(500, path_contains="/commit/", method="POST", skip=1)
    else:  # the second commit is stored but its answer is lost on the way
        hub.inject(drop_mid_body=True, path_contains="/commit/", method="POST", skip=1)
    before = len(hub.uploads)
    with pytest.raises(HubError, match=r"stopped after 1 of 3 commits; run it again to resume"):
        push_to_hub(roots["grown"], REPO, token=hub.token)
    first = _sent(hub, before)
    assert len(first) == (2 if fault == "refused" else 4)
    assert all(p.startswith(("data/", "_transactions/")) for p in first)
    # Meanwhile the branch still holds the old root, whole: no manifest refers to new files.
    _assert_remote_is(hub, roots["small"])

    hub.clear_faults()
    before = len(hub.uploads)
    commit = push_to_hub(roots["grown"], REPO, token=hub.token)
    second = _sent(hub, before)
    assert not set(second) & set(first)  # finished files were not sent again
    assert set(first) | set(second) == _changed(roots["small"], roots["grown"]) | CARD_FILES
    assert commit.oid == hub.head(REPO)
    # The last commit puts manifests, _metadata.json and the card up together.
    assert _titles(hub)[0] == "Upload lance-video-frames root (repo top) with hf_lvf"
    _assert_remote_is(hub, roots["grown"])


def test_upload_plan_parts(tmp_path, monkeypatch):
    files = {}
    for i, size in enumerate([5, 5, 5, 20, 1]):
        path = tmp_path / f"f{i}"
        path.write_bytes(b"x" * size)
        files[f"data/f{i}"] = path
    files["_metadata.json"] = tmp_path / "f0"
    plan = _upload.plan_upload(files, {}, "")
    assert [n for n, _, _ in plan.head] == ["_metadata.json"]
    monkeypatch.setattr(_upload, "MAX_COMMIT_FILES", 2)
    monkeypatch.setattr(_upload, "MAX_COMMIT_BYTES", 12)
    parts = [[n for n, _, _ in part] for part in plan.data_parts()]
    # A file bigger than a commit goes alone; no part is empty.
    assert parts == [["data/f0", "data/f1"], ["data/f2"], ["data/f3"], ["data/f4"]]
    assert not plan.fits_one_commit
