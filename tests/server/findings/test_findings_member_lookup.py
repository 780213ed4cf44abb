"""Which operations[] entries a finding's members stand for: the indexed lookup against a brute-force scan.

The template and the validator used to compare every member with every operation of its name (20,000 rows of one
op name: 6 minutes for the template); they now look members up in an index. The brute force below is the rule as
docs/findings-format.md states it, written out plainly, so the index can be checked against it on any input.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sdpa_analyzer.server.findings.metrics_view import FindingView, finding_operation_indices, first_operation_with_args


def _close(a: Any, b: Any) -> bool:
    def num(x: Any) -> float | None:
        return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None

    fa, fb = num(a), num(b)
    if fa is None or fb is None:
        return fa is None and fb is None
    return abs(fa - fb) <= 1e-9 * max(1.0, abs(fa), abs(fb))


def brute_force(members: list[dict[str, Any]], operations: list[dict[str, Any]]) -> list[int]:
    """Per member: same name; narrowed by equal args if it has args and some match, else by equal time and
    efficiency if some match, else every operation of the name. The union, in first-seen order."""
    out: list[int] = []
    for m in members:
        named = [i for i, op in enumerate(operations) if op.get("name") == m.get("operation")]
        pick = named
        if len(named) > 1:
            by_args = [i for i in named if m.get("args") is not None and operations[i].get("args") == m["args"]]
            by_numbers = [
                i
                for i in named
                if _close(operations[i].get("time_ms"), m.get("time_ms"))
                and _close((operations[i].get("efficiency") or {}).get("efficiency_percent"), m.get("efficiency_pct"))
            ]
            pick = by_args or by_numbers or named
        out += [i for i in pick if i not in out]
    return out


def _finding(members: list[dict[str, Any]]) -> FindingView:
    return FindingView(rank=1, library=None, heuristic=False, low="1", mid="1", high="1", percent_text=None,
                       members=members, raw={})  # fmt: skip


NAMES = st.sampled_from(["a", "b", "c", ["a"]])  # a list: an unhashable name of a hand-edited file
TIMES = st.sampled_from([None, 0.0, 1.0, 1.5, 2.0, 1.0 + 1e-12, 3, "1.0"])
EFFS = st.sampled_from([None, 10.0, 20.0, 10.000000000001])
ARGS = st.sampled_from([None, "x", "y", ["x"]])


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    operations = [
        {"name": draw(NAMES), "args": draw(ARGS), "time_ms": draw(TIMES),
         "efficiency": {"efficiency_percent": draw(EFFS)}}
        for _ in range(draw(st.integers(0, 12)))
    ]
    members = [
        {"operation": draw(NAMES), "args": draw(ARGS), "time_ms": draw(TIMES), "efficiency_pct": draw(EFFS)}
        for _ in range(draw(st.integers(0, 8)))
    ]
    return members, operations


@settings(max_examples=400, derandomize=True, deadline=None)
@given(cases())
def test_indexed_lookup_equals_the_brute_force_rule(case: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    members, operations = case
    assert finding_operation_indices(_finding(members), operations) == brute_force(members, operations)


def test_many_members_of_one_name_pick_their_own_rows() -> None:
    # 3,000 rows of one op name differing only in time: each member stands for exactly its own row
    operations = [
        {"name": "aten::sdpa", "args": None, "time_ms": round(0.001 * (i + 1), 3),
         "efficiency": {"efficiency_percent": 50.0}}
        for i in range(3000)
    ]
    members = [{"operation": "aten::sdpa", "time_ms": round(0.001 * (i + 1), 3), "efficiency_pct": 50.0}
               for i in reversed(range(3000))]  # fmt: skip
    assert finding_operation_indices(_finding(members), operations) == list(reversed(range(3000)))


def test_table_rows_are_matched_by_name_and_args_as_written() -> None:
    operations = [
        {"name": "op", "args": "(1, 2)"},
        {"name": "op", "args": None},
        {"name": "op", "args": "(1, 2)"},
        {"name": "other", "args": "(3,)"},
    ]
    assert first_operation_with_args(operations, "op", "(1, 2)") == 0  # the first of equal rows
    assert first_operation_with_args(operations, "op", "—") == 1  # no args is written as the em dash
    assert first_operation_with_args(operations, "op", "(3,)") is None
    assert first_operation_with_args(operations, "missing", "(1, 2)") is None


def _counting(monkeypatch: Any, name: str = "_same_number") -> list[int]:
    """Count the calls of metrics_view's `name`: by default the number comparisons the lookup makes (the quadratic
    path compared every member with every row)."""
    from sdpa_analyzer.server.findings import metrics_view

    calls = [0]
    real = getattr(metrics_view, name)

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(metrics_view, name, counted)
    return calls


def test_many_rows_of_one_name_sharing_one_time_cost_linear_comparisons(monkeypatch: Any) -> None:
    """4,000 rows of one op name at one time, differing in efficiency (issue 18: tens of seconds, 2 x n^2 = 32
    million comparisons): each member still finds exactly its own row, with a few comparisons each."""
    n = 4000
    calls = _counting(monkeypatch)
    effs = [round(10 + 0.01 * i, 2) for i in range(n)]
    operations = [{"name": "aten::sdpa", "args": None, "time_ms": 0.5, "efficiency": {"efficiency_percent": e}}
                  for e in effs]  # fmt: skip
    members = [{"operation": "aten::sdpa", "time_ms": 0.5, "efficiency_pct": round(10 + 0.01 * i, 2)}
               for i in reversed(range(n))]  # fmt: skip
    assert finding_operation_indices(_finding(members), operations) == list(reversed(range(n)))
    assert calls[0] <= 4 * n, calls[0]  # the quadratic path: 2 * n * n


def test_members_that_cannot_narrow_by_args_share_one_answer(monkeypatch: Any) -> None:
    """Rows of one name, time and efficiency; members with args no row has: every member's answer is the same rows,
    looked up once (else n members x n rows again)."""
    n = 3000
    calls = _counting(monkeypatch)
    operations = [{"name": "op", "args": f"({i},)", "time_ms": 1.0, "efficiency": {"efficiency_percent": 50.0}}
                  for i in range(n)]  # fmt: skip
    members = [{"operation": "op", "args": f"(none {i},)", "time_ms": 1.0, "efficiency_pct": 50.0} for i in range(n)]
    assert finding_operation_indices(_finding(members), operations) == list(range(n))
    assert calls[0] <= 4 * n, calls[0]


def test_a_finding_asked_again_is_answered_once_and_each_caller_gets_its_own_lists(monkeypatch: Any) -> None:
    """The validator's checks ask for the same finding's rows five or six times: the lookup runs once per members
    list, a caller that edits its answer does not change the next one, and another members list is looked up."""
    from sdpa_analyzer.server.findings import metrics_view

    runs = _counting(monkeypatch, "_distinct_member_lookups")
    operations = [{"name": "op", "args": f"({i},)", "time_ms": 1.0 + i} for i in range(5)]
    members = [{"operation": "op", "args": "(3,)"}, {"operation": "op", "time_ms": 2.0}]
    finding = _finding(members)
    first = finding_operation_indices(finding, operations)
    assert first == [3, 1]  # by hand: args (3,) is row 3; time 2.0 is row 1
    first.append(99)
    metrics_view.distinct_member_lookups(members, operations)[0][1].append(42)
    assert finding_operation_indices(finding, operations) == [3, 1]
    assert runs[0] == 1
    assert finding_operation_indices(_finding([{"operation": "op", "args": "(0,)"}]), operations) == [0]
    assert runs[0] == 2
