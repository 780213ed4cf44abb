"""`sdpa-analyzer`: one subcommand per tool, derived from the tool declarations, plus `serve` and `demo`.

Each tool's options come from its input model (name, type, choices, description, default), so a parameter is
declared once for MCP and CLI alike; arguments not given are left out and the model's defaults apply. Exit
codes: 0 ok, 1 findings invalid (`validate`), 2 usage or input error (one line on stderr, never a traceback).
Human tables on stdout; `--json` prints the structured result the MCP tool returns.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic.fields import FieldInfo

from server import __version__
from server.cli.human import render
from server.cli.human_ranks import RANK_RENDERERS
from server.cli.progress import ProgressBar
from server.cli.wording import cli_words
from server.errors import InputError, os_error_message, printable, shorten_message
from server.ranks.children import Stopped, stop_children, stop_on_signals
from server.roots import DataRoots
from server.tools import TOOLS
from server.tools.base import Setting, ToolContext, ToolFailure, ToolSpec, execute

EXIT_OK, EXIT_INVALID, EXIT_INPUT = 0, 1, 2
log = logging.getLogger("sdpa_analyzer")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:  # one line on stderr, exit 2 (argparse's own code too)
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {shorten_message(message)}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


# ------------------------------------------------------------------ options from an input model
def _members(annotation: Any) -> list[Any]:
    """The types of a union (X | None included), Annotated wrappers removed; a plain type as a list of one."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _option(field: FieldInfo) -> dict[str, Any]:
    """argparse keywords for one field: type, nargs, a metavar listing the choices, help with the default."""
    members = [m for m in _members(field.annotation) if m is not type(None)]
    choices = [v for m in members if typing.get_origin(m) is Literal for v in typing.get_args(m)]
    kw: dict[str, Any] = {}
    if members == [bool]:
        kw["action"] = argparse.BooleanOptionalAction
    elif len(members) == 1 and typing.get_origin(members[0]) is list:
        (item,) = typing.get_args(members[0]) or (str,)
        kw.update(nargs="+", type=_members(item)[0] if _members(item)[0] in (int, float) else str)
    elif members and all(m in (int,) for m in members):
        kw["type"] = int
    elif members and all(m in (int, float) for m in members):
        kw["type"] = float
    if choices and all(typing.get_origin(m) is Literal for m in members):
        kw["metavar"] = "{" + ",".join(map(str, choices)) + "}"
    help_text = field.description or ""
    if not field.is_required() and field.default is not None and not isinstance(field.default, bool):
        help_text += f" (default: {field.default})"
    kw["help"] = cli_words(help_text).replace("%", "%%")
    return kw


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _add_tool_command(sub: Any, spec: ToolSpec[Any, Any]) -> None:
    p = sub.add_parser(spec.cli.command, help=spec.title, description=cli_words(spec.description))
    fields = spec.input_model.model_fields
    for name in spec.cli.positional:
        field = fields[name]
        kw = _option(field)
        kw.pop("action", None)
        many = kw.pop("nargs", None) == "+"  # a list field: one or more values (`analyze-ranks TRACE...`)
        nargs = ("+" if field.is_required() else "*") if many else (None if field.is_required() else "?")
        p.add_argument(name, nargs=nargs, default=argparse.SUPPRESS, **kw)
    for name, field in fields.items():
        if name in spec.cli.positional:
            continue
        spellings = (*spec.cli.flags.get(name, ()), _flag(field.alias or name))  # the name clients send
        kw = _option(field)
        if field.is_required():
            kw["required"] = True
        p.add_argument(*spellings, dest=name, default=argparse.SUPPRESS, **kw)
    _add_settings(p, spec.cli.settings)
    p.add_argument("--json", action="store_true", help="print the structured result (as the MCP tool returns it)")
    p.add_argument(
        "--root",
        action="extend",
        nargs="+",
        metavar="DIR",
        help="restrict file access to these folders (repeatable; default: no restriction)",
    )
    p.set_defaults(tool=spec)


def _add_settings(p: argparse.ArgumentParser, settings: Sequence[Setting]) -> None:
    for setting in settings:
        env = f" (default: ${setting.env})" if setting.env else ""
        p.add_argument(setting.flag, dest=f"setting_{setting.field}", metavar=setting.metavar,
                       help=(setting.help + env).replace("%", "%%"))  # fmt: skip


def all_settings() -> list[Setting]:
    """Every tool's settings, once each (what `serve` takes for the tools it serves)."""
    return list({s.field: s for spec in TOOLS if spec.mcp for s in spec.cli.settings}.values())


def settings_from(args: argparse.Namespace, settings: Sequence[Setting]) -> dict[str, Any]:
    """The ToolContext settings: the flag, else the environment variable (read now, at start)."""
    out = {}
    for setting in settings:
        value = getattr(args, f"setting_{setting.field}", None)
        if value is None and setting.env:
            value = os.environ.get(setting.env) or None
        out[setting.field] = value
    return out


def _tool_arguments(args: argparse.Namespace, spec: ToolSpec[Any, Any]) -> dict[str, Any]:
    fields = spec.input_model.model_fields
    return {(f.alias or name): getattr(args, name) for name, f in fields.items() if hasattr(args, name)}


def _cli_roots(args: argparse.Namespace) -> DataRoots:
    # the CLI runs with the user's own permissions: no restriction unless asked for (--root). Relative paths are
    # taken against the working directory, as a shell user expects, with or without --root (the MCP server takes
    # them against its first root: its working directory is not the client's)
    return DataRoots([Path(r) for r in args.root] if args.root else [Path.cwd(), Path("/")], cwd_relative=True)


def run_tool_command(args: argparse.Namespace) -> int:
    spec: ToolSpec[Any, Any] = args.tool
    bar = ProgressBar()
    try:
        ctx = ToolContext(_cli_roots(args), bar, **settings_from(args, spec.cli.settings))
        result = execute(spec, ctx, _tool_arguments(args, spec))
    finally:
        bar.close()
    if args.json:  # the MCP tool's structured result, word for word
        print(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        rank_renderer = RANK_RENDERERS.get(spec.name)
        text = rank_renderer(result) if rank_renderer is not None else render(spec.name, result)
        print(printable(cli_words(text), keep_lines=True))  # the tables quote op names and paths from untrusted files
    if spec.name == "validate_findings" and not result.passed:
        return EXIT_INVALID
    return EXIT_OK


# ------------------------------------------------------------------ serve and demo
def cmd_serve(args: argparse.Namespace) -> int:
    from server.mcp_server import create_server  # only `serve` needs the MCP server loaded

    roots = [Path(r) for r in args.root] if args.root else [Path.cwd()]
    for r in roots:
        if not r.is_dir():
            raise InputError(f"--root {r} is not a folder — pass an existing folder")
    server = create_server(roots, settings=settings_from(args, all_settings()))
    if args.http:
        serve_http(server, args.host, args.port)
    else:
        server.run()
    return EXIT_OK


def serve_http(server: Any, host: str, port: int) -> None:
    """Streamable HTTP on host:port. The socket is bound here, so a port in use is one line and exit 2 (uvicorn
    printed [Errno 98] and exited 3), and a non-loopback address is served only after a warning."""
    import socket

    import uvicorn

    from server.mcp_server import http_app, is_loopback

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
    config = uvicorn.Config(http_app(server, host), log_level=server.settings.log_level.lower())
    StoppingServer(config).run(sockets=[sock])


def cmd_demo(args: argparse.Namespace) -> int:
    from server.cli.demo import run_demo

    return run_demo(Path(args.output_dir))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sdpa-analyzer", description="Why are the attention (SDPA) ops in my PyTorch trace slow?")
    p.add_argument("--version", action="version", version=f"sdpa-analyzer {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    s = sub.add_parser("serve", help="run the MCP server (stdio by default)")
    s.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    s.add_argument("--host", default="127.0.0.1", help="HTTP address to bind (default: 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="HTTP port (default: 8000)")
    s.add_argument(
        "--root",
        action="extend",
        nargs="+",
        metavar="DIR",
        help="data roots the tools may read and write (repeatable; default: the working directory)",
    )
    _add_settings(s, all_settings())
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
