"""The pinned bfcl-eval data for the tests that read it (``bfcl_data_root``): its folder, or a skip
that prints why, a failure where ``AERIX_REQUIRE_BFCL`` is set (``make test-unit`` sets it, after
``make bfcl-data``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def bfcl_data_root() -> Path:
    from bench import bfcl_data

    found = bfcl_data.root()
    if found is None:
        reason = f"bfcl-eval {bfcl_data.VERSION} is not unpacked in {bfcl_data.cache()}: run `make bfcl-data`"
        if os.environ.get("AERIX_REQUIRE_BFCL"):
            pytest.fail(reason)
        print(f"\nskipped: {reason}", file=sys.stderr)
        pytest.skip(reason)
    return found
