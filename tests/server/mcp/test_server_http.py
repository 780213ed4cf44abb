"""`sdpa-analyzer serve --http`: streamable HTTP on loopback, with DNS-rebinding protection on for every loopback
address, a warning off loopback, and a used port as one line with exit 2."""

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


def _serve(tmp_path: Path, host: str, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sdpa_analyzer.server.cli.main", "serve", "--http", "--host", host, "--port", str(port),
         "--root", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip


def _wait_listening(proc: subprocess.Popen[bytes], host: str, port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server exited")
        time.sleep(0.1)
    raise RuntimeError("the server did not start listening")


@pytest.fixture
def http_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    host = getattr(request, "param", "127.0.0.1")
    port = _free_port()
    proc = _serve(tmp_path, host, port)
    try:
        _wait_listening(proc, host, port)
        yield f"http://{host}:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _post(url: str, headers: dict[str, str]) -> int:
    req = urllib.request.Request(
        url,
        data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.mark.anyio
async def test_http_client_lists_tools(http_server: str) -> None:
    async with Client(http_server) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        archs = await c.call_tool("list_architectures", {})
    assert "compute_roofline" in names and archs.structured_content["count"] >= 9


@pytest.mark.parametrize("http_server", ["127.0.0.1", "127.0.0.2"], indirect=True)
def test_dns_rebinding_host_is_refused(http_server: str) -> None:
    bound = http_server.split("//")[1].split("/")[0]
    assert _post(http_server, {"Host": "evil.example.com"}) == 421  # 200 on main for --host 127.0.0.2
    assert _post(http_server, {"Host": f"evil.example.com:{bound.split(':')[1]}"}) == 421
    assert _post(http_server, {"Origin": "http://evil.example.com"}) == 403
    assert _post(http_server, {"Host": bound, "Origin": f"http://{bound}"}) not in (421, 403)


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "sdpa_analyzer.server.cli.main", "serve", "--http", "--port", str(port), "--root", str(tmp_path)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert proc.returncode == 2  # uvicorn's [Errno 98] and exit 3 before
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "already in use" in lines[0] and "--port" in lines[0], proc.stderr


def test_a_non_loopback_bind_warns_first(tmp_path: Path) -> None:
    port = _free_port()
    proc = _serve(tmp_path, "0.0.0.0", port)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline().decode()
        assert "warning" in first and "0.0.0.0" in first and "not a loopback address" in first, first
        _wait_listening(proc, "127.0.0.1", port)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.anyio
async def test_a_long_call_does_not_block_another_client(http_server: str, tmp_path: Path) -> None:
    """Tools run on worker threads: while one client's roofline of a big category runs, another client's calls
    are answered. Checked by the order of events, not by durations (a loaded machine stretches both): quick calls
    go out one after another for as long as the slow call is pending, and some must come back before it does."""
    import anyio

    from tests.support import make_large_folder

    folder = make_large_folder(tmp_path, 20_000)
    slow_done = anyio.Event()
    answered_while_pending = 0

    async def slow() -> None:
        async with Client(http_server) as c:
            r = await c.call_tool("compute_roofline", {"output_dir": str(folder), "category": "sdpa_fwd",
                                                         "arch": "h100-sxm"})
            assert not r.is_error, r.content[0].text
        slow_done.set()

    async def quick() -> None:
        nonlocal answered_while_pending
        async with Client(http_server) as c:
            while not slow_done.is_set():
                await c.call_tool("model_attention", {"batch": 1, "heads_q": 8, "seq_q": 1024, "head_dim": 128})
                if not slow_done.is_set():
                    answered_while_pending += 1
                await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        await anyio.sleep(0.2)  # the slow call goes out first (if it is still in flight, the quick ones only wait)
        tg.start_soon(quick)
    # a server that ran tools on its event loop would hold every quick call until the slow one returned: after
    # the first quick answer that overtakes it, a second one shows the server kept answering during the slow call
    assert answered_while_pending >= 2, answered_while_pending
