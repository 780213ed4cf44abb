"""The README, the pages it points to and the set-up are true for a new user: every tool named once, every path there,
every page linked, every CLI line parses,
the Claude Code steps leave the checkout clean, the install prints no deprecation banner, and a run without
../shared says why its tests skipped."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sdpa_analyzer.server.cli.main import build_parser
from sdpa_analyzer.server.tools import TOOLS
from tests.support import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
# the README points to these pages for everything beyond the first steps; what it says there must hold too
PAGES = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8")
         for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md"]}
FINDINGS_PAGE = PAGES["docs/findings.md"]
_REPO_PATH = re.compile(r"(?<![\w/.:-])((?:perf_models|server|prompts|tests|bench|docs|\.ci)/[\w./-]*|agent\.md|"
                        r"\.mcp\.json\.example|pyproject\.toml|Makefile)")  # fmt: skip


def test_every_mcp_tool_is_in_the_readme_tool_table_once_with_its_command() -> None:
    section = README.split("## Tools", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `([\w-]+)` \| .+ \|$", section, flags=re.M)
    mcp = {spec.name: spec.cli.command for spec in TOOLS if spec.mcp}
    assert sorted(name for name, _ in rows) == sorted(mcp)  # each once, none missing, none extra
    assert all(mcp[name] == command for name, command in rows)


def test_the_readme_is_a_front_door_and_every_page_it_names_exists() -> None:
    assert len(README.encode()) <= 12 * 1024  # the reference lives in docs/, one line each here
    linked = set(re.findall(r"\]\(((?:docs|bench)/[\w./-]+)\)", README))
    assert linked == set(PAGES) - {"README.md"}  # every page of docs/ and the benchmarks, one line each
    assert all((REPO / p).exists() for p in linked)


def test_every_repository_path_the_readme_and_its_pages_name_exists() -> None:
    named = set()
    for line in (line for text in PAGES.values() for line in text.splitlines()):
        line = re.sub(r"--method \S+", "", line)  # `--method prompts/get` is an MCP method, not a path
        named |= {m.rstrip(".,:;)") for m in _REPO_PATH.findall(line) if not re.search(r"[<{*…]", m)}
    missing = sorted(p for p in named if not (REPO / p).exists())
    assert not missing, missing
    assert "server/render/labels.py" in named  # the check reads the README's paths at all


def _cli_lines() -> list[list[str]]:
    """The `$S <command> ...` lines of the README's CLI block, as argv lists (optional parts unbracketed)."""
    block = README.split("## CLI", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = []
    for line in block.splitlines():
        if not line.startswith("$S "):
            continue
        text = line.split("#", 1)[0].replace("[", " ").replace("]", " ").replace("...", "")
        lines.append(shlex.split(text)[1:])
    return lines


def test_every_cli_line_of_the_readme_names_a_command_and_its_options() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    lines = _cli_lines()
    assert {argv[0] for argv in lines} >= {spec.cli.command for spec in TOOLS} | {"serve"}  # every command shown
    for argv in lines:
        assert argv[0] in commands, argv
        options = {o for action in commands[argv[0]]._actions for o in action.option_strings}
        flags = [a.split("=", 1)[0] for a in argv[1:] if a.startswith("-") and a not in ("-", "--")]
        assert set(flags) <= options, (argv[0], set(flags) - options)


def test_the_claude_code_steps_leave_the_checkout_clean() -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    written = [".claude/agents/sdpa-analyzer.md", ".mcp.json", "report.png", "demo-out/report.png"]
    proc = subprocess.run(["git", "check-ignore", *written], cwd=REPO, capture_output=True, text=True, check=False)
    assert sorted(proc.stdout.split()) == sorted(written)
    assert "--screenshot=demo-out/report.png" in PAGES["docs/report.md"]


def test_the_license_is_an_spdx_expression_setuptools_reads_without_a_banner() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    (setuptools,) = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    # an SPDX string is read from setuptools 77 on; older ones refuse it, and the table form warns in every build
    assert setuptools == "setuptools>=77"


@pytest.mark.slow
def test_building_the_package_prints_no_deprecation(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(REPO)],
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "project.license" not in proc.stdout + proc.stderr and "Deprecat" not in proc.stderr


def test_a_run_without_shared_says_why_its_tests_skipped(tmp_path) -> None:
    env = {**os.environ, "SDPA_SHARED_DIR": str(tmp_path / "no-shared")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/server/mcp/test_server_mcp.py",
         "-k", "fixture_flow"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    *_, totals, last = proc.stdout.splitlines()
    skipped = int(re.search(r"(\d+) skipped", totals).group(1))  # type: ignore[union-attr]
    # the last line of the run, after the totals: how many skipped, and why
    assert last == f"{skipped} of the skipped tests need ../shared (real traces and analysis folders; set " \
                   "SDPA_SHARED_DIR to point elsewhere)" and skipped > 0


def test_the_findings_page_example_passes_the_validator_on_its_trace(tmp_path: Path) -> None:
    """The filled P-item docs/findings.md shows is what the validator accepts on the H100 Qwen trace, numbers included:
    its block replaces the template's P-item (the rest filled by tests.support.fill_findings)."""
    import json

    from sdpa_analyzer.server.roots import DataRoots
    from sdpa_analyzer.server.tools import call
    from tests.support import TRACES, fill_findings, need

    trace = need(TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    (example,) = re.findall(r"```markdown\n(### P1:.*?)```", FINDINGS_PAGE, flags=re.S)
    example_lines = re.sub(r"\n(?![#*<])", " ", example.strip()).splitlines()  # the page wraps long lines
    roots = DataRoots([tmp_path, trace.parent])
    out = tmp_path / "out"
    call("analyze_trace", roots, trace_path=str(trace), output_dir=str(out))
    call("rank_findings", roots, output_dir=str(out), category="sdpa_fwd")
    tpl = call("render_findings_template", roots, output_dir=str(out), category="sdpa_fwd")
    path = out / "category_findings" / "sdpa_fwd_findings.md"
    metrics = json.loads((out / "category_data" / "sdpa_fwd_metrics.json").read_text())
    lines = fill_findings(path.read_text(), metrics).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("### P1:"))
    lines[start : start + len(example_lines)] = example_lines
    path.write_text("\n".join(lines) + "\n")
    assert tpl.p_items == 1
    report = call("validate_findings", roots, findings_path=str(path))
    assert report.passed, [str(e) for e in report.errors]
    # and the numbers the page quotes around it are the tools' (a page kept in step with the models)
    for number in ("19.43", "1.523", "4.37", "2.766", "101.6", "2.194", "0.408"):
        assert number in path.read_text(), number
