__version__ = "0.1.0"
"""The version of hf_lvf (also `hf-lvf --version`)."""
