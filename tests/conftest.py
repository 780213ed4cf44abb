"""Shared fixtures (the helpers themselves live in tests/support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import ANALYSIS_FOLDERS, SHARED_SKIP_REASON, TRACES, need


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def traces_dir() -> Path:
    return need(TRACES)


@pytest.fixture
def analysis_folders_dir() -> Path:
    return need(ANALYSIS_FOLDERS)


def pytest_unconfigure(config: pytest.Config) -> None:
    """One line saying why tests were skipped when they skipped for want of ../shared: the last line of the run, after
    the per-test skip list and the totals, where a reader looks."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    skipped = reporter.stats.get("skipped", [])
    shared = sum(1 for rep in skipped if SHARED_SKIP_REASON in str(rep.longrepr))
    if shared:
        reporter.write_line(f"{shared} of the skipped tests {SHARED_SKIP_REASON.replace('needs', 'need', 1)}")
