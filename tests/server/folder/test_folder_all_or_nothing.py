"""analyze_trace writes its folder all-or-nothing, and load_category_data tells a complete folder from an
interrupted or mixed one (server.folder.write, server.folder.manifest).

Failures are injected at each step (a full disk while staging, an interruption after the pending marker,
a kill of the process at a random moment, eight concurrent writers); after each, loading either gives the
data of one complete run, or an "analysis incomplete" error: never NO_DATA for a category that has calls,
never files of two traces mixed. Expected kernel times come from the synthetic traces' own specs.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.folder import write as folder_write
from sdpa_analyzer.server.folder.cache import clear as clear_cache
from sdpa_analyzer.server.folder.manifest import PENDING_MARKER, RUN_KEY, STAGE_PREFIX
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from sdpa_analyzer.server.writers import atomic
from tests.support import FIXTURES_WITH_OPS, REPO, copy_fixture, roots_for


def trace(tmp: Path, name: str, kernel_us: float, backward: bool = True) -> Path:
    """A trace with `repeat` causal forward calls of `kernel_us` each (and their backward when asked)."""
    c = SyntheticAttentionCall(
        flavour="aten_flash", batch=1, heads_q=8, seq_q=256, head_dim_qk=64, causal=True,
        kernel_us=kernel_us, repeat=4, with_backward=backward,
    )  # fmt: skip
    path = tmp / name
    write_trace(build_trace([c], gpu_name="NVIDIA H100 80GB HBM3"), path)
    return path


def load(roots: DataRoots, out: Path, cat: str) -> dict:
    clear_cache()
    return call("load_category_data", roots, output_dir=str(out), category=cat).model_dump()


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_complete_run_records_itself(tmp_path: Path) -> None:
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    res = call("analyze_trace", roots, trace_path=str(trace(tmp_path, "t.json", 100.0, backward=False)),
               output_dir=str(out))  # fmt: skip
    assert [c.name for c in res.categories] == ["sdpa_fwd"]
    manifest = json.loads((out / "category_data" / "category_manifest.json").read_text())
    run = manifest[RUN_KEY]
    assert run["complete"] is True and run["categories_with_data"] == ["sdpa_fwd"]
    assert set(run["analyzed_categories"]) == {"sdpa_fwd", "sdpa_bwd", "inferenceattention"}
    meta = json.loads((out / "metadata" / "sdpa_fwd_metadata.json").read_text())
    assert meta["sdpa_analyzer_run_id"] == run["run_id"]
    assert not (out / PENDING_MARKER).exists() and not list(out.glob(f"{STAGE_PREFIX}*"))
    assert not [p for p in out.rglob("*.tmp")]
    fwd = load(roots, out, "sdpa_fwd")
    assert fwd["status"] == "OK" and fwd["total_kernel_time_ms"] == pytest.approx(0.4)  # 4 × 100 µs
    assert load(roots, out, "sdpa_bwd")["status"] == "NO_DATA"  # analyzed, none found: a true NO_DATA


def test_full_disk_while_staging_leaves_the_old_folder_as_it_was(tmp_path: Path, monkeypatch) -> None:
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "a.json", 100.0)), output_dir=str(out))
    (out / "category_findings").mkdir()
    (out / "category_findings" / "sdpa_fwd_findings.md").write_text("prose the LLM wrote\n")
    before = files(out)
    written = []
    real_write = atomic.write_text_atomic

    def full_after_one(path, text, **kw):  # the second staged file hits a full disk
        if written:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        written.append(path)
        return real_write(path, text, **kw)

    monkeypatch.setattr(folder_write, "write_text_atomic", full_after_one)
    monkeypatch.setattr(folder_write, "write_json_atomic", lambda path, obj, **kw: full_after_one(path, "x", **kw))
    with pytest.raises(ToolFailure) as err:
        call("analyze_trace", roots, trace_path=str(trace(tmp_path, "b.json", 300.0)), output_dir=str(out))
    msg = str(err.value)
    assert "No space left on device" in msg and "free space" in msg and STAGE_PREFIX not in msg, msg
    assert "out/metadata/sdpa_fwd_metadata.json" in msg  # the file the user would get, not the staged copy
    assert files(out) == before  # nothing changed, no stage or temp file left
    monkeypatch.undo()
    assert load(roots, out, "sdpa_fwd")["total_kernel_time_ms"] == pytest.approx(0.4)


class Killed(BaseException):
    """Stands for SIGKILL: not an Exception, so nothing on the way handles it (finally blocks still run)."""


def test_interrupted_commit_reads_as_incomplete_never_as_no_data(tmp_path: Path, monkeypatch) -> None:
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "a.json", 100.0, backward=False)),
         output_dir=str(out))  # fmt: skip
    real_move = folder_write._move
    moved = []

    def killed_after_one(src, dst, r):
        if moved:
            raise Killed
        moved.append(dst)
        real_move(src, dst, r)

    monkeypatch.setattr(folder_write, "_move", killed_after_one)
    with pytest.raises(Killed):
        call("analyze_trace", roots, trace_path=str(trace(tmp_path, "b.json", 300.0)), output_dir=str(out))
    monkeypatch.undo()
    assert (out / PENDING_MARKER).exists()
    for cat in ("sdpa_fwd", "sdpa_bwd", "inferenceattention"):
        with pytest.raises(ToolFailure, match="analysis incomplete") as err:
            load(roots, out, cat)
        assert "re-run analyze_trace" in str(err.value) and "\n" not in str(err.value)
    # running it again repairs the folder: the new trace's data, both directions
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "b.json", 300.0)), output_dir=str(out))
    assert not (out / PENDING_MARKER).exists()
    assert load(roots, out, "sdpa_fwd")["total_kernel_time_ms"] == pytest.approx(1.2)  # 4 × 300 µs
    assert load(roots, out, "sdpa_bwd")["status"] == "OK"


def test_files_of_two_runs_are_not_read_as_one(tmp_path: Path) -> None:
    roots = DataRoots([tmp_path])
    a, b = tmp_path / "a", tmp_path / "b"
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "a.json", 100.0)), output_dir=str(a))
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "b.json", 300.0)), output_dir=str(b))
    (b / "metadata" / "sdpa_bwd_metadata.json").write_bytes((a / "metadata" / "sdpa_bwd_metadata.json").read_bytes())
    assert load(roots, b, "sdpa_fwd")["status"] == "OK"
    with pytest.raises(ToolFailure, match=r"analysis incomplete.*not from the run the manifest records"):
        load(roots, b, "sdpa_bwd")
    (b / "category_data" / "sdpa_bwd_ops.csv").unlink()
    with pytest.raises(ToolFailure, match=r"analysis incomplete.*sdpa_bwd_ops\.csv is missing"):
        load(roots, b, "sdpa_bwd")


def test_reanalysis_keeps_findings_and_other_writers_files(tmp_path: Path) -> None:
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "a.json", 100.0)), output_dir=str(out))
    findings = out / "category_findings" / "sdpa_fwd_findings.md"
    findings.parent.mkdir()
    findings.write_text("prose the LLM wrote\n")
    (out / "category_data" / "gemm_ops.csv").write_text("an orchestrator's category\n")
    manifest_path = out / "category_data" / "category_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["categories"].append({"name": "gemm", "csv_file": "./category_data/gemm_ops.csv"})
    manifest_path.write_text(json.dumps(manifest))
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "b.json", 300.0, backward=False)),
         output_dir=str(out))  # fmt: skip
    assert findings.read_text() == "prose the LLM wrote\n"
    assert (out / "category_data" / "gemm_ops.csv").read_text() == "an orchestrator's category\n"
    names = [c["name"] for c in json.loads(manifest_path.read_text())["categories"]]
    assert names == ["gemm", "sdpa_fwd"]
    assert not (out / "category_data" / "sdpa_bwd_ops.csv").exists()  # the old trace's backward is gone
    assert load(roots, out, "sdpa_bwd")["status"] == "NO_DATA"


@pytest.mark.parametrize("name", [*FIXTURES_WITH_OPS[:4], "cmp_test02_attention_both_unfused_trace1_standalone"])
def test_orchestrator_folders_without_a_run_record_load_as_before(tmp_path: Path, name: str) -> None:
    folder = copy_fixture(name, tmp_path)
    roots = DataRoots(roots_for(tmp_path))
    manifest = json.loads((folder / "category_data" / "category_manifest.json").read_text())
    assert RUN_KEY not in manifest
    listed = {c["name"] for c in manifest.get("categories", [])}
    for cat in ("sdpa_fwd", "sdpa_bwd", "inferenceattention"):
        has_csv = (folder / "category_data" / f"{cat}_ops.csv").exists()
        res = load(roots, folder, cat)
        assert res["status"] == ("OK" if has_csv else "NO_DATA"), (cat, listed)


def test_stale_stage_and_temp_files_are_swept(tmp_path: Path) -> None:
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "a.json", 100.0)), output_dir=str(out))
    old = time.time() - 3600
    stage = out / f"{STAGE_PREFIX}0123456789abcdef"
    (stage / "category_data").mkdir(parents=True)
    (stage / "category_data" / "sdpa_fwd_ops.csv").write_bytes(b"x" * 1_000_000)
    dead_tmp = out / "category_data" / ".sdpa_fwd_ops.csv.k3x9a0_b.tmp"  # a killed writer's, any version
    dead_tmp.write_bytes(b"y" * 1_000_000)
    live_tmp = out / "category_data" / ".sdpa_fwd_metrics.json.abcdefgh.tmp"  # a writer still at work
    live_tmp.write_bytes(b"z")
    fresh_tmp = out / "category_data" / ".sdpa_bwd_ops.csv.12345678.tmp"  # just created, lock not taken yet
    fresh_tmp.write_bytes(b"w")
    not_ours = out / "category_data" / ".notes.tmp"
    not_ours.write_text("someone else's")
    for p in (stage, stage / "category_data", dead_tmp, live_tmp, not_ours):
        os.utime(p, (old, old))
    with open(live_tmp, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        call("analyze_trace", roots, trace_path=str(trace(tmp_path, "b.json", 200.0)), output_dir=str(out))
        assert not stage.exists() and not dead_tmp.exists()
        assert live_tmp.exists() and fresh_tmp.exists() and not_ours.exists()


def test_eight_concurrent_writers_leave_one_complete_run(tmp_path: Path) -> None:
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    traces = {float(us): trace(tmp_path, f"t{us}.json", float(us), backward=bool(us % 200)) for us in
              range(100, 900, 100)}  # fmt: skip
    errors: list[BaseException] = []

    def run(path: Path) -> None:
        try:
            call("analyze_trace", roots, trace_path=str(path), output_dir=str(out))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(p,)) for p in traces.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    manifest = json.loads((out / "category_data" / "category_manifest.json").read_text())
    winner = float(Path(manifest["trace_path"]).stem[1:])
    fwd = load(roots, out, "sdpa_fwd")
    assert fwd["total_kernel_time_ms"] == pytest.approx(4 * winner / 1000)  # the winner's own data
    bwd = load(roots, out, "sdpa_bwd")
    assert bwd["status"] == ("OK" if winner % 200 else "NO_DATA")
    assert not (out / PENDING_MARKER).exists() and not list(out.glob(f"{STAGE_PREFIX}*"))


PAUSE_HOOK = """
import os, time
_at = os.environ.get("SDPA_TEST_PAUSE_AT")
if _at:
    import sdpa_analyzer.server.folder.write as _w
    _name, _nth = _at.split(":")
    _real, _count = getattr(_w, _name), [0]

    def _paused(*args, **kwargs):
        _count[0] += 1
        if _count[0] == int(_nth):
            open(os.environ["SDPA_TEST_PAUSE_MARK"], "w").close()
            time.sleep(600)
        return _real(*args, **kwargs)

    setattr(_w, _name, _paused)
"""
# where a real analyze process is killed: the n-th call of a step of the folder write (a staged file, the staged
# metadata, the pending marker, each move into place, the manifest that commits: the 4th JSON of this trace's run);
# the last point is never reached, so that run completes
KILL_POINTS = ["write_text_atomic:1", "write_json_atomic:1", "write_json_atomic:3", "_move:1", "_move:3",
               "write_json_atomic:4", "write_json_atomic:99"]  # fmt: skip


@pytest.mark.slow
def test_sigkill_at_any_moment_never_reads_as_no_data(tmp_path: Path) -> None:
    """Kill a real analyze process (SIGKILL) at chosen steps of its folder write, each reached for sure: the process
    signals it has got there and waits, and only then is it killed (no guess from how long a run takes). Whatever
    is left either loads as one complete run (the old one or the new one) or says the analysis is incomplete."""
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    big = SyntheticAttentionCall(flavour="aten_flash", batch=1, heads_q=8, seq_q=256, head_dim_qk=64,
                                 kernel_us=100.0, repeat=200, with_backward=True)  # fmt: skip
    path = tmp_path / "big.json"
    write_trace(build_trace([big], gpu_name="NVIDIA H100 80GB HBM3"), path)
    small = trace(tmp_path, "small.json", 50.0)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PAUSE_HOOK)
    cmd = [sys.executable, "-m", "sdpa_analyzer.server.cli.main", "analyze", str(path), "-o", str(out), "--root", str(tmp_path)]
    outcomes = set()
    for point in KILL_POINTS:
        call("analyze_trace", roots, trace_path=str(small), output_dir=str(out))  # the old, complete run
        mark = tmp_path / f"paused-{point}"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")]),
               "SDPA_TEST_PAUSE_AT": point, "SDPA_TEST_PAUSE_MARK": str(mark)}  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env)
        deadline = time.monotonic() + 300  # a generous wait for the step (or for a run that never reaches it)
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        paused = mark.exists()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert paused or proc.returncode == 0, f"{point}: exited with {proc.returncode} before the step"
        for cat in ("sdpa_fwd", "sdpa_bwd"):
            try:
                res = load(roots, out, cat)
            except ToolFailure as exc:
                assert "analysis incomplete" in str(exc), exc
                outcomes.add("incomplete")
                continue
            assert res["status"] == "OK", res  # both traces have both directions: never NO_DATA
            assert res["instances"] in (4, 200)  # one run's data, not a mixture
            outcomes.add(res["instances"])
    assert {"incomplete", 4, 200} <= outcomes  # killed after the marker, before it, and never


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_written_files_follow_the_umask(tmp_path: Path, umask: int) -> None:
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    old = os.umask(umask)
    try:
        call("analyze_trace", roots, trace_path=str(trace(tmp_path, "a.json", 100.0)), output_dir=str(out))
        for tool, extra in (("rank_findings", {}), ("plot_roofline", {}), ("render_findings_template", {})):
            call(tool, roots, output_dir=str(out), category="sdpa_fwd", **extra)
        call("render_report", roots, output_dir=str(out))
    finally:
        os.umask(old)
    written = [p for p in out.rglob("*") if p.is_file()]
    assert len(written) >= 10
    for p in written:
        assert p.stat().st_mode & 0o777 == 0o666 & ~umask, (p, oct(p.stat().st_mode))


def test_incomplete_message_names_the_folder(tmp_path: Path) -> None:
    roots = DataRoots([tmp_path])
    out = tmp_path / "out"
    call("analyze_trace", roots, trace_path=str(trace(tmp_path, "a.json", 100.0)), output_dir=str(out))
    (out / PENDING_MARKER).write_text(json.dumps({"run_id": "someone-else"}))
    with pytest.raises(ToolFailure) as err:
        load(roots, out, "sdpa_fwd")
    assert str(out) in str(err.value) and len(str(err.value)) <= 300
    assert isinstance(InputError("x"), ValueError)  # the error type the CLI turns into exit 2
