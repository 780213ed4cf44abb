"""Result types of the findings validator (pydantic, so the MCP tool returns them as structured content)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sdpa_analyzer.server.results import ResultModel


class FindingError(ResultModel):
    """One broken rule of prompts/findings_format.md, where it is, and how to fix it."""

    rule: str = Field(description="rule id, e.g. 'R5-columns' (rule number of prompts/findings_format.md + sub-id)")
    line: int | None = Field(description="1-based line of the findings file; None when the whole file is at fault")
    message: str = Field(description="what is wrong")
    fix: str = Field(description="a concrete edit that makes the rule pass")
    edit: list[str] | None = Field(
        None, description="the fix as a literal edit of that line: [old text, new text] (new may be empty)"
    )

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "file"
        return f"[{self.rule}] {where}: {self.message} Fix: {self.fix}"


FileKind = Literal["findings", "empty", "no_data", "error"]


class ValidationReport(ResultModel):
    passed: bool
    errors: list[FindingError] = Field(description="the broken rules, in file order (a result lists the first 40)")
    warnings: list[FindingError]
    error_count: int = Field(0, description="all errors, listed or not")
    p_items: int = Field(description="number of `### P<rank>:` items found")
    scope: str = Field(description="comparison scope the file was checked against")
    tier: str
    kind: FileKind = Field(description="findings / empty (no findings) / no_data / error (Status: ERROR)")
    metrics_checked: bool = Field(description="False when no metrics JSON was given: numbers, cells, prose not checked")
    references: int = Field(0, description="references resolved (`{{P1.op1.time_ms}}` written out)")
    resolved_text: str | None = Field(
        None, exclude=True, description="the file with its references written out (None when it has none)"
    )
    resolved_file: str | None = Field(None, description="where the resolved file was written (validate_findings)")

    def text(self) -> str:
        """Plain-text summary for the CLI and for an LLM retry prompt."""
        head = "PASS: findings file is valid" if self.passed else f"FAIL: {len(self.errors)} error(s)"
        lines = [head, *(f" - {e}" for e in self.errors), *(f" ~ warning {w}" for w in self.warnings)]
        return "\n".join(lines)
