"""Benchmark: how fast the commands start, as ratios to importing the MCP SDK timed in the same run.

Targets (issue 21, item 4), each on the median ratio over the rounds:

    sdpa-analyzer --help                                   <= 0.35 x  `python -c "import mcp.server"`
    sdpa-analyzer model -b 1 --heads 16 -n 4096 -d 128     <= 0.6 x
    sdpa-analyzer serve (stdio): launch -> tools/list answer <= 1.5 x

Each figure is a whole process from its launch (interpreter start, imports, the work, its exit; for `serve`: until
the `tools/list` response has been read, after `initialize`). The four run in turn in every round, in rotating
order, so the machine's background load falls on all of them alike; a ratio is taken within a round. Printed:
min / median / max of each time and ratio, and the load average before and after.

Every process runs with Python's bytecode cache, as an installed package has it (pip compiles the modules it
installs): PYTHONDONTWRITEBYTECODE is removed from their environment and the cache goes to bench/out/pycache
(PYTHONPYCACHEPREFIX), filled by a warm-up round that is not counted. Without a cache each start would also
compile our sources (~0.1 s here), which the SDK's installed modules never do.

    .venv/bin/python bench/bench_start.py [--rounds 7]

Exit 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import PYCACHE, bench_env, cli, mmm, rotated_rounds

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"--help": 0.35, "model": 0.6, "serve tools/list": 1.5}
MODEL_ARGS = ["model", "-b", "1", "--heads", "16", "-n", "4096", "-d", "128"]




def _mcp_tool_count() -> int:
    """How many tools `serve` lists: the declarations' own count (never written down)."""
    from sdpa_analyzer.server.tools import TOOLS

    return sum(1 for spec in TOOLS if spec.mcp)


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, env=bench_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def _tools_list(root: Path) -> float:
    """Launch `serve` on stdio, initialize, list the tools: seconds from the launch to the tools/list answer."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*cli(), "serve", "--root", str(root)], cwd=root, env=bench_env(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:

        def send(msg: dict[str, object]) -> None:
            proc.stdin.write((json.dumps(msg) + "\n").encode())  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}})  # fmt: skip
        if json.loads(proc.stdout.readline()).get("id") != 1:
            raise SystemExit("serve: no initialize response")
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        answer = json.loads(proc.stdout.readline())
        seconds = time.perf_counter() - t0
        tools = answer.get("result", {}).get("tools", [])
        expected = _mcp_tool_count()
        if len(tools) != expected:
            raise SystemExit(f"serve: tools/list answered {len(tools)} tools, expected {expected}: {answer}")
        return seconds
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7, help="counted rounds (each runs the four commands once)")
    args = ap.parse_args()
    PYCACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = {
            "import mcp.server": lambda: _timed([sys.executable, "-c", "import mcp.server"]),
            "--help": lambda: _timed([*cli(), "--help"]),
            "model": lambda: _timed([*cli(), *MODEL_ARGS]),
            "serve tools/list": lambda: _tools_list(root),
        }
        times, before, after = rotated_rounds(runs, args.rounds)
    base = times["import mcp.server"]
    print(f"{args.rounds} rounds; load average {before} before, {after} after (1, 5, 15 min)")
    print(f"{'command':<20} {'seconds min / median / max':<28} ratio to import mcp.server min / median / max")
    print(f"{'import mcp.server':<20} {mmm(base, '.3f'):<28} 1")
    failed = 0
    for name, target in TARGETS.items():
        ratios = [t / b for t, b in zip(times[name], base, strict=True)]
        ok = statistics.median(ratios) <= target
        failed += not ok
        print(f"{name:<20} {mmm(times[name], '.3f'):<28} {mmm(ratios)}  target <= {target}: "
              f"{'PASS' if ok else 'FAIL'}")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
