"""Issue 31: a full disk (ENOSPC in the middle of the file) and a read-only file system (EROFS when the temp file is
created) for every writer added since the last round: the streamed metrics JSON and roofline CSV (rank_findings),
the report written in pieces (render_report) and the ranks summary (analyze_ranks). Each must fail with one line
naming the file the user would get and the error, and leave what was there before byte for byte (no half-written
file, no temp file).

Faults are injected where the kernel would report them, as the other disk-full tests do (an OSError with that errno
from the write or the open), and only for the files under test: the rest of the run writes normally.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

import sdpa_analyzer.server.writers.atomic as atomic
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import FLASH_ROW, make_folder

FAULTS = {"full": (errno.ENOSPC, "No space left on device"), "read-only": (errno.EROFS, "Read-only file system")}


class _FullFile:
    """A file whose writes fail with ENOSPC once `room` bytes have been written (a disk that fills meanwhile)."""

    def __init__(self, fh: Any, room: int) -> None:
        self._fh = fh
        self._room = room

    def write(self, data: Any) -> int:
        if len(data) > self._room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)

    def __enter__(self) -> _FullFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()


def inject(monkeypatch: pytest.MonkeyPatch, fault: str, names: set[str]) -> None:
    """Make the atomic writes of files named in `names` meet `fault`."""
    real_open_temp = atomic._open_temp
    faulty: set[int] = set()

    def open_temp(tmp: str, dfd: int, target: Path) -> int:
        if target.name not in names:
            return real_open_temp(tmp, dfd, target)
        if fault == "read-only":
            raise OSError(*FAULTS[fault])
        fd = real_open_temp(tmp, dfd, target)
        faulty.add(fd)
        return fd

    class _Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def fdopen(fd: int, *args: Any, **kw: Any) -> Any:
            fh = os.fdopen(fd, *args, **kw)
            return _FullFile(fh, room=100) if fd in faulty else fh

    monkeypatch.setattr(atomic, "_open_temp", open_temp)
    monkeypatch.setattr(atomic, "os", _Os())


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def check_refusal(err: pytest.ExceptionInfo[ToolFailure], fault: str, target: str) -> None:
    msg = str(err.value)
    assert not err.value.internal and "\n" not in msg and len(msg) <= 300, msg
    assert FAULTS[fault][1] in msg and target in msg and ".tmp" not in msg, msg


@pytest.mark.parametrize("fault", list(FAULTS))
def test_rank_findings_streamed_metrics(fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    roots = DataRoots([tmp_path])
    make_folder(tmp_path, [FLASH_ROW, FLASH_ROW.replace("10,1000.0", "20,1000.0")])
    call("rank_findings", roots, output_dir="folder", category="sdpa_fwd", arch="h100-sxm")  # an earlier ranking
    before = files(tmp_path / "folder")
    inject(monkeypatch, fault, {"sdpa_fwd_metrics.json"})
    with pytest.raises(ToolFailure) as err:
        call("rank_findings", roots, output_dir="folder", category="sdpa_fwd", arch="mi300x")
    check_refusal(err, fault, "sdpa_fwd_metrics.json")
    assert files(tmp_path / "folder") == before


@pytest.mark.parametrize("fault", list(FAULTS))
def test_compute_roofline_csv(fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    roots = DataRoots([tmp_path])
    make_folder(tmp_path, [FLASH_ROW])
    call("compute_roofline", roots, output_dir="folder", category="sdpa_fwd", arch="h100-sxm")
    before = files(tmp_path / "folder")
    inject(monkeypatch, fault, {"sdpa_fwd_roofline.csv"})
    with pytest.raises(ToolFailure) as err:
        call("compute_roofline", roots, output_dir="folder", category="sdpa_fwd", arch="mi300x")
    check_refusal(err, fault, "sdpa_fwd_roofline.csv")
    assert files(tmp_path / "folder") == before


@pytest.mark.parametrize("fault", list(FAULTS))
def test_render_report_pieces(fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    roots = DataRoots([tmp_path])
    make_folder(tmp_path, [FLASH_ROW])
    call("render_report", roots, output_dir="folder", arch="h100-sxm")
    before = files(tmp_path / "folder")
    inject(monkeypatch, fault, {"report.html"})
    with pytest.raises(ToolFailure) as err:
        call("render_report", roots, output_dir="folder", arch="mi300x")
    check_refusal(err, fault, "report.html")
    assert files(tmp_path / "folder") == before


@pytest.mark.parametrize("fault", list(FAULTS))
def test_analyze_ranks_summary(fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary files are written after the ranks: a fault there is one line, and no summary file is left
    half-written or as a temp file (each is whole or absent)."""
    from sdpa_analyzer.server.ranks.summary import SHAPES_CSV, SUMMARY_CSV, SUMMARY_JSON

    traces = tmp_path / "traces"
    traces.mkdir()
    c = SyntheticAttentionCall(flavour="aten_flash", heads_q=8, seq_q=256, repeat=1, kernel_us=50.0)
    for r in range(2):
        info = {"backend": "nccl", "rank": r, "world_size": 2}
        write_trace(build_trace([c], seed=r, distributed_info=info), traces / f"rank_{r}.json.gz")
    roots = DataRoots([tmp_path])
    inject(monkeypatch, fault, {SUMMARY_CSV, SHAPES_CSV, SUMMARY_JSON})
    with pytest.raises(ToolFailure) as err:
        call("analyze_ranks", roots, trace_dir="traces", output_dir="out", workers=1, engine="pool")
    check_refusal(err, fault, SUMMARY_CSV)
    out = tmp_path / "out"
    for name in (SUMMARY_CSV, SHAPES_CSV, SUMMARY_JSON):
        assert not (out / name).exists(), name
    assert not list(out.rglob("*.tmp"))
