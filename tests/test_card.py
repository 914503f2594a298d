"""Dataset cards: Hub metadata, the rendered body, statistics, the preview, user sections."""

from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import yaml
from huggingface_hub import DatasetCard
from PIL import Image

from hf_lvf import RootNotFoundError, VideoWindows, build_card
from hf_lvf.card import (
    CardRoot,
    card_for_roots,
    preview_filename,
    render_preview,
    user_sections,
    write_card,
)
from hf_lvf.cli import main
from hf_lvf.layout import read_layout
from hf_lvf.write import write_frames
from hf_lvf.write.synthetic import synthetic_frames, write_synthetic_root

# The Hub's accepted size categories (https://huggingface.co/docs/hub/datasets-cards).
HUB_SIZE_CATEGORIES = {
    "n<1K",
    "1K<n<10K",
    "10K<n<100K",
    "100K<n<1M",
    "1M<n<10M",
    "10M<n<100M",
    "100M<n<1B",
    "1B<n<10B",
    "10B<n<100B",
    "100B<n<1T",
    "n>1T",
}


def _videos(specs):
    """``(key, num_frames, (H, W), metadata)`` -> what ``write_frames`` takes."""
    for i, (key, num_frames, (height, width), metadata) in enumerate(specs):
        yield key, synthetic_frames(num_frames, height, width, seed=i), metadata


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> Path:
    """3 videos of 40 frames, 32x48, labels "cat"/"dog", fps recorded, two splits."""
    root = tmp_path_factory.mktemp("card") / "clips"
    specs = [
        ("a.mp4", 40, (32, 48), {"label": "cat", "split": "train", "fps": 10.0}),
        ("b.mp4", 40, (32, 48), {"label": "dog", "split": "train", "fps": 10.0}),
        ("c.mp4", 40, (32, 48), {"label": "cat", "split": "test", "fps": 20.0}),
    ]
    return write_frames(root, _videos(specs))


def _yaml(card: DatasetCard) -> dict:
    text = str(card)
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_metadata_is_valid_hub_yaml(clips):
    card = build_card(clips, repo_id="org/clips", license="cc-by-4.0", tags=["kinetics"])
    reparsed = DatasetCard(str(card)).data.to_dict()  # what the Hub and huggingface_hub parse
    assert reparsed == _yaml(card)
    assert reparsed["license"] == "cc-by-4.0"
    assert reparsed["task_categories"] == ["video-classification"]
    assert reparsed["tags"] == ["lance", "video", "hf_lvf", "lance-video-frames", "kinetics"]
    assert reparsed["size_categories"] == ["n<1K"]
    assert set(reparsed["size_categories"]) <= HUB_SIZE_CATEGORIES
    assert reparsed["pretty_name"] == "clips"
    assert reparsed["hf_lvf"] == {
        "window_length": 16,
        "frame_skip": 0,
        "hop_size": 16,
        "label_field": "label",
    }


def test_defaults_without_labels_or_license(tmp_path):
    root = write_synthetic_root(tmp_path / "my_videos", num_videos=2, num_frames=20)
    write_frames(tmp_path / "plain", _videos([("x", 20, (16, 16), None)]))
    data = DatasetCard(str(build_card(root))).data.to_dict()
    assert data["license"] == "unknown"
    assert data["pretty_name"] == "my videos"
    plain = DatasetCard(str(build_card(tmp_path / "plain"))).data.to_dict()
    assert plain["task_categories"] == ["other"]
    assert "The videos carry no `label` field." in str(build_card(tmp_path / "plain"))


def test_body_names_the_load_calls_features_and_statistics(clips):
    text = str(
        build_card(clips, repo_id="org/clips", path_in_repo="videos", window_length=8, hop_size=4)
    )
    assert (
        "windows = VideoWindows(\n"
        '    "hf://datasets/org/clips/videos",\n'
        '    revision="main",  # a branch, tag or commit sha; resolved once\n'
        "    window_length=8,\n"
        "    hop_size=4,\n"
        ")"
    ) in text
    download = (
        "ds = load_dataset(\n"
        '    "hf_lvf",\n'
        '    data_files="hf://datasets/org/clips@main/videos/**",\n'
        "    window_length=8,\n"
        "    hop_size=4,\n"
    )
    assert download + ")" in text
    assert download + "    streaming=True,\n)" in text
    # Window parameters and features.
    assert "| `window_length` | 8 | frames per sample |" in text
    assert "| `hop_size` | 4 |" in text
    assert "With these parameters the dataset has **27** windows." in text  # 3 * ((40-8)//4+1)
    assert "| `video` | `Array4D((8, 32, 48, 3), uint8)` | the frames, RGB |" in text
    assert "| `frame_indices` | `List(int32, length=8)` |" in text
    assert "| `label` | `string` | the video's label |" in text
    assert "| `fps` | `float64` | frames per second of the source video |" in text
    # Statistics: 3 videos, 120 frames, 10+10 s at 4+4 s... (40/10 + 40/10 + 40/20 = 10 s).
    assert "| videos | frames | frames per video | samples | frame size (H×W) | duration |" in text
    assert "| 3 | 120 | 40 | 27 | 32×48 | 10.0 s |" in text
    assert "Durations use the `fps` recorded for every video (10, 20 fps)." in text
    assert "| `label` | train | test | total |" in text
    assert "| cat | 1 | 1 | 2 |" in text
    assert "| dog | 1 | 0 | 1 |" in text
    assert "| **total** | 2 | 1 | 3 |" in text
    assert "Other per-video fields: `split` (string), `fps` (float64)." in text
    # The preview sits beside the card, referenced by a relative path.
    assert "](hf_lvf_preview-videos.png)" in text
    assert "** is a video dataset of 3 videos (120 frames, 10.0 s)" in text


def test_feature_table_matches_video_windows(clips):
    text = str(build_card(clips, window_length=5, hop_size=2))
    features = VideoWindows(clips, window_length=5, hop_size=2).features
    table = text.split("Each sample is a dict:")[1].split("## Statistics")[0]
    names = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert names == list(features)


def test_mixed_sizes_and_unknown_fps(tmp_path):
    specs = [
        ("a", 30, (32, 48), {"label": 1}),
        ("b", 30, (32, 48), {"label": 0, "fps": 30}),
        ("c", 12, (20, 20), {"label": 1}),
    ]
    root = write_frames(tmp_path / "mixed", _videos(specs))
    text = str(build_card(root, window_length=4))
    # The load code names the most common size, which VideoWindows needs for mixed sizes, and
    # since the aspect ratios differ, a center crop rather than a stretch.
    assert '    frame_size=(32, 48),\n    crop="center",\n' in text
    assert "| `frame_size` | (32, 48) |" in text
    assert (
        "| 3 | 72 | 12–30 | 17 | 32×48 (2 videos), 20×20 (1 video) | 1.0 s (1 of 3 videos) |"
        in text
    )
    assert "Durations use the `fps` recorded for 1 of 3 videos (30 fps)." in text
    assert "| `label` | train |\n| --- | --- |\n| 0 | 1 |\n| 1 | 2 |\n| **total** | 3 |\n" in text
    # the documented call works
    VideoWindows(root, window_length=4, frame_size=(32, 48), crop="center")


def test_mixed_sizes_of_one_aspect_ratio_are_resized_not_cropped(tmp_path):
    specs = [("a", 8, (32, 48), {}), ("b", 8, (32, 48), {}), ("c", 8, (16, 24), {})]
    text = str(build_card(write_frames(tmp_path / "r", _videos(specs)), window_length=4))
    assert "    frame_size=(32, 48),\n" in text and "crop=" not in text


def test_user_sections_and_metadata_survive_regeneration(clips):
    first = str(build_card(clips, repo_id="org/clips", window_length=8, license="mit"))
    assert set(user_sections(first)) == {"description", "license", "citation"}
    edited = first.replace(
        user_sections(first)["description"], "Clips of cats and dogs.\n\n| my | table |"
    ).replace(user_sections(first)["citation"], "@misc{clips, title={Clips {{ not jinja }}}}")
    edited = edited.replace("license: mit\n", "license: mit\nlanguage:\n- en\n").replace(
        "- lance-video-frames\n", "- lance-video-frames\n- pets\n"
    )
    again = build_card(clips, repo_id="org/clips", existing=edited, hop_size=2)
    text = str(again)
    sections = user_sections(text)
    assert sections["description"] == "Clips of cats and dogs.\n\n| my | table |"
    assert sections["citation"] == "@misc{clips, title={Clips {{ not jinja }}}}"
    assert sections["license"] == user_sections(first)["license"]
    data = again.data.to_dict()
    assert data["language"] == ["en"]  # a field the card does not compute is kept
    assert data["license"] == "mit"  # kept when not passed again
    assert "pets" in data["tags"] and "lance" in data["tags"]
    # The window length recorded by the first card is reused; hop_size is the new one.
    assert data["hf_lvf"]["window_length"] == 8 and data["hf_lvf"]["hop_size"] == 2
    assert "| `hop_size` | 2 |" in text
    # Regenerating once more changes nothing.
    assert str(build_card(clips, repo_id="org/clips", existing=text)) == text


def test_write_card_keeps_an_existing_readme(clips, tmp_path):
    out = tmp_path / "card" / "README.md"
    write_card(clips, out, repo_id="org/clips")
    assert (out.parent / "hf_lvf_preview.png").is_file()
    text = out.read_text()
    out.write_text(text.replace(user_sections(text)["description"], "Mine."))
    write_card(clips, out, repo_id="org/clips", window_length=4)
    assert user_sections(out.read_text())["description"] == "Mine."
    assert "    window_length=4,\n" in out.read_text()


def test_preview_is_a_contact_sheet_of_real_frames(clips):
    png = render_preview(clips, max_videos=2, frames_per_video=3)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    tile_w = 128  # 2 x 48, clamped to [128, 192]
    tile_h = round(tile_w * 32 / 48)
    gap = 4
    assert image.size == (3 * (tile_w + gap) + gap, 2 * (tile_h + gap) + gap)
    sheet = np.asarray(image.convert("RGB"))
    # Row 1 is the last video (c.mp4), columns frames 0, 20 and 39, decoded like VideoWindows does.
    w = VideoWindows(clips, window_length=1, frame_size=(tile_h, tile_w))
    first = w.plan.first_window[2]
    expected = w.read_video([first, first + 20, first + 39])[:, 0]
    for col in range(3):
        y, x = gap + (tile_h + gap), gap + col * (tile_w + gap)
        np.testing.assert_array_equal(sheet[y : y + tile_h, x : x + tile_w], expected[col])


def test_preview_filenames():
    assert preview_filename(None) == "hf_lvf_preview.png"
    assert preview_filename("/train/") == "hf_lvf_preview-train.png"
    assert preview_filename("videos/train set") == "hf_lvf_preview-videos-train-set.png"


def test_several_roots_in_one_card(clips, tmp_path):
    specs = [("t1", 20, (32, 48), {"label": "dog"}), ("t2", 20, (32, 48), {"label": "dog"})]
    test_root = write_frames(tmp_path / "t", _videos(specs))
    roots = [
        CardRoot(read_layout(str(test_root)), "data/test", "test"),
        CardRoot(read_layout(str(clips)), "data/train", "train", preview_filename("data/train")),
    ]
    text = str(card_for_roots(roots, {"repo_id": "org/pets", "window_length": 4}))
    assert (
        "    data_files={\n"
        '        "train": "hf://datasets/org/pets@main/data/train/**",\n'
        '        "test": "hf://datasets/org/pets@main/data/test/**",\n'
        "    },\n"
    ) in text
    assert "| root | videos | frames |" in text
    assert "| `data/train` | 3 | 120 |" in text and "| `data/test` | 2 | 40 |" in text
    # Videos of the test root have no split field: they count under the root's split.
    assert "| `label` | train | test | total |" in text
    assert "| cat | 1 | 1 | 2 |\n| dog | 1 | 2 | 3 |\n| **total** | 2 | 3 | 5 |\n" in text
    assert text.count("![") == 1  # only the train root has a preview


def test_errors(clips, tmp_path):
    with pytest.raises(RootNotFoundError, match="is not a lance-video-frames root"):
        build_card(tmp_path)
    with pytest.raises(ValueError, match="window_length must be >= 1, got 0"):
        build_card(clips, window_length=0)
    with pytest.raises(ValueError, match="repo_id must be 'namespace/name', got 'clips'"):
        build_card(clips, repo_id="clips")
    with pytest.raises(ValueError, match="license must be a non-empty string"):
        build_card(clips, license="")
    with pytest.raises(ValueError, match="path_in_repo must be a folder path"):
        build_card(clips, path_in_repo="a/../b")
    with pytest.raises(ValueError, match="max_videos must be an integer >= 1, got 0"):
        render_preview(clips, max_videos=0)


def test_a_window_longer_than_every_video_is_stated_not_raised(clips):
    text = str(build_card(clips, window_length=41, hop_size=2))
    assert (
        "the dataset has **0** windows. No video is long enough for one window of "
        "`window_length=41`, `frame_skip=0` (a window spans 41 frames; the longest video has "
        "40 frames): pass a smaller `window_length`"
    ) in text
    data = DatasetCard(text).data.to_dict()
    assert data["hf_lvf"]["window_length"] == 41  # what was asked is what the card says
    assert data["size_categories"] == ["n<1K"]


@pytest.mark.parametrize(
    ("lengths", "want"),
    [((1, 1, 1), 1), ((3, 5, 40), 5), ((2, 40, 40), 16), ((40,), 16), ((1, 2, 2), 2)],
)
def test_default_window_length_fits_the_videos(tmp_path, lengths, want):
    specs = [(f"v{i}", n, (8, 8), None) for i, n in enumerate(lengths)]
    root = write_frames(tmp_path / "root", _videos(specs))
    card = build_card(root)
    params = DatasetCard(str(card)).data.to_dict()["hf_lvf"]
    assert (params["window_length"], params["hop_size"]) == (want, want)
    num_windows = len(VideoWindows(root, window_length=want, hop_size=want))
    assert num_windows > 0
    assert f"the dataset has **{num_windows:,}** windows. Each sample" in str(card)
    # A recorded window_length that no video is long enough for any more is refitted...
    old = build_card(root, window_length=3, hop_size=1)
    if max(lengths) < 3:
        assert DatasetCard(str(build_card(root, existing=old))).data.hf_lvf == params
    else:  # ...one that fits is kept.
        kept = DatasetCard(str(build_card(root, existing=old))).data.hf_lvf
        assert (kept["window_length"], kept["hop_size"]) == (3, 1)


def test_plural_forms(tmp_path):
    root = write_frames(tmp_path / "one", _videos([("only", 1, (8, 8), {"fps": 1})]))
    text = str(build_card(root))
    assert "is a video dataset of 1 video (1 frame, 1.0 s)" in text
    assert "Frames of the video of the root," in text
    assert " 1 videos" not in text and " 1 frames" not in text
    two = write_synthetic_root(tmp_path / "two", num_videos=2, num_frames=[3, 4])
    assert "Frames of the 2 videos of the root," in str(build_card(two))


def test_frames_metadata_lets_datasets_type_the_frames(clips, tmp_path):
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs

    two = write_synthetic_root(tmp_path / "two", num_videos=2, num_frames=[3, 4])
    roots = [
        CardRoot(read_layout(str(clips)), path_in_repo="videos/train", split="train"),
        CardRoot(read_layout(str(two)), path_in_repo="videos/my-test", split="my-test"),
        CardRoot(read_layout(str(two)), path_in_repo="more/train", split="train"),
    ]
    user_config = {"config_name": "mine", "data_files": "extra/*.csv"}
    old = card_for_roots(roots[:1], {"repo_id": "org/clips"})
    old.data.configs = [*old.data.configs, user_config]
    card = DatasetCard(str(card_for_roots(roots, {"repo_id": "org/clips"}, existing=old)))
    configs = MetadataConfigs.from_dataset_card_data(card.data)
    assert configs["default"]["data_files"] == [
        {
            "split": "train",
            "path": [
                *(f"more/train/{p}" for p in ("_versions/*", "data/*", "_deletions/*")),
                *(f"videos/train/{p}" for p in ("_versions/*", "data/*", "_deletions/*")),
            ],
        },
        {
            "split": "my_test",  # a name datasets accepts
            "path": [f"videos/my-test/{p}" for p in ("_versions/*", "data/*", "_deletions/*")],
        },
    ]
    assert configs["mine"] == {"data_files": "extra/*.csv"}  # the user's own config is kept
    infos = DatasetInfosDict.from_dataset_card_data(card.data)
    assert str(infos["default"].features) == (
        "{'video_id': Value('int32'), 'frame_idx': Value('int32'), "
        "'bytes': Image(mode=None, decode=True)}"
    )
    assert 'frames = load_dataset("org/clips", split="train")' in card.text
    assert "each split (`train`, `my_test`) as one row per frame" in card.text


def test_template_ships_with_the_package():
    packaged = resources.files("hf_lvf") / "cards" / "dataset_card.md"
    source = Path(__file__).resolve().parents[1] / "cards" / "dataset_card.md"
    assert packaged.read_text() == source.read_text()
    assert "hf_lvf:user:begin description" in packaged.read_text()


def test_cli_card(clips, tmp_path, capsys):
    out = tmp_path / "README.md"
    assert (
        main(["card", str(clips), "-o", str(out), "--repo-id", "org/clips", "--license", "mit"])
        == 0
    )
    printed = capsys.readouterr().out
    assert f"card     {out}" in printed
    assert (tmp_path / "hf_lvf_preview.png").is_file()
    assert DatasetCard(out.read_text()).data.license == "mit"
    assert main(["card", str(tmp_path / "nope"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-lvf: error: ") and "is not a lance-video-frames root" in err
    assert err.count("\n") == 1
