"""analyze_ranks and load_rank_summary: rank folders, the cross-rank summary, bad ranks, both engines.

The traces are built with a known straggler (rank 2's forward kernel takes 300 µs where the others take 200 µs)
and a shape only rank 3 runs; every expected number is recomputed here from the rank folders' own files (ops
CSV, manifest) or from the single-trace tools, never taken from the summary under test.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from mcp import Client

from sdpa_analyzer.server.cli.main import main
from sdpa_analyzer.server.folder.manifest import RUN_ID_KEY, RUN_KEY
from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.ranks import engines
from sdpa_analyzer.server.ranks.discover import plan_ranks, rank_from_name
from sdpa_analyzer.server.ranks.header import read_header_prefix
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import die_on_rank_1, stdio_server

WORLD = 4
SLOW_RANK, SLOW_US, BASE_US = 2, 300.0, 200.0
EXTRA_SHAPE_RANK = 3
KERNEL_SUM = "Kernel Time (µs)_sum"


def _calls(rank: int) -> list[SyntheticAttentionCall]:
    main_call = SyntheticAttentionCall(
        flavour="aten_flash",
        heads_q=16,
        seq_q=1024,
        causal=True,
        repeat=4,
        kernel_us=SLOW_US if rank == SLOW_RANK else BASE_US,
        with_backward=True,
    )
    if rank != EXTRA_SHAPE_RANK:
        return [main_call]
    return [main_call, SyntheticAttentionCall(flavour="aten_flash", heads_q=16, seq_q=512, repeat=2, kernel_us=40.0)]


def _dist(rank: int, world: int = WORLD) -> dict[str, Any]:
    return {"backend": "nccl", "rank": rank, "world_size": world}


def write_job(folder: Path, world: int = WORLD, named: bool = False) -> list[Path]:
    """One trace per rank; `named`: rank only in the file name (no distributedInfo), written in reverse order."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(world):
        info = None if named else _dist(rank, world)
        name = f"job_rank{rank}.json.gz" if named else f"t{rank}.pt.trace.json.gz"
        paths.append(write_trace(build_trace(_calls(rank), seed=rank, distributed_info=info), folder / name))
    return paths


def _stable(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without what depends on how it ran (engine, workers, timings, memory)."""
    s = {k: v for k, v in summary.items() if k not in ("engine", "workers", "dask_address", "seconds")}
    timing = ("seconds", "cpu_seconds", "peak_rss_mb")
    s["ranks"] = [{k: v for k, v in r.items() if k not in timing} for r in s["ranks"]]
    return s


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The 4-rank job analyzed once with the process pool (2 workers)."""
    base = tmp_path_factory.mktemp("job")
    traces = write_job(base / "traces")
    roots = DataRoots([base])
    seen: list[tuple[float, float, str]] = []
    res = call(
        "analyze_ranks",
        roots,
        progress=lambda d, t, m: seen.append((d, t, m)),
        trace_dir=str(base / "traces"),
        output_dir=str(base / "out"),
        workers=2,
    )
    summary = json.loads((base / "out" / "ranks_summary.json").read_text())
    return {"base": base, "traces": traces, "roots": roots, "result": res, "summary": summary, "progress": seen}


def _without_run(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in (RUN_KEY, RUN_ID_KEY)}


def _ops(folder: Path, category: str) -> pd.DataFrame:
    return pd.read_csv(folder / "category_data" / f"{category}_ops.csv")


def _e2e_ms(folder: Path) -> float:
    manifest = json.loads((folder / "category_data" / "category_manifest.json").read_text())
    return float(manifest["gpu_utilization"]["total_time_ms"])


# ---------------------------------------------------------------------------------------------- rank folders
def test_each_rank_folder_is_what_analyze_writes(job: dict[str, Any]) -> None:
    base, roots = job["base"], job["roots"]
    for rank, trace in enumerate(job["traces"]):
        ref = base / "ref" / f"rank_{rank}"  # same depth as out/rank_<r>: the relative trace_path is the same
        call("analyze_trace", roots, trace_path=str(trace), output_dir=str(ref))
        ours = base / "out" / f"rank_{rank}"
        files = sorted(p.relative_to(ref) for p in ref.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
        for f in files:
            if f.suffix != ".json":
                assert (ours / f).read_bytes() == (ref / f).read_bytes(), f
                continue
            # each run records its own id (and the time it ran): the rest is the same byte for byte
            mine, theirs = (json.loads((d / f).read_text()) for d in (ours, ref))
            assert _without_run(mine) == _without_run(theirs), f
            assert (RUN_KEY in mine) == (RUN_KEY in theirs) and (RUN_ID_KEY in mine) == (RUN_ID_KEY in theirs), f
    assert not [p.name for p in (base / "out").iterdir() if p.name.startswith(".")]  # no staging left behind


def test_per_rank_totals_match_the_rank_folders(job: dict[str, Any]) -> None:
    base, roots, summary = job["base"], job["roots"], job["summary"]
    got = {(r["rank"], r["category"]): r for r in summary["rank_categories"]}
    assert len(got) == WORLD * 2
    for rank in range(WORLD):
        folder = base / "out" / f"rank_{rank}"
        for category in ("sdpa_fwd", "sdpa_bwd"):
            ops = _ops(folder, category)
            kernel_ms = ops[KERNEL_SUM].sum() / 1000.0
            row = got[(rank, category)]
            assert row["kernel_time_ms"] == pytest.approx(kernel_ms, rel=1e-6)
            assert row["calls"] == int(ops["operation_count"].sum())
            assert row["percent_of_e2e"] == pytest.approx(100.0 * kernel_ms / _e2e_ms(folder), rel=1e-3)
            roof = call("compute_roofline", roots, output_dir=str(folder), category=category)
            assert row["weighted_efficiency_pct"] == roof.weighted_efficiency_pct
    csv = pd.read_csv(base / "out" / "ranks_summary.csv")
    assert len(csv) == WORLD * 2 and set(csv["status"]) == {"OK"}
    assert csv.groupby("rank")["kernel_time_ms"].sum().to_dict() == pytest.approx(
        {r: sum(got[(r, c)]["kernel_time_ms"] for c in ("sdpa_fwd", "sdpa_bwd")) for r in range(WORLD)}
    )


def test_the_slow_rank_is_the_straggler_with_its_numbers(job: dict[str, Any]) -> None:
    base, summary = job["base"], job["summary"]
    # the main forward shape: time per rank from each folder's CSV (rank 3's second shape has its own row)
    per_rank = {}
    for rank in range(WORLD):
        ops = _ops(base / "out" / f"rank_{rank}", "sdpa_fwd")
        per_rank[rank] = ops.loc[ops["Input Dims"].str.contains("1024"), KERNEL_SUM].sum() / 1000.0
    median = statistics.median(per_rank.values())
    fwd = [s for s in summary["stragglers"] if s["kind"] == "shape" and s["category"] == "sdpa_fwd"]
    assert [s["rank"] for s in fwd] == [SLOW_RANK]
    s = fwd[0]
    assert s["time_ms"] == pytest.approx(per_rank[SLOW_RANK], rel=1e-6)
    assert s["median_ms"] == pytest.approx(median, rel=1e-6)
    assert s["ratio"] == pytest.approx(per_rank[SLOW_RANK] / median, rel=1e-3) and s["ratio"] > 1.4
    assert s["excess_ms"] == pytest.approx(per_rank[SLOW_RANK] - median, rel=1e-6)
    e2e = _e2e_ms(base / "out" / f"rank_{SLOW_RANK}")
    assert s["percent_of_rank_e2e"] == pytest.approx(100.0 * (per_rank[SLOW_RANK] - median) / e2e, rel=1e-3)
    assert s["calls"] == s["median_calls"] == 4 and s["efficiency_pct"] < s["median_efficiency_pct"]
    assert s["rank_folder"] == f"rank_{SLOW_RANK}" and s["ranks_compared"] == WORLD
    # only the slow rank straggles, in both directions and for both categories; the list is ranked
    assert {x["rank"] for x in summary["stragglers"]} == {SLOW_RANK}
    assert {(x["kind"], x["category"]) for x in summary["stragglers"]} == {
        (k, c) for k in ("shape", "category") for c in ("sdpa_fwd", "sdpa_bwd")
    }
    shares = [x["percent_of_rank_e2e"] for x in summary["stragglers"]]
    assert shares == sorted(shares, reverse=True) and [x["position"] for x in summary["stragglers"]] == [1, 2, 3, 4]
    cat = {c["category"]: c for c in summary["categories"]}["sdpa_fwd"]
    assert cat["slowest_rank"] == SLOW_RANK and cat["straggler_ranks"] == [SLOW_RANK] and cat["ranks"] == WORLD


def test_a_shape_on_one_rank_only_is_listed(job: dict[str, Any]) -> None:
    shapes = job["summary"]["shapes"]
    partial = [s for s in shapes if not s["on_all_ranks"]]
    assert len(partial) == 1 and partial[0]["present_ranks"] == [EXTRA_SHAPE_RANK] and partial[0]["ranks"] == 1
    assert "N512" in partial[0]["shape"] and partial[0]["straggler_ranks"] == []
    assert len(shapes) == 3 and all(s["on_all_ranks"] for s in shapes if s is not partial[0])
    table = pd.read_csv(job["base"] / "out" / "ranks_shapes.csv")
    assert len(table) == WORLD * 2 + 1 and table["straggler"].sum() == 2  # the slow rank's fwd and bwd shapes


def test_result_is_small_and_names_the_files(job: dict[str, Any]) -> None:
    res = job["result"]
    assert res.status == "OK" and res.world_size == WORLD and res.world_size_source == "trace"
    assert res.ranks_ok == WORLD and res.ranks_failed == 0 and res.missing_ranks == [] and res.workers == 2
    assert res.stragglers_total == 4 and res.stragglers[0].rank == SLOW_RANK
    assert res.summary_file.endswith("ranks_summary.json") and res.peak_rss_mb_max and res.rank_seconds_median
    assert len(res.model_dump_json()) < 20_000
    # one progress step per rank, ending at the total
    steps = [p for p in job["progress"] if p[2].startswith("rank ")]
    assert len(steps) == WORLD and job["progress"][-1][:2] == (WORLD, WORLD)


def test_load_rank_summary_from_a_rank_folder(job: dict[str, Any]) -> None:
    base, roots = job["base"], job["roots"]
    res = call("load_rank_summary", roots, output_dir=str(base / "out" / f"rank_{SLOW_RANK}"), category="sdpa_fwd")
    assert res.folder_rank == SLOW_RANK and res.findings_total == 2
    assert {f.kind for f in res.findings} == {"shape", "category"} and all(f.rank == SLOW_RANK for f in res.findings)
    assert [c.category for c in res.categories] == ["sdpa_fwd"] and res.partial_shapes_total == 1
    page = call("load_rank_summary", roots, output_dir=str(base / "out"), limit=1, offset=1)
    assert page.folder_rank is None and page.findings_total == 4 and [f.position for f in page.findings] == [2]
    with pytest.raises(ToolFailure, match=r"no ranks_summary\.json"):
        call("load_rank_summary", roots, output_dir=str(base / "traces"))


# ---------------------------------------------------------------------------------------------- bad input
def test_bad_ranks_get_one_line_errors_and_the_others_finish(tmp_path: Path) -> None:
    world = 6
    d = tmp_path / "traces"
    d.mkdir()
    for rank in (0, 1):
        write_trace(build_trace(_calls(rank), seed=rank, distributed_info=_dist(rank, world)), d / f"r{rank}.json.gz")
    whole = gzip.compress(json.dumps(build_trace(_calls(2), distributed_info=_dist(2, world))).encode())
    (d / "r2.json.gz").write_bytes(whole[: len(whole) // 2])  # truncated: the header is still readable
    (d / "rank_3.json").write_text("this is not a trace\n")  # rank from the file name
    other = build_trace(_calls(4), distributed_info=_dist(4, 8))
    write_trace(other, d / "r4.json.gz")  # another job's trace (world size 8)
    write_trace(build_trace(_calls(1), distributed_info=_dist(1, world)), d / "zz_copy.json.gz")  # rank 1 again
    out = tmp_path / "out"
    res = call("analyze_ranks", DataRoots([tmp_path]), trace_paths=[str(d)], output_dir=str(out), workers=2)
    assert res.status == "PARTIAL" and res.ranks_ok == 2 and res.ranks_failed == 4 and res.traces == 6
    errors = {Path(e.trace_path).name: e for e in res.errors}
    assert "truncated gzip" in errors["r2.json.gz"].error and errors["r2.json.gz"].rank == 2
    assert "not valid JSON" in errors["rank_3.json"].error and errors["rank_3.json"].rank == 3
    assert "world size 8 differs from the job's 6" in errors["r4.json.gz"].error
    assert "rank 1 is also claimed by r1.json.gz" in errors["zz_copy.json.gz"].error
    assert all("\n" not in e.error and len(e.error) <= 300 for e in res.errors)
    assert res.missing_ranks == [4, 5] and res.duplicate_ranks == [1] and res.world_size == world
    assert sorted(p.name for p in out.iterdir()) == [
        "rank_0", "rank_1", "ranks_shapes.csv", "ranks_summary.csv", "ranks_summary.json",
    ]  # fmt: skip
    csv = pd.read_csv(out / "ranks_summary.csv")
    assert (csv["status"] == "ERROR").sum() == 4 and csv.loc[csv["status"] == "ERROR", "category"].isna().all()


def test_an_output_folder_with_other_ranks_needs_overwrite(tmp_path: Path) -> None:
    traces = write_job(tmp_path / "traces", world=2)
    roots, out = DataRoots([tmp_path]), tmp_path / "out"
    call("analyze_ranks", roots, trace_paths=[str(p) for p in traces], output_dir=str(out), workers=1)
    marker = out / "rank_0" / "category_data" / "sdpa_fwd_ops.csv"
    before = marker.stat().st_ino
    with pytest.raises(ToolFailure, match="already holds another run's ranks"):
        call("analyze_ranks", roots, trace_paths=[str(p) for p in traces], output_dir=str(out), workers=1)
    assert marker.stat().st_ino == before  # refused before anything was touched
    (out / ".rank_0.staging-deadbeef").mkdir()  # a killed run's leftover
    res = call("analyze_ranks", roots, trace_paths=[str(traces[0])], output_dir=str(out), workers=1, overwrite=True)
    assert res.ranks_ok == 1 and marker.stat().st_ino != before
    assert not (out / ".rank_0.staging-deadbeef").exists()
    assert any("not part of this run" in w for w in res.warnings)  # rank_1 of the earlier run was kept


def test_ranks_from_file_names_and_paths_under_the_roots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = write_job(tmp_path / "traces", world=2, named=True)
    rc = main(["analyze-ranks", *map(str, reversed(traces)), "-o", str(tmp_path / "out"), "--workers", "1"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "2 traces" in out and "world size — (unknown)" in out and "rank 1" not in err
    summary = json.loads((tmp_path / "out" / "ranks_summary.json").read_text())
    assert [(r["rank"], r["rank_source"], r["trace_path"].split("/")[-1]) for r in summary["ranks"]] == [
        (0, "file_name", "job_rank0.json.gz"),
        (1, "file_name", "job_rank1.json.gz"),
    ]
    with pytest.raises(ToolFailure, match="outside the allowed data roots"):
        call("analyze_ranks", DataRoots([tmp_path / "out"]), trace_dir=str(tmp_path / "traces"), output_dir="o2")
    with pytest.raises(ToolFailure, match="either trace_paths"):
        call("analyze_ranks", DataRoots([tmp_path]), output_dir="o3")


def test_rank_discovery_rules(tmp_path: Path) -> None:
    assert [rank_from_name(Path(n)) for n in ("rank_3.json", "x_rank12.json.gz", "bs_32_rank0.json", "r-7.json")] == [
        3, 12, 0, None,
    ]  # fmt: skip
    assert rank_from_name(Path("graph_capture_rank_0.1773709679453551615.pt.trace.json.gz")) == 0
    plain = tmp_path / "a.json"
    plain.write_text('{"schemaVersion": 1, "distributedInfo": {"rank": 5, "world_size": 8}, "traceEvents": [{}]}')
    roots = DataRoots([tmp_path])
    assert read_header_prefix(plain, roots)["distributedInfo"]["rank"] == 5
    for name in ("b.json", "c.json"):
        (tmp_path / name).write_text('{"traceEvents": []}')
    plan = plan_ranks([tmp_path / "b.json", tmp_path / "c.json"], roots)  # no rank anywhere: ranks by order
    assert [t.rank for t in plan.traces] == [0, 1] and "sorted file names" in plan.warnings[0]
    plan = plan_ranks([plain, tmp_path / "b.json"], roots)  # one has a rank, the other none
    assert plan.traces[1].error and "no rank" in plan.traces[1].error and plan.missing_ranks == [0, 1, 2, 3, 4, 6, 7]


# ---------------------------------------------------------------------------------------------- engines
def test_dask_localcluster_gives_the_pool_summary(job: dict[str, Any], tmp_path: Path) -> None:
    from distributed import LocalCluster

    base = job["base"]
    out = base / "out-dask"
    shutil.rmtree(out, ignore_errors=True)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None, silence_logs=logging.ERROR
    ) as cluster:
        res = call(
            "analyze_ranks",
            job["roots"],
            trace_dir=str(base / "traces"),
            output_dir=str(out),
            settings={"dask_address": cluster.scheduler_address},  # configured: engine dask is the default
        )
    assert res.engine == "dask" and res.workers == 2 and res.dask_address == cluster.scheduler_address
    summary = json.loads((out / "ranks_summary.json").read_text())
    assert _stable(summary) == _stable(job["summary"])
    for rank in range(WORLD):
        a, b = out / f"rank_{rank}" / "category_data", base / "out" / f"rank_{rank}" / "category_data"
        assert (a / "sdpa_fwd_ops.csv").read_bytes() == (b / "sdpa_fwd_ops.csv").read_bytes()


def test_a_dead_worker_costs_only_its_rank(job: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    base = job["base"]
    monkeypatch.setattr(engines, "analyze_rank", die_on_rank_1)
    res = call(
        "analyze_ranks", job["roots"], trace_dir=str(base / "traces"), output_dir=str(base / "o-dead"), workers=2
    )
    assert res.ranks_ok == WORLD - 1 and [e.rank for e in res.errors] == [1], res.errors  # which rank, and why
    assert "worker process died" in res.errors[0].error
    assert sorted(p.name for p in (base / "o-dead").iterdir() if p.is_dir()) == ["rank_0", "rank_2", "rank_3"]


def test_cli_dask_engine_starts_its_own_localcluster(job: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    base = job["base"]
    out = base / "out-dask-local"
    rc = main(["analyze-ranks", str(base / "traces"), "-o", str(out), "--engine", "dask", "--workers", "2", "--json"])
    printed, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(printed)
    assert res["engine"] == "dask" and res["workers"] == 2 and res["dask_address"] is None and res["ranks_ok"] == WORLD
    assert _stable(json.loads((out / "ranks_summary.json").read_text())) == _stable(job["summary"])


def test_dask_engine_errors_are_one_line(job: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    args = {"trace_dir": str(job["base"] / "traces"), "output_dir": str(job["base"] / "o-err"), "engine": "dask"}
    monkeypatch.setattr(engines, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(ToolFailure, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9 "):
        call("analyze_ranks", job["roots"], **args, settings={"dask_address": "tcp://127.0.0.1:9"})
    monkeypatch.setattr(engines.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ToolFailure, match=r"pip install 'sdpa-analyzer\[cluster\]'"):
        call("analyze_ranks", job["roots"], **args)
    with pytest.raises(ToolFailure, match="unknown argument 'dask_address'"):  # never a tool argument
        call("analyze_ranks", job["roots"], **args, dask_address="tcp://x:1")


# ---------------------------------------------------------------------------------------------- MCP
@pytest.mark.anyio
async def test_over_mcp_with_progress_per_rank(job: dict[str, Any]) -> None:
    base = job["base"]
    notes: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        notes.append((done, total, message))

    async with Client(create_server([base]), raise_exceptions=True) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["analyze_ranks"].annotations.read_only_hint is False
        assert tools["load_rank_summary"].annotations.read_only_hint is True
        assert {"trace_paths", "trace_dir", "output_dir", "workers", "engine"} <= set(
            tools["analyze_ranks"].input_schema["properties"]
        )
        r = await c.call_tool(
            "analyze_ranks",
            {"trace_dir": "traces", "output_dir": "out-mcp", "workers": 2},
            progress_callback=on_progress,
        )
        assert not r.is_error, r.content[0].text
        assert r.structured_content["stragglers"][0]["rank"] == SLOW_RANK
        summary = await c.call_tool("load_rank_summary", {"output_dir": "out-mcp", "category": "sdpa_bwd"})
        assert summary.structured_content["findings_total"] == 2
        bad = await c.call_tool("analyze_ranks", {"trace_dir": "traces", "output_dir": "out-mcp"})
        assert bad.is_error and "--overwrite" in bad.content[0].text
    ranks = [m for _, _, m in notes if m and m.startswith("rank ")]
    assert len(ranks) == WORLD and notes[-1][0] == notes[-1][1] == WORLD


@pytest.mark.anyio
async def test_over_stdio_the_pool_leaves_the_transport_clean(tmp_path: Path) -> None:
    # the pool's processes inherit the server's stdout, the stdio transport: nothing may be written there
    write_job(tmp_path / "traces", world=2)
    params = stdio_server(tmp_path)
    async with Client(params) as c:
        r = await c.call_tool("analyze_ranks", {"trace_dir": "traces", "output_dir": "out", "workers": 2})
        assert not r.is_error, r.content[0].text
        assert r.structured_content["ranks_ok"] == 2 and r.structured_content["workers"] == 2
        again = await c.call_tool("load_rank_summary", {"output_dir": "out/rank_1"})
        assert again.structured_content["folder_rank"] == 1
