"""``python -m hf_lvf.cli``: the ``hf-lvf`` command."""

import sys

from .commands import main

if __name__ == "__main__":  # convert_videos' workers re-run the main module: guarded
    sys.exit(main())
