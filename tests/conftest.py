"""Shared test fixtures: where ../shared lives, and skipping cleanly when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SDPA_SHARED_DIR", REPO.parent / "shared"))
TRACES = SHARED / "traces"
ANALYSIS_FOLDERS = SHARED / "analysis-folders"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def need(path: Path) -> Path:
    """Return path, or skip the calling test when the shared fixture is not there."""
    if not path.exists():
        pytest.skip(f"shared fixture not available: {path}")
    return path


@pytest.fixture
def traces_dir() -> Path:
    return need(TRACES)


@pytest.fixture
def analysis_folders_dir() -> Path:
    return need(ANALYSIS_FOLDERS)
