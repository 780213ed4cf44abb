"""What `pip install .` puts in site-packages: one top-level name, `sdpa_analyzer`, and nothing named `server`.

The repository keeps the design card's folders (server/, perf_models/, prompts/) at its root; pyproject.toml maps
each under `sdpa_analyzer` (package-dir), so the installed import names cannot collide with another distribution's
`server` or a user's own `prompts` module. These tests read the declaration and the code, independently of it.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from tests.support import NAMESPACE, PACKAGES, REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def test_every_installed_package_lives_under_one_name() -> None:
    assert SETUPTOOLS["package-dir"] == {f"{NAMESPACE}.{pkg}": pkg for pkg in PACKAGES}
    assert all(name.startswith(NAMESPACE + ".") for name in SETUPTOOLS["packages"])
    assert all(key.startswith(NAMESPACE + ".") for key in SETUPTOOLS["package-data"])


def test_the_package_list_is_every_folder_with_an_init() -> None:
    on_disk = sorted(
        ".".join((NAMESPACE, *init.parent.relative_to(REPO).parts))
        for pkg in PACKAGES
        for init in (REPO / pkg).rglob("__init__.py")
        if "__pycache__" not in init.parts
    )
    assert sorted(SETUPTOOLS["packages"]) == on_disk, "add the new folder to [tool.setuptools] packages"


def test_the_entry_point_and_version_use_the_installed_name() -> None:
    assert PYPROJECT["project"]["scripts"]["sdpa-analyzer"] == f"{NAMESPACE}.server.cli.main:main"
    assert SETUPTOOLS["dynamic"]["version"]["attr"] == f"{NAMESPACE}.server.__version__"


def _python_files() -> list[Path]:
    skip = {".venv", ".git", "__pycache__", "node_modules", "build", "dist"}  # build/: an old setuptools build
    return [p for p in REPO.rglob("*.py") if not skip & set(p.relative_to(REPO).parts)]


def test_no_code_imports_a_repository_folder_by_its_bare_name() -> None:
    """`import server...` would work from a checkout (its root is on sys.path) and fail once installed."""
    bare = set(PACKAGES)
    bad = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            bad += [f"{path.relative_to(REPO)}:{node.lineno} {n}" for n in names if n.split(".")[0] in bare]
    assert not bad, f"import these through {NAMESPACE}.: {bad}"
