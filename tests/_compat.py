"""Markers for client versions that cannot be tested against the local Hub."""

from __future__ import annotations

import huggingface_hub
import pytest

# huggingface_hub before 2.0 posts card YAML to https://huggingface.co/api/validate-yaml whatever
# HF_ENDPOINT says, so a card push cannot reach the local Hub (and this machine has no network).
needs_endpoint_validation = pytest.mark.skipif(
    int(huggingface_hub.__version__.split(".")[0]) < 2,
    reason="huggingface_hub < 2 validates cards at huggingface.co, ignoring HF_ENDPOINT",
)
