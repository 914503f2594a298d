"""How the files beside this one were made: run at commit 8f3ca4e, the last main before the
packages by layer, as ``python tests/data/before_layers/make.py /tmp/gen/old_main``.

``view.pkl`` is a pickled ``VideoWindows`` over a root at a fixed path (tests/test_compat.py
writes the same root there); ``features.pkl`` the map-style features; ``saved/`` a map-style
dataset saved with ``save_to_disk`` whose references name ``root/`` as it was at
``/tmp/gen/old_main/root``; ``row.pkl`` its row 1, as read then (pixels included).
"""

import pickle
import shutil
import sys
from pathlib import Path

if __name__ == "__main__":
    import datasets
    from hf_lvf.synthetic import write_synthetic_root

    import hf_lvf

    out = Path(sys.argv[1])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    fixed = Path("/tmp/hf_lvf-compat-fixture/root")
    shutil.rmtree(fixed.parent, ignore_errors=True)
    write_synthetic_root(fixed, num_videos=2, num_frames=8, frame_size=(16, 16))
    view = hf_lvf.VideoWindows(str(fixed), window_length=4, hop_size=2)
    (out / "view.pkl").write_bytes(pickle.dumps(view))
    root = out / "root"
    write_synthetic_root(root, num_videos=2, num_frames=8, frame_size=(16, 16))
    ds = datasets.load_dataset(
        "hf_lvf",
        data_dir=str(root),
        window_length=4,
        hop_size=2,
        split="train",
        cache_dir=str(out / "_cache"),
    )
    (out / "row.pkl").write_bytes(pickle.dumps(ds.with_format(None)[1]))
    (out / "features.pkl").write_bytes(pickle.dumps(ds.features))
    ds.save_to_disk(str(out / "saved"))
    shutil.rmtree(out / "_cache")
