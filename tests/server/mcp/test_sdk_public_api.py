"""The MCP glue uses only the SDK's public API: no name with a leading underscore imported from or reached into
`mcp`, no subclass of an SDK class (an override of its internals), no type-ignore (issue 35, item 3)."""

from __future__ import annotations

import ast

from tests.support import REPO

GLUE = REPO / "server" / "mcp_server.py"


def _sdk_names(tree: ast.Module) -> set[str]:
    """Local names bound to something imported from the SDK (`mcp`, `mcp_types`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("mcp", "mcp_types"):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def test_only_public_sdk_names_are_imported() -> None:
    tree = ast.parse(GLUE.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("mcp", "mcp_types"):
            parts = [*(node.module or "").split("."), *(a.name for a in node.names)]
            assert not any(p.startswith("_") for p in parts), ast.unparse(node)


def test_no_sdk_class_is_subclassed_and_no_private_attribute_is_used() -> None:
    tree = ast.parse(GLUE.read_text(encoding="utf-8"))
    sdk = _sdk_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            assert not bases & sdk, f"class {node.name} subclasses the SDK's {bases & sdk}"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            assert not (isinstance(node.value, ast.Name) and node.value.id in sdk), ast.unparse(node)


def test_no_type_ignore() -> None:
    assert "type: ignore" not in GLUE.read_text(encoding="utf-8")


def test_the_checks_can_fail() -> None:
    """The three checks above, on a stand-in of the old glue: each finds its fault."""
    old = (
        "from mcp.server.mcpserver import MCPServer\n"
        "from mcp.server.lowlevel._private import thing\n"
        "class _Server(MCPServer):\n"
        "    def f(self, name):  # type: ignore[override]\n"
        "        return MCPServer._tool_input_schema(self, name)\n"
    )
    tree = ast.parse(old)
    sdk = _sdk_names(tree)
    assert "MCPServer" in sdk
    assert any(isinstance(n, ast.ClassDef) and {b.id for b in n.bases} & sdk for n in ast.walk(tree))
    assert any(isinstance(n, ast.ImportFrom) and "_private" in (n.module or "") for n in ast.walk(tree))
    assert any(isinstance(n, ast.Attribute) and n.attr.startswith("_") and n.value.id in sdk for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name))
    assert "type: ignore" in old
