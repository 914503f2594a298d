"""Where a Hub token goes: into the processes that read (pickles), never onto disk.

Every way hf_lvf takes a token is used against a private repo on the local Hub stand-in;
then the Hugging Face cache, the roots and cards written, the logs, the error messages
and the reprs are searched for it.
"""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path

import datasets
import numpy as np
import pytest
from hub_server import HubServer
from huggingface_hub import HfApi

from hf_lvf import VideoWindows, build_card, push_card, push_to_hub
from hf_lvf.cli import main as cli_main
from hf_lvf.errors import HubError
from hf_lvf.write.synthetic import write_synthetic_root

pytestmark = pytest.mark.hub

REPO = "org/private-clips"
PARAMS = {"window_length": 3, "hop_size": 2}


def _files_holding(folder: Path, secret: bytes) -> list[str]:
    return sorted(
        str(path)
        for path in Path(folder).rglob("*")
        if path.is_file() and not path.is_symlink() and secret in path.read_bytes()
    )


def test_token_never_reaches_disk_logs_errors_or_reprs(hub: HubServer, tmp_path, caplog):
    token = hub.token
    root = write_synthetic_root(tmp_path / "root", num_videos=2, num_frames=[9, 7])
    uri = f"hf://datasets/{REPO}"
    seen: list[str] = []  # every message and repr produced along the way
    with caplog.at_level(logging.DEBUG):
        push_to_hub(root, REPO, private=True, token=token, card_options=PARAMS)

        # The core view: the token travels with it to the processes that read.
        windows = VideoWindows(uri, token=token, **PARAMS)
        pickled = pickle.dumps(windows)
        assert token.encode() in pickled  # in clear: as README says, pickles carry it
        copy = pickle.loads(pickled)
        np.testing.assert_array_equal(copy[0]["video"], windows[0]["video"])
        seen += [repr(windows), repr(copy), str(windows.features)]

        # datasets, both modes: the map-style one downloads the root into the cache.
        for streaming in (False, True):
            ds = datasets.load_dataset(
                "hf_lvf", data_dir=uri, token=token, split="train", streaming=streaming, **PARAMS
            )
            rows = list(ds)
            assert len(rows) == len(windows)
            seen += [repr(ds), str(ds.features), repr(pickle.loads(pickle.dumps(ds)))]

        # Cards, written locally and pushed.
        card = tmp_path / "card.md"
        card.write_text(str(build_card(root, repo_id=REPO, window_length=3)))
        push_card(REPO, token=token, card_options=PARAMS)
        readme = HfApi(token=token).hf_hub_download(REPO, "README.md", repo_type="dataset")
        seen.append(Path(readme).read_text())

        # Errors that involve the token.
        for call in (
            lambda: VideoWindows(uri, revision="no-such-branch", token=token),
            lambda: VideoWindows(f"{uri}/missing", token=token),
            lambda: VideoWindows("hf://datasets/org/nope", token=token),
            lambda: VideoWindows(uri, token="hf_wrong_" + token),
        ):
            with pytest.raises((HubError, FileNotFoundError)) as info:
                call()
            seen.append(str(info.value))
        assert cli_main(["card", uri, "-o", str(tmp_path / "cli_card.md")]) == 2  # no token
    secret = token.encode()
    assert not [text for text in seen if token in text]
    assert token not in caplog.text
    # Nothing on disk: the cache (hub downloads and datasets' Arrow files), the root, cards.
    cache = Path(os.environ["HF_HOME"])
    assert _files_holding(cache, secret) == []
    assert _files_holding(tmp_path, secret) == []
    assert list(cache.rglob("*.arrow"))  # the map-style dataset was written there
