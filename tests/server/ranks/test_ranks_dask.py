"""The Dask engine's trust rules (issue 18): no tool argument chooses a scheduler, the LocalCluster we start is
private (a client without its temporary credentials is refused during the run), and a worker's result is data
that is validated before use. Skipped without the cluster extra."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.ranks import engines
from sdpa_analyzer.server.ranks.task import RankOutcome, RankTask
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from sdpa_analyzer.server.tools import call

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.anyio


def write_job(folder: Path, world: int = 2) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    c = SyntheticAttentionCall(flavour="aten_flash", heads_q=8, seq_q=512, repeat=2, kernel_us=100.0)
    for r in range(world):
        info = {"backend": "nccl", "rank": r, "world_size": world}
        write_trace(build_trace([c], seed=r, distributed_info=info), folder / f"rank_{r}.json.gz")


async def test_no_mcp_argument_chooses_a_scheduler(tmp_path: Path) -> None:
    write_job(tmp_path / "traces")
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        tool = {t.name: t for t in (await c.list_tools()).tools}["analyze_ranks"]
        assert "dask_address" not in tool.input_schema["properties"]
        assert not any("address" in k or "host" in k for k in tool.input_schema["properties"])
        r = await c.call_tool("analyze_ranks", {"trace_dir": "traces", "output_dir": "out", "engine": "dask",
                                                "dask_address": "tcp://127.0.0.1:9"})  # fmt: skip
    assert r.is_error and "dask_address" in r.content[0].text, r.content[0].text
    assert not (tmp_path / "out").exists()


def test_our_local_cluster_refuses_a_client_without_its_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """During the run (after the first rank), a process of this machine tries the scheduler: plain TCP, TLS
    without a certificate, TLS with credentials of its own. Each is refused; the run finishes."""
    from distributed import Client as DaskClient
    from distributed.security import Security

    write_job(tmp_path / "traces")
    clusters: list[Any] = []
    real = engines.private_cluster

    def recorded(n: int) -> Any:
        cluster = real(n)
        clusters.append(cluster)
        return cluster

    monkeypatch.setattr(engines, "private_cluster", recorded)
    attempts: dict[str, str] = {}

    def on_progress(done: float, total: float, message: str) -> None:
        if not message.startswith("rank ") or attempts:
            return
        address = clusters[0].scheduler_address
        attempts["address"] = address
        attempts["workers"] = " ".join(clusters[0].scheduler_info["workers"])
        plain = address.replace("tls://", "tcp://")
        for label, kwargs in (("tcp", {"address": plain}), ("tls-no-cert", {"address": address}),
                              ("tls-other-ca", {"address": address, "security": Security.temporary()})):  # fmt: skip
            try:
                intruder = DaskClient(timeout="3s", **kwargs)
            except Exception as exc:  # refused: what we want
                attempts[label] = type(exc).__name__
            else:
                intruder.close()
                attempts[label] = "CONNECTED"

    res = call("analyze_ranks", DataRoots([tmp_path]), on_progress, trace_dir=str(tmp_path / "traces"),
               output_dir=str(tmp_path / "out"), engine="dask", workers=2)  # fmt: skip
    assert res.ranks_ok == 2 and res.engine == "dask" and res.dask_address is None
    assert set(attempts) == {"address", "workers", "tcp", "tls-no-cert", "tls-other-ca"}, attempts
    assert "CONNECTED" not in attempts.values(), attempts
    cluster = clusters[0]
    assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
    workers = attempts["workers"].split()
    assert len(workers) == 2 and all(a.startswith("tls://127.0.0.1:") for a in workers), workers
    assert cluster.status.name == "closed"  # started for this run, closed with it


def test_worker_results_are_validated_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that returns something else than its task's outcome as JSON text costs that rank, with one line."""
    from distributed import LocalCluster

    write_job(tmp_path / "traces", world=3)
    real = engines.analyze_rank_json

    def hostile(task: dict[str, Any]) -> Any:
        if task["rank"] == 0:
            return {"status": "OK"}  # an object, not the JSON text of an outcome
        if task["rank"] == 1:
            other = json.loads(real({**task}))
            return json.dumps({**other, "rank": 7, "index": 7})  # another task's result
        return real(task)

    monkeypatch.setattr(engines, "analyze_rank_json", hostile)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster:  # fmt: skip
        res = call("analyze_ranks", DataRoots([tmp_path]), trace_dir=str(tmp_path / "traces"),
                   output_dir=str(tmp_path / "out"), settings={"dask_address": cluster.scheduler_address})  # fmt: skip
    errors = {e.rank: e.error for e in res.errors}
    assert res.ranks_ok == 1 and set(errors) == {0, 1}, errors
    assert "returned a dict, not the rank's JSON result" in errors[0]
    assert "the result of another task" in errors[1]
    task = RankTask(index=0, rank=0, trace_path="t", folder="f", roots=("/r",), token="ab")
    assert engines.outcome_from_json(task, "{not json").status == "ERROR"
    ok = RankOutcome(index=0, rank=0, trace_path="t", folder="f", status="NO_DATA")
    assert engines.outcome_from_json(task, ok.model_dump_json()) == ok


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_serve_takes_the_scheduler_from_its_own_configuration(tmp_path: Path, how: str) -> None:
    """`serve --dask-address` (or SDPA_DASK_ADDRESS at start): MCP calls of analyze_ranks then run there."""
    from distributed import LocalCluster

    write_job(tmp_path / "traces")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster:  # fmt: skip
        address = cluster.scheduler_address
        args = ["serve", "--root", str(tmp_path)] + (["--dask-address", address] if how == "flag" else [])
        env = {**os.environ, **({"SDPA_DASK_ADDRESS": address} if how == "environment" else {})}
        out = _stdio_call(args, env, "analyze_ranks", {"trace_dir": "traces", "output_dir": f"out-{how}"})
    assert out["engine"] == "dask" and out["dask_address"] == address and out["ranks_ok"] == 2, out


def _stdio_call(args: list[str], env: dict[str, str], tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call over `sdpa-analyzer serve` (stdio, newline-delimited JSON-RPC); its structured result."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    proc = subprocess.Popen([sys.executable, "-m", "sdpa_analyzer.server.cli.main", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps(msg) + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def reply(id_: int) -> dict[str, Any]:
        while True:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert line, "the server closed its output"
            msg = json.loads(line)
            if msg.get("id") == id_:
                return msg

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})  # fmt: skip
        reply(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
        result = reply(2)["result"]
        assert not result.get("isError"), result
        return result["structuredContent"]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
