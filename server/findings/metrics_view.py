"""Read what the findings checks need out of a `<cat>_metrics.json` dict.

The metrics JSON is written by `rank_findings` (or by an external TraceLens-style pipeline); a malformed
one raises MetricsFormatError naming the field, so the caller can tell the user which file to fix.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.findings.levers import band_comparison
from sdpa_analyzer.server.findings.spec import (
    MISSING,
    VERDICT_COLUMNS,
    as_float,
    bound_cell,
    cell_text,
    efficiency_cell,
    has_efficiency,
    number_text,
)
from sdpa_analyzer.server.folder.metrics_file import (
    MAX_DEPTH,
    OperationKeys,
    StreamedOperations,
    join_roofline_rows,
    json_depth,
    operation_keys,
)
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots


class MetricsFormatError(InputError):
    """The metrics JSON lacks a field the findings checks need, or has it with the wrong type."""


@dataclass(frozen=True)
class FindingView:
    """One `category_findings[]` entry, with its numbers spelled as written in the JSON."""

    rank: int
    library: Any
    heuristic: bool
    low: str
    mid: str
    high: str
    percent_text: str | None
    members: list[dict[str, Any]]
    raw: dict[str, Any]

    @property
    def quantifiable(self) -> bool:
        return not (self.low == self.mid == self.high == "null")


@dataclass(frozen=True)
class MetricsView:
    status: str
    category: str | None
    scope: str | None
    error: str | None
    findings: list[FindingView] = field(default_factory=list)
    operations: Sequence[dict[str, Any]] = field(default_factory=list)  # a list, or streamed (folder.metrics_file)

    def finding(self, rank: int) -> FindingView | None:
        for item in self.findings:
            if item.rank == rank:
                return item
        return None


def load_metrics(path: Path, roots: DataRoots = UNRESTRICTED) -> dict[str, Any]:
    """Parse a metrics JSON keeping each number's written spelling (floats become Decimal).

    Rule 9 compares marker numbers with the JSON text exactly (`5.96` is not `5.960`); a float
    would forget trailing zeros, a Decimal keeps them. Each operation comes with its `roofline` object, read from the
    roofline CSV the file declares (server.folder.roofline_rows).
    """
    try:
        data = roots.read_bytes(path, what="metrics JSON")
    except FileNotFoundError:
        raise FileNotFoundError(f"metrics JSON not found: {path} (run rank_findings first)") from None
    metrics = parse_metrics(data, path)
    join_roofline_rows(metrics, path, roots, "decimal")  # each operation's `roofline` object, from the roofline CSV
    return metrics


def parse_metrics(data: bytes, source: Path | str) -> dict[str, Any]:
    """The metrics JSON object from its bytes; not UTF-8, not JSON, too deep or not an object: MetricsFormatError."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MetricsFormatError(f"{source}: not UTF-8 text (byte {exc.start}); rewrite it (rank_findings)") from None
    depth = json_depth(data)
    if depth > MAX_DEPTH:
        raise MetricsFormatError(f"{source}: JSON nested {depth} levels deep (at most {MAX_DEPTH}); rewrite it")
    try:
        parsed = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise MetricsFormatError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:  # pragma: no cover - json_depth bounds it first
        raise MetricsFormatError(f"{source}: JSON nested too deeply; rewrite it") from None
    if not isinstance(parsed, dict):
        raise MetricsFormatError(f"{source}: top level must be a JSON object, got {type(parsed).__name__}")
    return parsed


def _require_list(metrics: dict[str, Any], key: str) -> Sequence[dict[str, Any]]:
    value = metrics.get(key, [])
    if value is None:
        return []
    if isinstance(value, StreamedOperations):
        if not all(value.keys.objects):
            raise MetricsFormatError(f"metrics JSON field {key!r} must be a list of objects, got a list with a "
                                     "non-object item")
        return value
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        got = type(value).__name__ if not isinstance(value, list) else "a list with a non-object item"
        raise MetricsFormatError(f"metrics JSON field {key!r} must be a list of objects, got {got}")
    return value


def _finding_view(raw: dict[str, Any], position: int) -> FindingView:
    rank = raw.get("rank")
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise MetricsFormatError(
            f"metrics JSON category_findings[{position}].rank={rank!r} must be an integer (1-based rank)"
        )
    heuristic = raw.get("estimate_method") == "heuristic" or raw.get("bound_type") == "unmodeled"
    members = raw.get("members") or []
    if not isinstance(members, list):
        raise MetricsFormatError(f"metrics JSON category_findings[{position}].members must be a list")
    return FindingView(
        rank=rank,
        library=raw.get("library"),
        heuristic=heuristic,
        low=number_text(raw.get("impact_score_low")),
        mid=number_text(raw.get("impact_score")),
        high=number_text(raw.get("impact_score_high")),
        percent_text=_percent_text(raw, members),
        members=[m for m in members if isinstance(m, dict)],
        raw=raw,
    )


def _percent_text(raw: dict[str, Any], members: list[Any]) -> str | None:
    """The finding's E2E share as written; a single member's share when the finding lacks one."""
    if raw.get("percent_of_total") is not None:
        return number_text(raw["percent_of_total"])
    shares = [m.get("percent_of_total") for m in members if isinstance(m, dict)]
    if len(shares) == 1 and shares[0] is not None:
        return number_text(shares[0])
    return None


def view_metrics(metrics: dict[str, Any]) -> MetricsView:
    if not isinstance(metrics, dict):
        raise MetricsFormatError(f"metrics must be the parsed metrics JSON object, got {type(metrics).__name__}")
    status = str(metrics.get("status", "OK")).upper()
    scope = metrics.get("comparison_scope")
    if status == "ERROR":
        return MetricsView(status, metrics.get("category"), scope, str(metrics.get("error") or "unknown error"))
    findings = [_finding_view(raw, i) for i, raw in enumerate(_require_list(metrics, "category_findings"))]
    findings.sort(key=lambda item: item.rank)
    operations = _require_list(metrics, "operations")
    return MetricsView(status, metrics.get("category"), scope, None, findings, operations)


_REL_TOL = 1e-9  # numbers a member and its operation both carry are equal to this relative tolerance


def _same_number(a: Any, b: Any) -> bool:
    fa, fb = as_float(a), as_float(b)
    if fa is None or fb is None:
        return fa is None and fb is None
    return abs(fa - fb) <= _REL_TOL * max(1.0, abs(fa), abs(fb))


def verbatim_text(value: Any) -> str:
    """A value as a findings table copies it verbatim: `—` for missing or blank."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return MISSING
    return str(value)


_SMALL_RUN = 8  # operations of one time compared one by one; a longer run gets its efficiency index


class _ByEfficiency:
    """Operations (of one name and one time) by efficiency: a member's efficiency finds its matches by binary search,
    so many operations sharing one time cost each member only what it matches."""

    __slots__ = ("at", "effs", "no_eff")

    def __init__(self, pairs: list[tuple[float | None, int]]) -> None:
        self.no_eff = [i for e, i in pairs if e is None]
        numeric = sorted((e, i) for e, i in pairs if e is not None and math.isfinite(e))  # NaN, inf: equal nothing
        self.effs = [e for e, _ in numeric]
        self.at = [i for _, i in numeric]

    def matching(self, eff: float | None) -> list[int]:
        if eff is None:
            return list(self.no_eff)
        if not math.isfinite(eff):
            return []
        tol = _REL_TOL * max(1.0, abs(eff)) * 2  # a window a little wider than any pair _same_number accepts
        lo, hi = bisect_left(self.effs, eff - tol), bisect_right(self.effs, eff + tol)
        return [self.at[k] for k in range(lo, hi) if _same_number(self.effs[k], eff)]


class _NameGroup:
    """The operations of one name: their indices, by args, and by time then efficiency (to match a member's
    numbers). Operations of exactly one time form one run, looked up by efficiency inside it (_ByEfficiency)."""

    __slots__ = ("by_args", "by_args_text", "indices", "no_time", "run_index", "run_starts", "timed", "times")

    def __init__(self) -> None:
        self.indices: list[int] = []
        self.by_args: dict[Any, list[int]] | None = None
        self.by_args_text: dict[str, int] | None = None
        self.times: list[float] | None = None  # the finite times, sorted (lists: bisect beats numpy on one value)
        self.timed: list[tuple[float | None, int]] = []  # (efficiency, index) in the order of `times`
        self.run_starts: list[int] = []  # where each run of one time starts in `times`
        self.run_index: dict[int, _ByEfficiency] = {}  # built when a member first asks for that run
        self.no_time: _ByEfficiency | None = None

    def with_args(self, operations: list[dict[str, Any]], args: Any) -> list[int] | None:
        """The group's operations whose args equal `args` (None when `args` cannot be looked up by hash)."""
        if self.by_args is None:
            self.by_args = {}
            args_of = _keys(operations).args
            for i in self.indices:
                try:
                    self.by_args.setdefault(args_of[i], []).append(i)
                except TypeError:  # unhashable args of a hand-edited file: never equal to a hashable member's
                    continue
        try:
            return self.by_args.get(args, [])
        except TypeError:
            return None

    def first_with_args_text(self, operations: list[dict[str, Any]], text: str) -> int | None:
        """The first operation of the group whose args, spelled as a table copies them, are `text`."""
        if self.by_args_text is None:
            self.by_args_text = {}
            args_of = _keys(operations).args
            for i in self.indices:
                self.by_args_text.setdefault(verbatim_text(args_of[i]), i)
        return self.by_args_text.get(text)

    def with_numbers(self, operations: list[dict[str, Any]], time: Any, efficiency: Any) -> list[int]:
        """The group's operations whose time_ms is `time` and whose efficiency_percent is `efficiency` (each as
        _same_number compares), in index order. Costs the runs of one time in the time's tolerance window (one,
        unless times differ in their tenth digit) plus what matches."""
        if self.times is None:
            self._index_numbers(operations)
        assert self.times is not None and self.no_time is not None
        t, eff = as_float(time), as_float(efficiency)
        if t is None:
            return sorted(self.no_time.matching(eff))
        if not math.isfinite(t):  # NaN and infinities equal nothing
            return []
        tol = _REL_TOL * max(1.0, abs(t)) * 2  # a window a little wider than any pair _same_number accepts
        lo, hi = bisect_left(self.times, t - tol), bisect_right(self.times, t + tol)
        if lo >= hi:
            return []
        first = bisect_right(self.run_starts, lo) - 1
        last = bisect_right(self.run_starts, hi - 1) - 1
        out: list[int] = []
        for run in range(first, last + 1):
            start = self.run_starts[run]
            if not _same_number(self.times[start], t):  # one time per run: one comparison decides the run
                continue
            end = self.run_starts[run + 1] if run + 1 < len(self.run_starts) else len(self.times)
            if end - start <= _SMALL_RUN:  # a few operations at this time (the usual case): compared directly
                out += [i for e, i in self.timed[start:end] if _same_number(e, eff)]
            else:
                out += self._run(run).matching(eff)
        return sorted(out)

    def _index_numbers(self, operations: list[dict[str, Any]]) -> None:
        keys = _keys(operations)
        times = [as_float(keys.times[i]) for i in self.indices]
        effs = [as_float(keys.efficiencies[i]) for i in self.indices]
        self.no_time = _ByEfficiency([(e, i) for i, t, e in zip(self.indices, times, effs, strict=True) if t is None])
        timed = [(t, e, i) for i, t, e in zip(self.indices, times, effs, strict=True) if t is not None and
                 math.isfinite(t)]  # fmt: skip
        timed.sort(key=lambda x: x[0])  # stable: equal times keep index order
        values = [t for t, _, _ in timed]
        self.times = values
        self.timed = [(e, i) for _, e, i in timed]
        self.run_starts = [k for k in range(len(values)) if k == 0 or values[k] != values[k - 1]]

    def _run(self, run: int) -> _ByEfficiency:
        index = self.run_index.get(run)
        if index is None:
            assert self.times is not None
            start = self.run_starts[run]
            end = self.run_starts[run + 1] if run + 1 < len(self.run_starts) else len(self.times)
            index = self.run_index[run] = _ByEfficiency(self.timed[start:end])
        return index


def _lookup(
    member: dict[str, Any], operations: list[dict[str, Any]], answered: set[Any] | None = None
) -> tuple[list[int], bool, Any]:
    """The operations[] entries a finding member stands for, whether that is the fallback (every operation of
    the member's name), and what the answer depends on (members with an equal key get the same answer; None: not
    hashable). A key in `answered` was given already: its answer is not looked up again (returned empty).

    Members name only the op; one name can have several argument signatures, so narrow by the member's args
    when it has them, else by its time and efficiency; fall back to every entry. Looked up in an index built
    once per operations list, so a finding of many members against many operations of one name costs what its
    answers hold, not members × operations."""
    name = member.get("operation")
    group = _operations_named(operations, name)
    hashable = group is not None
    if group is None:  # an unhashable name (a hand-edited file): only operations with unhashable names can equal it
        group = _NameGroup()
        group.indices = _unhashably_named(operations, name)
    candidates = group.indices
    if len(candidates) <= 1:
        return candidates, hashable, None
    if member.get("args") is not None:
        by_args = group.with_args(operations, member["args"])
        if by_args is None:
            args_of = _keys(operations).args
            by_args = [i for i in candidates if args_of[i] == member["args"]]
        if by_args:
            return by_args, False, _hashable_key(("args", name, member["args"])) if hashable else None
    key = ("numbers", name, as_float(member.get("time_ms")), as_float(member.get("efficiency_pct")))
    if hashable and answered is not None and key in answered:
        return [], False, key
    by_numbers = group.with_numbers(operations, member.get("time_ms"), member.get("efficiency_pct"))
    if by_numbers:
        return by_numbers, False, key if hashable else None
    return candidates, hashable, None


def _hashable_key(key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    try:
        hash(key)
    except TypeError:
        return None
    return key


def distinct_member_lookups(
    members: list[dict[str, Any]], operations: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], list[int]]]:
    """(member, its operations[] entries) for each member whose answer is new: a member equal to an earlier one
    (same name, args, time and efficiency), or one that falls back to every operation of a name already given
    in full, or one whose answer depends on the same things as an earlier one's (name and args, or name, time and
    efficiency), is left out. Linear in the members plus the answers given, whatever the file holds. Answered once
    per members list and operations list (the validator's checks ask for the same finding five or six times, and a
    finding of 7,000 members costs ~0.06 s); each caller gets its own lists."""
    answers = _entry(operations)[3]
    known = answers.get(id(members))
    if known is None or known[0] is not members or known[1] != len(members):
        known = answers[id(members)] = (members, len(members), _distinct_member_lookups(members, operations))
    return [(member, list(indices)) for member, indices in known[2]]


def _distinct_member_lookups(
    members: list[dict[str, Any]], operations: Sequence[dict[str, Any]]
) -> list[tuple[dict[str, Any], list[int]]]:
    out: list[tuple[dict[str, Any], list[int]]] = []
    done: set[tuple[Any, ...]] = set()
    answered: set[tuple[Any, ...]] = set()
    names_in_full: set[Any] = set()
    for member in members:
        key = _member_key(member)
        if key is not None:
            if key in done:
                continue
            done.add(key)
        indices, in_full, answer = _lookup(member, operations, answered)
        if answer is not None:
            if answer in answered:
                continue
            answered.add(answer)
        if in_full:
            name = member.get("operation")  # hashable: an unhashable name never answers in full
            if name in names_in_full:
                continue
            names_in_full.add(name)
        out.append((member, list(indices)))
    return out


def operations_named(operations: list[dict[str, Any]], name: str) -> list[int]:
    """Indices of the operations named `name` (from the index built once per operations list)."""
    group = _operations_named(operations, name)
    return group.indices if group is not None else _unhashably_named(operations, name)


def first_operation_with_args(operations: list[dict[str, Any]], name: str, args_text: str) -> int | None:
    """The first operation named `name` whose args a table would spell `args_text` (None: no such operation)."""
    group = _operations_named(operations, name)
    if group is None:
        args_of = _keys(operations).args
        hits = [i for i in operations_named(operations, name) if verbatim_text(args_of[i]) == args_text]
        return hits[0] if hits else None
    return group.first_with_args_text(operations, args_text)


def finding_operation_indices(finding: FindingView, operations: list[dict[str, Any]]) -> list[int]:
    seen: dict[int, None] = {}  # insertion-ordered set
    for _, indices in distinct_member_lookups(finding.members, operations):
        for index in indices:
            seen.setdefault(index, None)
    return list(seen)


def _member_key(member: dict[str, Any]) -> tuple[Any, ...] | None:
    key = (member.get("operation"), member.get("args"), as_float(member.get("time_ms")),
           as_float(member.get("efficiency_pct")))  # fmt: skip
    try:
        hash(key)
    except TypeError:
        return None
    return key


# (members, their count, the answer) by id(members): the members list is held, so its id stays its own
_Answers = dict[int, tuple[list[dict[str, Any]], int, list[tuple[dict[str, Any], list[int]]]]]
_Entry = tuple[Sequence[dict[str, Any]], "OperationKeys", dict[Any, "_NameGroup"], _Answers]
_NAME_INDEX: dict[int, _Entry] = {}  # id(operations) -> (operations, their keys, the index by name, member answers)


def _operations_named(operations: Sequence[dict[str, Any]], name: Any) -> _NameGroup | None:
    """The operations named `name`, from an index built once per operations list (a finding of 10^5 members
    against 10^5 operations would otherwise compare 10^10 names). None for an unhashable name."""
    try:
        hash(name)
    except TypeError:
        return None
    return _name_index(operations).get(name) or _EMPTY_GROUP


def _unhashably_named(operations: Sequence[dict[str, Any]], name: Any) -> list[int]:
    group = _name_index(operations).get(_UNHASHABLE_NAMES)
    names = _keys(operations).names
    return [i for i in group.indices if names[i] == name] if group is not None else []


def lookup_keys(operations: Sequence[dict[str, Any]]) -> OperationKeys:
    """The fields the lookup reads of every operation (name, args, time_ms, efficiency_percent, difference_ms, as the
    parser gives them): kept by a streamed list, else read once per list. Reading them parses no operation."""
    return _entry(operations)[1]


_keys = lookup_keys


def _name_index(operations: Sequence[dict[str, Any]]) -> dict[Any, _NameGroup]:
    return _entry(operations)[2]


def _entry(operations: Sequence[dict[str, Any]]) -> _Entry:
    entry = _NAME_INDEX.get(id(operations))
    if entry is None or entry[0] is not operations:
        keys = operation_keys(operations)
        index: dict[Any, _NameGroup] = {}
        for i, key in enumerate(keys.names):
            try:
                group = index.get(key)
            except TypeError:  # an unhashable name: kept together, compared one by one when asked for
                key, group = _UNHASHABLE_NAMES, index.get(_UNHASHABLE_NAMES)
            if group is None:
                group = index[key] = _NameGroup()
            group.indices.append(i)
        if len(_NAME_INDEX) >= 4:
            _NAME_INDEX.clear()
        _NAME_INDEX[id(operations)] = entry = (operations, keys, index, {})  # keeps the list alive: its id stays
    return entry


_EMPTY_GROUP = _NameGroup()
_UNHASHABLE_NAMES = object()  # the index's key for operations whose name is a list or an object


def _efficiency(op: dict[str, Any]) -> dict[str, Any]:
    value = op.get("efficiency")
    return value if isinstance(value, dict) else {}


def expected_efficiency_cell(op: dict[str, Any], heuristic: bool) -> str:
    return MISSING if heuristic else efficiency_cell(_efficiency(op))


def expected_bound_cell(op: dict[str, Any], heuristic: bool, scope: str) -> str:
    """Standalone: the bound of a known efficiency; comparative: trace 1's roofline bound."""
    if heuristic:
        return MISSING
    efficiency = _efficiency(op)
    if scope == "standalone" and not has_efficiency(efficiency):
        return MISSING
    return bound_cell(efficiency.get("bound_type"))


def flops_per_byte(op: dict[str, Any]) -> Any:
    return _efficiency(op).get("flops_per_byte")


def _roofline(op: dict[str, Any]) -> dict[str, Any]:
    value = op.get("roofline")
    return value if isinstance(value, dict) else {}


def expected_verdict_cells(op: dict[str, Any], heuristic: bool) -> list[str]:
    """The verdict columns after the mandatory ones (VERDICT_COLUMNS): compute %, memory %, regime, band."""
    if heuristic:
        return [MISSING] * len(VERDICT_COLUMNS)
    r = _roofline(op)
    bound = r.get("work_bound")
    if bound in ("lower", "upper", "unknown"):  # a bound gets no band verdict (perf_models.assess)
        band_cell = f"no band: the work is {'a' if bound == 'lower' else 'an'} {bound} bound"
    else:
        band_cell = band_comparison(r.get("band_metric"), r.get("band_value"), r.get("band_low"), r.get("band_high"),
                                    r.get("band_status"))
    return [cell_text(r.get("compute_pct")), cell_text(r.get("memory_pct")), cell_text(r.get("regime")), band_cell]
