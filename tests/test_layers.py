"""The package layers point one way, read from the code's own imports with `ast` (function-level imports too).

perf_models ← server basics ← {writers, folder, ingest, scoring, findings, render, synthetic} ← ranks ← tools ←
prompts ← {mcp_server, cli}. Nothing imports the CLI but the CLI; nothing below the tools imports mcp or argparse; no
import cycles; no importlib tricks or `except ImportError` around the project's own modules.
Inside the middle floors each room (package) uses only the rooms declared for it (ROOMS_USED).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import REPO

PACKAGES = ("perf_models", "server", "prompts")

# Lower number = lower layer. A module may import only its own layer or lower ones (and never in a cycle).
LAYERS: dict[str, int] = {
    "perf_models": 0,
    "server": 1,  # server/__init__ and the basics at the package's top level (errors, roots, vocab, numbers, ...)
    "sdpa_analyzer.server.writers": 2,
    "sdpa_analyzer.server.folder": 3,
    "sdpa_analyzer.server.findings": 3,
    "sdpa_analyzer.server.render": 3,
    "sdpa_analyzer.server.ingest": 4,
    "sdpa_analyzer.server.synthetic": 4,
    "sdpa_analyzer.server.scoring": 4,
    "sdpa_analyzer.server.ranks": 5,  # many rank traces: runs ingest + scoring per rank, reduces the ranks' results
    "sdpa_analyzer.server.tools": 6,
    "prompts": 7,
    "sdpa_analyzer.server.mcp_server": 8,
    "sdpa_analyzer.server.cli": 9,
}
MAX_MODULE_LINES = 900


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    best = ""
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return LAYERS[best]


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in the file, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno
            for alias in node.names:  # `from server.tools import load` imports the module server.tools.load
                sub = f"{node.module}.{alias.name}"
                if sub in MODULES:
                    yield sub, node.lineno


def _project_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for target, _ in _imports(path):
            if target in MODULES and target != name:
                edges[name].add(target)
    return edges


def test_no_relative_imports() -> None:
    bad = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                bad.append(f"{name}:{node.lineno}")
    assert not bad, f"relative imports (use absolute ones): {bad}"


def test_layers_point_one_way() -> None:
    bad = []
    for name, path in MODULES.items():
        for target, line in _imports(path):
            if target in MODULES and _layer(target) > _layer(name):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {target} (a higher layer)")
    assert not bad, "\n".join(bad)


def test_only_the_cli_imports_the_cli() -> None:
    bad = [
        f"{path.relative_to(REPO)}:{line}"
        for name, path in MODULES.items()
        if not name.startswith("sdpa_analyzer.server.cli")
        for target, line in _imports(path)
        if target == "sdpa_analyzer.server.cli" or target.startswith("sdpa_analyzer.server.cli.")
    ]
    assert not bad, bad


@pytest.mark.parametrize(
    ("library", "allowed"), [("mcp", ("sdpa_analyzer.server.mcp_server",)), ("argparse", ("sdpa_analyzer.server.cli", "prompts"))]
)
def test_protocol_and_argparse_stay_at_the_top(library: str, allowed: tuple[str, ...]) -> None:
    bad = [
        f"{path.relative_to(REPO)}:{line}"
        for name, path in MODULES.items()
        if not any(name == a or name.startswith(a + ".") for a in allowed)
        for target, line in _imports(path)
        if target == library or target.startswith(library + ".")
    ]
    assert not bad, f"{library} imported below its layer: {bad}"


def test_perf_models_imports_nothing_of_ours_but_itself() -> None:
    bad = [
        f"{path.relative_to(REPO)}:{line} imports {target}"
        for name, path in MODULES.items()
        if name.startswith("perf_models")
        for target, line in _imports(path)
        if target.split(".")[0] in ("server", "prompts", "mcp")
    ]
    assert not bad, bad


def test_no_import_cycles() -> None:
    edges = _project_edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            # a package's __init__ importing its own submodules is a re-export, not a cycle of meaning
            if len(comp) > 1 and not _reexport_only(comp, edges):
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def _reexport_only(comp: list[str], edges: dict[str, set[str]]) -> bool:
    """True when the cycle only exists through package __init__ files re-exporting their own submodules."""
    inits = {m for m in comp if MODULES[m].name == "__init__.py"}
    rest = [m for m in comp if m not in inits]
    return bool(inits) and all(not (edges[m] & set(rest)) for m in rest)


def test_no_dynamic_imports_of_our_modules() -> None:
    bad = []
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module",
                "__import__",
            ):
                bad.append(f"{name}:{node.lineno} dynamic import")
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
                if names & {"ImportError", "ModuleNotFoundError"}:
                    bad.append(f"{name}:{node.lineno} except ImportError")
    assert not bad, bad


def test_no_module_is_oversized() -> None:
    big = {
        str(path.relative_to(REPO)): n
        for path in MODULES.values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not big, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {big}"


def test_starting_the_server_does_not_import_matplotlib() -> None:
    # matplotlib is ~40 MB of a server's resident memory; only plot_roofline and render_report draw charts.
    code = "import sys, server.mcp_server, server.cli.main; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr


# ---- each fact in one place ----------------------------------------------------------------------------------------
_FOLDER_PATH = re.compile(
    r"^(\./)?(category_data|category_findings/|metadata/|plots/)|_(ops\.csv|metrics\.json|roofline\.csv|metadata\.json"
    r"|findings\.md|findings\.template\.md)$|^(category_manifest\.json|trace2_gpu_utilization\.json|report\.html)$"
)


def _code_strings(path: Path) -> Iterator[tuple[str, int]]:
    """String constants of the code (docstrings left out), f-string pieces included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }  # fmt: skip
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value, node.lineno
        # `out / "category_findings"`: a folder joined to a path (the bare name is also a metrics JSON key)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant):
            if node.right.value in ("category_findings", "metadata", "plots"):
                yield f"{node.right.value}/", node.lineno


def test_analysis_folder_paths_are_spelled_only_in_layout() -> None:
    """A path token (no spaces: prose in descriptions may name files) of the analysis folder outside layout.py."""
    bad = [
        f"{path.relative_to(REPO)}:{line} {text!r}"
        for name, path in MODULES.items()
        if name != "sdpa_analyzer.server.folder.layout"
        for text, line in _code_strings(path)
        if not any(c.isspace() for c in text) and _FOLDER_PATH.search(text)
    ]
    assert not bad, "spell analysis-folder paths through server.folder.layout:\n" + "\n".join(bad)


_THRESHOLD_NAME = re.compile(r"(_PCT|_RATIO|_FACTOR|_COV|_EDGES)$|^(HEURISTIC_|MIN_GROUP|MIN_HIGH|ANOMALY)")


def test_thresholds_live_in_vocab_or_perf_models() -> None:
    """Module-level numeric thresholds of verdicts and ranking are defined in server/vocab.py or perf_models only."""
    bad = []
    for name, path in MODULES.items():
        if name.startswith("perf_models") or name == "sdpa_analyzer.server.vocab":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            numeric = node.value is not None and any(
                isinstance(c, ast.Constant) and isinstance(c.value, int | float) and not isinstance(c.value, bool)
                for c in ast.walk(node.value)) if targets else False  # fmt: skip
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            bad += [f"{where} {n}" for n in names if numeric and _THRESHOLD_NAME.search(n)]
    assert not bad, "define thresholds in server/vocab.py (or perf_models data):\n" + "\n".join(bad)


def test_no_tool_imports_another_tool() -> None:
    tools = {n for n, p in MODULES.items() if n.startswith("sdpa_analyzer.server.tools.") and "TOOL = ToolSpec(" in p.read_text()}
    bad = [
        f"{MODULES[name].relative_to(REPO)}:{line} imports {target}"
        for name in sorted(tools)
        for target, line in _imports(MODULES[name])
        if target in tools and target != name
    ]
    assert not bad, "a tool imports another tool (move what they share below server.tools):\n" + "\n".join(bad)


def test_no_subpackage_imports_a_module_above_it_that_imports_the_subpackage() -> None:
    """perf_models.ops.batch read perf_models.registry, which is built from perf_models.ops: the floor below imported
    the floor above (issue 35). A module of a subpackage `pkg.sub` may import a top-level module `pkg.mod` only when
    `pkg.mod` does not itself import from `pkg.sub`."""
    edges = _project_edges()
    bad = []
    for module, imported in edges.items():
        parts = module.split(".")
        if len(parts) < 3 and not (len(parts) == 2 and MODULES[module].name == "__init__.py"):
            continue  # a top-level module (pkg.mod) or the package itself
        sub = ".".join(parts[:2])
        for target in imported:
            above = target.split(".")
            if len(above) == 2 and MODULES[target].name != "__init__.py" and not target.startswith(sub + "."):
                if target != sub and any(t == sub or t.startswith(sub + ".") for t in edges[target]):
                    bad.append(f"{module} imports {target}, which imports {sub}")
    assert not bad, bad


# The rooms of the middle floors, and which of the others each may use: the folder is the shared room below them; a
# room reads another only for what is that room's job (the report's findings words, the chart's types). The scoring
# read the metrics JSON through server.findings and the trace's deviceProperties through server.ingest (issue 35):
# both readers now sit where they are used (server.folder.metrics_file, server.scoring.device).
ROOMS_USED: dict[str, frozenset[str]] = {
    "sdpa_analyzer.server.folder": frozenset(),
    "sdpa_analyzer.server.synthetic": frozenset(),
    "sdpa_analyzer.server.findings": frozenset({"sdpa_analyzer.server.folder"}),
    "sdpa_analyzer.server.render": frozenset({"sdpa_analyzer.server.findings"}),
    "sdpa_analyzer.server.ingest": frozenset({"sdpa_analyzer.server.folder"}),
    "sdpa_analyzer.server.scoring": frozenset({"sdpa_analyzer.server.folder", "sdpa_analyzer.server.render"}),
}


def _room(module: str) -> str | None:
    return next((r for r in ROOMS_USED if module == r or module.startswith(r + ".")), None)


def test_rooms_use_only_the_rooms_declared_for_them() -> None:
    bad = [
        f"{path.relative_to(REPO)}:{line} imports {target} ({room} may use {sorted(ROOMS_USED[room]) or 'none'})"
        for name, path in MODULES.items()
        if (room := _room(name)) is not None
        for target, line in _imports(path)
        if target in MODULES and (used := _room(target)) not in (None, room) and used not in ROOMS_USED[room]
    ]
    assert not bad, "a room reaches into another (move the shared code to the room below both):\n" + "\n".join(bad)


def test_the_metrics_json_is_read_through_one_reader() -> None:
    """The streamed-or-whole fallback lives once, in server.folder.metrics_file.metrics_document: no other module of
    ours calls the streamed read (open_streamed) and handles its None itself."""
    bad = [
        f"{path.relative_to(REPO)}:{node.lineno} imports open_streamed from {node.module}"
        for name, path in MODULES.items()
        if name != "sdpa_analyzer.server.folder.metrics_file"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and any(alias.name == "open_streamed" for alias in node.names)
    ]
    assert not bad, "read the metrics JSON with server.folder.metrics_file.metrics_document:\n" + "\n".join(bad)
