"""Findings files (`category_findings/<cat>_findings.md`): the validator and the template renderer.

The contract is prompts/findings_format.md; every error carries a rule id `R<n>-<what>` (n = rule number of
that page, R0 = unfilled template slot), a 1-based line and a fix hint.
"""

from server.findings.metrics_view import MetricsFormatError, load_metrics
from server.findings.models import FindingError, ValidationReport
from server.findings.template import render_error_file, render_findings_template, render_no_data_file
from server.findings.validate import find_metrics_for, validate_findings_file, validate_findings_text

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
