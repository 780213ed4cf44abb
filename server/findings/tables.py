"""Data table rules: header columns (5), cells copied verbatim (6), Efficiency / Bound cells (7)."""

from __future__ import annotations

import re
from typing import Any

from sdpa_analyzer.server.findings.document import Candidate, Collector, Document
from sdpa_analyzer.server.findings.markdown import Table, find_table, unescape_cell
from sdpa_analyzer.server.findings.metrics_view import (
    FindingView,
    distinct_member_lookups,
    expected_bound_cell,
    expected_efficiency_cell,
    expected_verdict_cells,
    first_operation_with_args,
    flops_per_byte,
    operations_named,
    verbatim_text,
)
from sdpa_analyzer.server.findings.spec import MISSING, VERBATIM_COLUMNS, VERDICT_COLUMNS, cell_text, columns_for

# Spellings of "no value" that the spec replaces with `—`.
_NOT_DASH = frozenset({"", "-", "--", "N/A", "n/a", "NA", "None", "none", "null", "nan", "NaN"})
_EFFICIENCY = re.compile(r"^(\d+\.\d{2})% of (\d+(?:\.\d+)?) (TFLOPS|TB/s)$")


def _header_text(columns: tuple[str, ...]) -> str:
    return "| " + " | ".join(columns) + " |"


def data_table(doc: Document, candidate: Candidate, labels: dict[str, int], scope: str, out: Collector) -> Table | None:
    """Rule 5: the table under **Data:** with the mandatory columns first, in order."""
    if "Data" not in labels:
        return None
    start = labels["Data"] + 1
    later = [index for index in labels.values() if index > labels["Data"]]
    stop = min(later) if later else candidate.end
    table = find_table(doc.lines, start, stop)
    columns = columns_for(scope)
    if table is None:
        out.error(
            "R5-no-table",
            labels["Data"],
            f"candidate rank={candidate.rank} has no table under **Data:**.",
            f"Add the {scope} table starting with `{_header_text(columns)}`.",
        )
        return None
    head = table.header[: len(columns)]
    if tuple(head) != columns:
        missing = [c for c in columns if c not in table.header]
        detail = f"missing {', '.join(missing)}" if missing else f"got `{_header_text(tuple(head))}`"
        out.error(
            "R5-columns",
            table.header_index,
            f"{scope} Data table must start with the mandatory columns in order ({detail}).",
            f"Use the header `{_header_text(columns)}` (extra columns only after these).",
        )
    if table.separator is None:
        out.error(
            "R5-separator",
            table.header_index + 1,
            "table header is not followed by a `|---|` row.",
            "Add `|" + "---|" * len(table.header) + "` under the header.",
        )
    elif len(table.separator) != len(table.header):
        out.error(
            "R5-separator",
            table.separator_index,
            "separator row has a different number of cells.",
            "Use one `---` cell per header column.",
        )
    if not table.rows:
        out.error(
            "R5-no-rows",
            table.header_index,
            "Data table has no rows.",
            "Add one row per operation of the finding (from the metrics JSON operations[]).",
        )
    for index, cells in table.rows:
        if len(cells) != len(table.header):
            out.error(
                "R5-row-cells",
                index,
                f"row has {len(cells)} cells, header has {len(table.header)}.",
                "Give every row one cell per header column; write `—` for a missing value.",
            )
        empty = [table.header[i] for i, cell in enumerate(cells) if cell in _NOT_DASH and i < len(table.header)]
        if empty:
            out.error(
                "R5-empty-cell",
                index,
                f"missing value(s) not written as `—`: {', '.join(empty)}.",
                "Write `—` (em dash) for a missing value; never leave a cell empty or write N/A.",
            )
    return table


def _cell(cells: list[str], header: list[str], column: str) -> str | None:
    if column not in header:
        return None
    position = header.index(column)
    return cells[position] if position < len(cells) else None


def _efficiency_matches(cell: str, expected: str) -> bool:
    """Same text, or the same percent (to 2 decimals), peak and unit spelled slightly differently."""
    if cell == expected:
        return True
    got, want = _EFFICIENCY.match(cell), _EFFICIENCY.match(expected)
    if not got or not want:
        return False
    return (
        got.group(3) == want.group(3)
        and float(got.group(2)) == float(want.group(2))
        and abs(float(got.group(1)) - float(want.group(1))) < 0.0051
    )


def check_table_rows(
    table: Table,
    candidate: Candidate,
    finding: FindingView | None,
    operations: list[dict[str, Any]],
    scope: str,
    out: Collector,
) -> None:
    """Rules 6 and 7 per row, matched to operations[] by Operation name + Args."""
    header = table.header
    args_column = "Args (T1)" if scope == "comparative" else "Args"
    matched: set[int] = set()
    heuristic = bool(finding and finding.heuristic)
    for index, cells in table.rows:
        op_index = _match_row(index, cells, header, args_column, operations, out)
        if op_index is None:
            continue
        matched.add(op_index)
        op = operations[op_index]
        for column in ("Kernel Path", "Kernel Name"):
            cell = _cell(cells, header, column)
            want = verbatim_text(op.get(VERBATIM_COLUMNS[column]))
            if cell is not None and unescape_cell(cell) != want:
                rule = "R6-kernel-path" if column == "Kernel Path" else "R6-kernel-name"
                field = VERBATIM_COLUMNS[column]
                out.error(
                    rule,
                    index,
                    f"{column} cell differs from operations[].{field} of {op.get('name')}.",
                    f"Copy it verbatim (keep `<br>`): `{want}`.",
                )
        _check_efficiency_cells(index, cells, header, op, heuristic, scope, out)
        _check_numbers(index, cells, header, op, scope, out)
        _check_verdict_cells(index, cells, header, op, heuristic, out)
    if finding is not None:
        _check_coverage(table, candidate, finding, operations, matched, out)


def _match_row(
    index: int, cells: list[str], header: list[str], args_column: str, operations: list[dict[str, Any]], out: Collector
) -> int | None:
    name_cell = _cell(cells, header, "Operation")
    if name_cell is None:
        return None
    name = name_cell.strip("`")
    same_name = operations_named(operations, name)
    if not same_name:
        out.error(
            "R6-operation",
            index,
            f"operation `{name}` is not in the metrics JSON operations[].",
            "Use the op name exactly as operations[].name writes it; rows come only from operations[].",
        )
        return None
    args_cell = _cell(cells, header, args_column)
    if args_cell is None:
        return same_name[0] if len(same_name) == 1 else None
    hit = first_operation_with_args(operations, name, unescape_cell(args_cell))
    if hit is not None:
        return hit
    choices = " or ".join(f"`{verbatim_text(operations[i].get('args'))}`" for i in same_name[:2])
    out.error(
        "R6-args",
        index,
        f"{args_column} of `{name}` matches no operations[] entry of that name.",
        f"Copy operations[].args verbatim (keep `<br>`): {choices}.",
    )
    return None


def _check_efficiency_cells(
    index: int, cells: list[str], header: list[str], op: dict[str, Any], heuristic: bool, scope: str, out: Collector
) -> None:
    if scope == "standalone":
        cell = _cell(cells, header, "Efficiency")
        want = expected_efficiency_cell(op, heuristic)
        if cell is not None and not _efficiency_matches(cell, want):
            why = "heuristic finding / no efficiency" if want == MISSING else "from operations[].efficiency"
            out.error(
                "R7-efficiency",
                index,
                f"Efficiency cell `{cell}` disagrees with the op's record ({why}).",
                f"Write `{want}`.",
            )
    bound_column = "Bound" if scope == "standalone" else "Bound (T1)"
    cell = _cell(cells, header, bound_column)
    want = expected_bound_cell(op, heuristic, scope)
    if cell is not None and cell != want:
        out.error(
            "R7-bound",
            index,
            f"{bound_column} cell `{cell}` disagrees with operations[].efficiency.bound_type.",
            f"Write `{want}`.",
        )


def _numeric_cells(op: dict[str, Any], scope: str) -> dict[str, str]:
    """The number cells of a row as the template writes them (the metrics JSON's own spelling)."""
    if scope == "standalone":
        return {
            "Time (ms)": cell_text(op.get("time_ms")),
            "%E2E": cell_text(op.get("percent_of_total")),
            "Count": cell_text(op.get("count")),
            "FLOPS/Byte": cell_text(flops_per_byte(op)),
        }
    return {
        "Trace 1 Time (ms)": cell_text(op.get("time_ms")),
        "Trace 2 Time (ms)": cell_text(op.get("t2_time_ms")),
        "Count (T1/T2)": f"{cell_text(op.get('count'))}/{cell_text(op.get('count_trace2'))}",
        "Difference (ms)": cell_text(op.get("difference_ms")),
        "FLOPS/Byte (T1)": cell_text(flops_per_byte(op)),
    }


def _check_numbers(
    index: int, cells: list[str], header: list[str], op: dict[str, Any], scope: str, out: Collector
) -> None:
    """Rule 6 for numbers: every number cell is the metrics JSON's number, spelled as it writes it."""
    for column, want in _numeric_cells(op, scope).items():
        cell = _cell(cells, header, column)
        if cell is not None and unescape_cell(cell) != unescape_cell(want):
            out.error(
                "R6-number",
                index,
                f"{column} cell `{cell}` of `{op.get('name')}` differs from the metrics JSON ({want}).",
                f"Write `{want}` exactly as operations[] gives it (render_findings_template writes it).",
            )


def _check_verdict_cells(
    index: int, cells: list[str], header: list[str], op: dict[str, Any], heuristic: bool, out: Collector
) -> None:
    """The verdict columns the template adds (both utilizations, regime, band) say what the record says."""
    for column, want in zip(VERDICT_COLUMNS, expected_verdict_cells(op, heuristic), strict=True):
        cell = _cell(cells, header, column)
        if cell is not None and unescape_cell(cell) != unescape_cell(want):
            out.error(
                "R7-verdict",
                index,
                f"{column} cell `{cell}` of `{op.get('name')}` differs from operations[].roofline ({want}).",
                f"Write `{want}`.",
            )


def _check_coverage(
    table: Table,
    candidate: Candidate,
    finding: FindingView,
    operations: list[dict[str, Any]],
    matched: set[int],
    out: Collector,
) -> None:
    members: set[int] = set()
    for member, indices in distinct_member_lookups(finding.members, operations):  # a repeated member: once
        members.update(indices)
        if indices and not matched.intersection(indices):
            out.error(
                "R6-missing-row",
                table.header_index,
                f"Data table of rank={candidate.rank} lacks a row for member `{member.get('operation')}`.",
                "Add the member's row with its cells copied from operations[] (render_findings_template writes them).",
            )
    for index in sorted(matched - members):
        out.warn(
            "R6-foreign-row",
            table.header_index,
            f"`{operations[index].get('name')}` is not a member of finding rank={candidate.rank}.",
            "Keep only the finding's members in its Data table.",
        )
