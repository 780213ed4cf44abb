"""Findings files (`category_findings/<cat>_findings.md`): the validator and the template renderer.

The contract is prompts/findings_format.md; every error carries a rule id `R<n>-<what>` (n = rule number of
that page, R0 = unfilled template slot), a 1-based line and a fix hint.

The names below are imported on first use (`__getattr__`): a tool declaration that needs only `models` or `spec`
does not load the validator (markdown-it) or the template renderer with them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FindingError",
    "MetricsFormatError",
    "ValidationReport",
    "find_metrics_for",
    "load_metrics",
    "render_error_file",
    "render_findings_template",
    "render_no_data_file",
    "validate_findings_file",
    "validate_findings_text",
]


def __getattr__(name: str) -> Any:
    if name in ("MetricsFormatError", "load_metrics"):
        from sdpa_analyzer.server.findings import metrics_view as module
    elif name in ("FindingError", "ValidationReport"):
        from sdpa_analyzer.server.findings import models as module
    elif name in ("render_error_file", "render_findings_template", "render_no_data_file"):
        from sdpa_analyzer.server.findings import template as module
    elif name in ("find_metrics_for", "validate_findings_file", "validate_findings_text"):
        from sdpa_analyzer.server.findings import validate as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
