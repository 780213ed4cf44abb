"""`sdpa-analyzer`: one subcommand per tool, derived from the tool declarations, plus `run` (the tools chained on
one trace, server.cli.pipeline), `serve` and `demo`.

Each tool's options come from its input model (name, type, choices, description, default; server.cli.options), so
a parameter is declared once for MCP and CLI alike; arguments not given are left out and the model's defaults
apply. A command whose positional names one category also takes `all`: the tool runs for each category in turn
(one table each; `--json`: one result per category, by name). Exit
codes: 0 ok, 1 findings invalid (`validate`), 2 usage or input error (one line on stderr, never a traceback).
Human tables on stdout; `--json` prints the structured result the MCP tool returns.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdpa_analyzer.server import __version__
from sdpa_analyzer.server.cli.options import (
    ALL_CATEGORIES,
    add_field_options,
    add_positionals,
    add_root_option,
    add_settings,
    all_settings,
    category_positional,
    cli_roots,
    settings_from,
    tool_arguments,
)
from sdpa_analyzer.server.cli.output import human_text, print_json, print_text
from sdpa_analyzer.server.cli.pipeline import add_run_command
from sdpa_analyzer.server.cli.progress import ProgressBar
from sdpa_analyzer.server.cli.wording import cli_words
from sdpa_analyzer.server.errors import InputError, os_error_message, shorten_message
from sdpa_analyzer.server.ranks.children import Stopped, stop_children, stop_on_signals
from sdpa_analyzer.server.tools import TOOLS
from sdpa_analyzer.server.tools.base import ToolContext, ToolFailure, ToolSpec, execute
from sdpa_analyzer.server.vocab import CATEGORIES

EXIT_OK, EXIT_INVALID, EXIT_INPUT = 0, 1, 2
log = logging.getLogger("sdpa_analyzer")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:  # one line on stderr, exit 2 (argparse's own code too)
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {shorten_message(message)}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


# ------------------------------------------------------------------ one command per tool
def _add_tool_command(sub: Any, spec: ToolSpec[Any, Any]) -> None:
    p = sub.add_parser(spec.cli.command, help=spec.title, description=cli_words(spec.description))
    add_positionals(p, spec)
    add_field_options(p, spec)
    add_settings(p, spec.cli.settings)
    p.add_argument("--json", action="store_true", help="print the structured result (as the MCP tool returns it)")
    add_root_option(p, "no restriction")
    p.set_defaults(tool=spec)


def _calls(args: argparse.Namespace, spec: ToolSpec[Any, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """The tool's arguments, once; or, with `all` for its category, once per category (label, arguments)."""
    arguments = tool_arguments(args, spec)
    per_category = category_positional(spec)
    if per_category is None or arguments.get(per_category) != ALL_CATEGORIES:
        return [(None, arguments)]
    return [(cat, {**arguments, per_category: cat}) for cat in CATEGORIES]


def run_tool_command(args: argparse.Namespace) -> int:
    spec: ToolSpec[Any, Any] = args.tool
    calls = _calls(args, spec)
    results: dict[str, Any] = {}
    bar = ProgressBar()
    try:
        ctx = ToolContext(cli_roots(args), bar, **settings_from(args, spec.cli.settings))
        for label, arguments in calls:
            result = execute(spec, ctx, arguments)
            results[label or ""] = result
            if not args.json:  # each category's table as soon as it is ready
                print_text((f"== {label}\n" if label else "") + human_text(spec.name, result))
    finally:
        bar.close()
    if args.json:  # the MCP tool's structured result, word for word (one per category for `all`)
        print_json(results[""] if "" in results else results)
    if spec.name == "validate_findings" and not all(r.passed for r in results.values()):
        return EXIT_INVALID
    return EXIT_OK


# ------------------------------------------------------------------ serve and demo
def cmd_serve(args: argparse.Namespace) -> int:
    from sdpa_analyzer.server.mcp_server import create_server, run_stdio  # only `serve` needs the MCP server loaded

    roots = [Path(r) for r in args.root] if args.root else [Path.cwd()]
    for r in roots:
        if not r.is_dir():
            raise InputError(f"--root {r} is not a folder — pass an existing folder")
    server = create_server(roots, settings=settings_from(args, all_settings()))
    if args.http:
        serve_http(server, args.host, args.port)
    else:
        run_stdio(server)
    return EXIT_OK


def serve_http(server: Any, host: str, port: int) -> None:
    """Streamable HTTP on host:port. The socket is bound here, so a port in use is one line and exit 2 (uvicorn
    printed [Errno 98] and exited 3), and a non-loopback address is served only after a warning."""
    import socket

    import uvicorn

    from sdpa_analyzer.server.mcp_server import http_app, is_loopback

    if not is_loopback(host):
        print(
            f"sdpa-analyzer: warning: serving on {host}:{port}, not a loopback address: anyone who can reach it "
            "can call the tools and read and write under the data roots, and there is no Host check (DNS "
            "rebinding) because the name clients use is unknown — use --host 127.0.0.1 unless you mean it",
            file=sys.stderr,
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a TIME_WAIT port, not a listening one
        sock.bind((host.strip("[]"), port))
    except (socket.gaierror, UnicodeError) as exc:  # before OSError: gaierror is one
        sock.close()
        raise InputError(f"--host {host!r} is not an address this machine has ({exc}) — pass e.g. 127.0.0.1") from None
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"port {port} on {host} is already in use — pass --port <another port>, or stop what listens there"
            ) from None
        raise InputError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}) — pass another --host or --port"
        ) from None
    class StoppingServer(uvicorn.Server):
        """uvicorn's graceful shutdown waits for the calls in flight: the pool or cluster processes of one go first
        (server.ranks.children), so SIGTERM/SIGINT end them within seconds here too."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            stop_children()
            super().handle_exit(sig, frame)


    bound_host, bound_port = sock.getsockname()[:2]  # --port 0: the port the system chose
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(f"MCP endpoint: http://{shown}:{bound_port}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(http_app(server, host), log_level="info")
    StoppingServer(config).run(sockets=[sock])


def cmd_demo(args: argparse.Namespace) -> int:
    from sdpa_analyzer.server.cli.demo import run_demo

    return run_demo(Path(args.output_dir))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sdpa-analyzer", description="Why are the attention (SDPA) ops in my PyTorch trace slow?")
    p.add_argument("--version", action="version", version=f"sdpa-analyzer {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    add_run_command(sub)  # first in --help: what a newcomer with one trace wants

    s = sub.add_parser("serve", help="run the MCP server (stdio by default)")
    s.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    s.add_argument("--host", default="127.0.0.1", help="HTTP address to bind (default: 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="HTTP port (default: 8000)")
    add_root_option(s, "the working directory")
    add_settings(s, all_settings())
    s.set_defaults(fn=cmd_serve)

    for spec in TOOLS:
        _add_tool_command(sub, spec)

    s = sub.add_parser("demo", help="synthetic trace -> analyze -> roofline -> rank -> report")
    s.add_argument("--output-dir", default="demo-out", help="folder to write (default: demo-out)")
    s.set_defaults(fn=cmd_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        with stop_on_signals():  # a host's SIGTERM/SIGHUP/SIGINT ends the pool and cluster processes too
            code = run_tool_command(args) if hasattr(args, "tool") else int(args.fn(args))
            sys.stdout.flush()  # here, not at exit: a reader that left is a quiet exit, not an error at shutdown
        return code
    except BrokenPipeError:  # `sdpa-analyzer archs | head -1`: the reader left; say nothing more
        _stdout_to_devnull()
        return EXIT_OK
    except (ToolFailure, InputError) as exc:
        print(f"sdpa-analyzer: error: {shorten_message(cli_words(str(exc)))}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # serve and demo outside the tools' wrapper: still one line, never a traceback
        print(f"sdpa-analyzer: error: {shorten_message(os_error_message(exc))}", file=sys.stderr)
        return EXIT_INPUT
    except (KeyboardInterrupt, Stopped):
        print("sdpa-analyzer: interrupted: stopped, with every process it had started", file=sys.stderr)
        return 130


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush of what is left in its buffer does not fail
    again (and print "Exception ignored ... BrokenPipeError") on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (a test's StringIO): nothing to flush
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    raise SystemExit(main())
