"""Shared fixtures. Statistical tests state their false-failure probability α."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
ADULT_DIR = Path(os.environ.get("BAYESPRIV_ADULT_DIR", ROOT.parent / "shared" / "data" / "adult"))


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """Directory of the UCI Adult data; skips the test when it is absent."""
    if not (ADULT_DIR / "adult.data").exists() or not (ADULT_DIR / "adult.test").exists():
        pytest.skip(f"UCI Adult data not found in {ADULT_DIR} (set BAYESPRIV_ADULT_DIR); it is never committed")
    return ADULT_DIR
