"""`sdpa-analyzer serve --http`: streamable HTTP on loopback, with DNS-rebinding protection on."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.cli.main", "serve", "--http", "--port", str(port), "--root", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server exited")
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.anyio
async def test_http_client_lists_tools(http_server: str) -> None:
    async with Client(http_server) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        archs = await c.call_tool("list_architectures", {})
    assert "compute_roofline" in names and archs.structured_content["count"] >= 9


def test_dns_rebinding_host_is_refused(http_server: str) -> None:
    req = urllib.request.Request(
        http_server,
        data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers={"Host": "evil.example.com", "Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 421


@pytest.mark.anyio
async def test_a_long_call_does_not_block_another_client(http_server: str, tmp_path: Path) -> None:
    """Tools run on worker threads: while one client's roofline of a big category runs, another client's call
    is answered at once."""
    import anyio
    from server_fixtures import make_large_folder

    folder = make_large_folder(tmp_path, 20_000)
    done: dict[str, float] = {}

    async def slow() -> None:
        async with Client(http_server) as c:
            t = time.monotonic()
            r = await c.call_tool("compute_roofline", {"output_dir": str(folder), "category": "sdpa_fwd",
                                                         "arch": "h100-sxm"})
            assert not r.is_error, r.content[0].text
            done["slow"] = time.monotonic() - t
            done["slow_end"] = time.monotonic()

    async def quick() -> None:
        async with Client(http_server) as c:
            await anyio.sleep(0.3)  # the slow call is under way
            t = time.monotonic()
            await c.call_tool("model_attention", {"batch": 1, "heads_q": 8, "seq_q": 1024, "head_dim": 128})
            done["quick"] = time.monotonic() - t
            done["quick_end"] = time.monotonic()

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        tg.start_soon(quick)
    assert done["quick_end"] < done["slow_end"], done  # answered while the slow call was still running
    assert done["quick"] < done["slow"] / 2, done
