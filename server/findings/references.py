"""Numbers and verdicts by reference: the prose writes `{{P1.op1.time_ms}}`, the tools write the value.

The LLM never types a quantity or a verdict the tools computed. Each P-item (rank r) and the category own a table of
references, read from the metrics JSON: `P<r>.<name>` for the finding and its members (`P1.op1.time_ms`,
`P1.lever.drop_copies.saved_ms`, `P1.bound`), `cat.<name>` for the category's facts, `rule.<name>` for the contract's
own constants. `resolve` replaces each reference with its one canonical rendering (server.findings.quantities) and
reports an unknown name, or another P-item's reference, with the reference to write instead.

A reference is `{{` + a dotted name + `}}` on one line: the template's slots (`{{FILL: ...}}`) are not references.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sdpa_analyzer.server.findings.levers import lever_id_of
from sdpa_analyzer.server.findings.metrics_view import MetricsView, finding_operation_indices, view_metrics
from sdpa_analyzer.server.findings.quantities import UNITS, is_number, render
from sdpa_analyzer.server.vocab import DECODE_HEAVY_RATIO, KV_WRITE_SHARE_PCT, PREFILL_HEAVY_RATIO, REFERENCE_CONTEXT

REFERENCE = re.compile(r"\{\{\s*([A-Za-z][\w-]*(?:\.[\w-]+)+)\s*\}\}")
ANY_BRACES = re.compile(r"\{\{(?!\s*FILL\s*:)([^{}\n]{0,80})\}\}")  # a reference or a misspelt one
REGION_START = re.compile(r"^### P(\d+):|^<!--\s*reasoning-candidate\b.*?\brank=(\d+)")
REFERENCES_BEGIN = "<!-- references"
REFERENCES_END = "-->"
RESOLVED_LINE = "<!-- sdpa_analyzer: references resolved -->"
CATEGORY = "cat"
RULE = "rule"
MAX_MEMBER_REFS = 8  # members of a finding with their own references (the Data table's first rows)

# Words the references write for the tools' verdicts (the vocabulary the validator checks free words against).
BOUND_TEXT = {"compute": "compute-bound", "memory": "memory-bound"}
REGIME_TEXT = {"compute": "compute-bound", "memory": "memory-bound", "balanced": "balanced between the two roofs"}
BAND_TEXT = {
    "within": "within the expected band",
    "below": "below the best published kernels for this shape",
    "above": "above the band of the best published kernels",
}
WORKLOAD_TEXT = {"prefill_heavy": "prefill-heavy", "decode_heavy": "decode-heavy", "mixed": "mixed prefill and decode"}
WORK_BOUND_TEXT = {"lower": "at least", "upper": "at most"}
# The binding roof among three (perf_models.exp_roof: tensor cores, exponential units, HBM), as prose writes it.
BINDING_TEXT = {
    "tensor": "bound by the tensor cores",
    "exp": "bound by the exponential (special-function) units",
    "hbm": "bound by HBM bandwidth",
}
BAND_BASIS_TEXT = {"published": "a published result", "derived": "derived from the ceiling model"}


@dataclass(frozen=True)
class Ref:
    """One reference: its name, whose it is (a rank, or None for the category and the rules), its kind (a quantity
    kind of server.findings.quantities, or `word`), its canonical text and what it is."""

    name: str
    rank: int | None
    kind: str
    text: str
    label: str

    @property
    def reads_as(self) -> tuple[str, str | None, bool] | None:
        """(digits, unit, of E2E) as the prose number reader reads the rendering; None for a word."""
        if self.kind == "word":
            return None
        unit = UNITS[self.kind]
        digits = self.text.removesuffix(unit.text).strip() if unit.text else self.text
        return digits, unit.reads_as, unit.e2e


@dataclass
class RefTable:
    by_name: dict[str, Ref] = field(default_factory=dict)

    def add(self, name: str, rank: int | None, kind: str, value: Any, label: str) -> None:
        if kind == "word":
            if isinstance(value, str) and value:
                self.by_name[name] = Ref(name, rank, kind, value, label)
        elif is_number(value):
            self.by_name[name] = Ref(name, rank, kind, render(kind, value), label)

    def of(self, rank: int | None) -> list[Ref]:
        return [ref for ref in self.by_name.values() if ref.rank == rank]

    def usable(self, rank: int | None) -> list[Ref]:
        """What prose in rank's region may cite: its own, the category's and the rules' (free text: all)."""
        if rank is None:
            return list(self.by_name.values())
        return [ref for ref in self.by_name.values() if ref.rank in (rank, None)]

    def matching(self, rank: int | None, digits: str, unit: str | None, e2e: bool) -> list[Ref]:
        """The references of `rank` (and the category's) whose rendering reads as this number."""
        out = []
        for ref in self.usable(rank):
            read = ref.reads_as
            if read is None or read[0] != digits:
                continue
            if unit is None or (read[1] == unit and (read[2] or not e2e)):
                out.append(ref)
        return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _op_refs(table: RefTable, rank: int | None, k: int, op: dict[str, Any], scope: str) -> None:
    p = f"P{rank}.op{k}" if rank is not None else f"{CATEGORY}.op{k}"
    eff, roof = _dict(op.get("efficiency")), _dict(op.get("roofline"))
    profile = _dict(_dict(op.get("classification")).get("workload_profile"))
    what = (f"`{op.get('name')}` (row {k} of P{rank}'s Data table)" if rank is not None
            else f"operations[] entry {k} (in no finding)")  # fmt: skip
    table.add(f"{p}.time_ms", rank, "ms", op.get("time_ms"), f"kernel time of {what}")
    table.add(f"{p}.count", rank, "count", op.get("count"), f"calls of {what}")
    table.add(f"{p}.share", rank, "pct_e2e", op.get("percent_of_total"), f"share of E2E of {what}")
    table.add(f"{p}.efficiency", rank, "pct", eff.get("efficiency_percent"), f"% of roofline of {what}")
    table.add(f"{p}.tflops", rank, "tflops", eff.get("tflops_achieved"), f"achieved TFLOPS of {what}")
    table.add(f"{p}.tbs", rank, "tbs", eff.get("tb_s_achieved"), f"achieved TB/s of {what}")
    table.add(f"{p}.flops_per_byte", rank, "flops_per_byte", eff.get("flops_per_byte"), f"intensity of {what}")
    table.add(f"{p}.peak_tflops", rank, "tflops", eff.get("resolved_peak_maf"), "the tensor peak it is measured on")
    table.add(f"{p}.peak_tbs", rank, "tbs", eff.get("resolved_peak_hbm_bw"), "the HBM peak it is measured on")
    table.add(f"{p}.compute_pct", rank, "pct", roof.get("compute_pct"), f"% of the tensor peak of {what}")
    table.add(f"{p}.memory_pct", rank, "pct", roof.get("memory_pct"), f"% of the HBM peak of {what}")
    table.add(f"{p}.band_low", rank, "pct", roof.get("band_low"), f"low edge of the expected band of {what}")
    table.add(f"{p}.band_high", rank, "pct", roof.get("band_high"), f"high edge of the expected band of {what}")
    table.add(f"{p}.band_value", rank, "pct", roof.get("band_value"), f"the value compared with the band of {what}")
    table.add(f"{p}.n_q", rank, "count", profile.get("n_q"), f"query length of {what}")
    table.add(f"{p}.n_kv", rank, "count", profile.get("n_kv"), f"key/value length of {what}")
    table.add(f"{p}.ctx_ratio", rank, "number", profile.get("ctx_ratio"), f"context-token share of the step of {what}")
    table.add(f"{p}.bound", rank, "word", BOUND_TEXT.get(str(eff.get("bound_type"))), f"bound of {what}")
    table.add(f"{p}.regime", rank, "word", REGIME_TEXT.get(str(roof.get("regime"))), f"regime of {what}")
    table.add(f"{p}.binding_roof", rank, "word", BINDING_TEXT.get(str(roof.get("binding_roof"))),
              f"the binding roof among tensor, exponential unit and HBM of {what}")  # fmt: skip
    table.add(f"{p}.ceiling_pct", rank, "pct", roof.get("ceiling_pct"),
              f"the ceiling model's best efficiency for {what} on this GPU")  # fmt: skip
    table.add(f"{p}.band_basis", rank, "word", BAND_BASIS_TEXT.get(str(roof.get("band_basis"))),
              f"what the expected band of {what} rests on")  # fmt: skip
    work = str(roof.get("work_bound"))
    if work not in WORK_BOUND_TEXT:  # a bounded work has no band verdict
        table.add(f"{p}.band", rank, "word", BAND_TEXT.get(str(roof.get("band_status"))), f"band verdict of {what}")
    table.add(f"{p}.work_bound", rank, "word", WORK_BOUND_TEXT.get(work), f"the efficiency of {what} is a bound")
    table.add(f"{p}.work_bound_reason", rank, "word", roof.get("work_bound_reason") or None,
              f"why the work of {what} is a bound")  # fmt: skip
    table.add(f"{p}.model_check", rank, "word", roof.get("model_check") or None,
              f"why {what} has no verdict: its modeled work would run above a roof")  # fmt: skip
    kind = _dict(op.get("classification")).get("attention_type") if rank is not None else None
    table.add(f"{p}.implementation", rank, "word", str(kind).replace("_", " ") if kind else None,
              f"implementation of {what}")  # fmt: skip
    table.add(f"{p}.workload", rank, "word", WORKLOAD_TEXT.get(str(profile.get("workload_type"))),
              f"workload of the step of {what}")  # fmt: skip
    if scope == "comparative":
        table.add(f"{p}.t2_time_ms", rank, "ms", op.get("t2_time_ms"), f"trace 2 kernel time of {what}")
        table.add(f"{p}.t2_count", rank, "count", op.get("count_trace2"), f"trace 2 calls of {what}")
        diff = op.get("difference_ms")
        if is_number(diff):
            table.add(f"{p}.difference_ms", rank, "ms", abs(diff), f"how much the time changed in trace 2, {what}")
            t1, t2 = op.get("time_ms"), op.get("t2_time_ms")
            if is_number(t1) and is_number(t2) and t1 != t2:
                word = "slower" if t2 > t1 else "faster"
                table.add(f"{p}.direction", rank, "word", word, f"trace 2 against trace 1, {what}")


def _facts_refs(table: RefTable, prefix: str, rank: int | None, facts: dict[str, Any]) -> None:
    copies, kv = _dict(facts.get("copy_overhead")), _dict(facts.get("kv_cache_write"))
    table.add(f"{prefix}.copies.time_ms", rank, "ms", copies.get("time_ms"), "layout copies' kernel time")
    table.add(f"{prefix}.copies.share", rank, "pct", copies.get("percent_of_attention"),
              "layout copies' share of the attention time")  # fmt: skip
    table.add(f"{prefix}.copies.e2e", rank, "pct_e2e", copies.get("percent_of_e2e"), "layout copies' share of E2E")
    table.add(f"{prefix}.kv_write.time_ms", rank, "ms", kv.get("time_ms"), "KV-cache writes' kernel time")
    table.add(f"{prefix}.kv_write.share", rank, "pct", kv.get("percent_of_op"),
              "KV-cache writes' share of the op (attention + write)")  # fmt: skip
    table.add(f"{prefix}.kv_write.e2e", rank, "pct_e2e", kv.get("percent_of_e2e"), "KV-cache writes' share of E2E")
    if kv:
        over = "above" if kv.get("over_threshold") else "below"
        table.add(f"{prefix}.kv_write.rule", rank, "word", f"{over} the KV-write rule",
                  "whether the KV-cache writes pass the rule for tuning the KV block size")  # fmt: skip


def _finding_refs(table: RefTable, finding: Any, ops: list[dict[str, Any]], scope: str) -> None:
    r = finding.rank
    raw = finding.raw
    p = f"P{r}"
    table.add(f"{p}.impact", r, "pct_e2e", raw.get("impact_score"), "the finding's impact score")
    table.add(f"{p}.impact_low", r, "pct_e2e", raw.get("impact_score_low"), "its impact score, low end")
    table.add(f"{p}.impact_high", r, "pct_e2e", raw.get("impact_score_high"), "its impact score, high end")
    table.add(f"{p}.impact_to_band", r, "pct_e2e", raw.get("impact_to_band"), "what reaching the band gives back")
    table.add(f"{p}.share", r, "pct_e2e", raw.get("percent_of_total"), "the finding's share of E2E")
    table.add(f"{p}.bound", r, "word", BOUND_TEXT.get(str(raw.get("bound_type"))), "the finding's bound")
    advice = _dict(raw.get("advice"))
    table.add(f"{p}.time_ms", r, "ms", advice.get("time_ms"), "the members' kernel time")
    ref = _dict(advice.get("reference"))
    table.add(f"{p}.reference.kernel_pct", r, "pct", ref.get("kernel_pct"),
              "the best published kernel's efficiency at this shape")  # fmt: skip
    table.add(f"{p}.reference.time_ms", r, "ms", ref.get("time_at_reference_ms"),
              "the dominant op's time at the best published kernel's efficiency")  # fmt: skip
    for lever in (x for x in _list(advice.get("levers")) if isinstance(x, dict)):
        lid = lever_id_of(lever)
        q = f"{p}.lever.{lid}"
        qualifier = lever.get("saving_bound")
        label = f"lever {lid} ({lever.get('change')})"
        table.add(f"{q}.saved_ms", r, "ms", lever.get("saved_ms"), f"ms saved by {label}")
        table.add(f"{q}.saved_pct", r, "pct_e2e", lever.get("saved_pct_e2e"), f"share of E2E saved by {label}")
        table.add(f"{q}.time_ms", r, "ms", lever.get("time_ms"), f"the time {label} starts from")
        table.add(f"{q}.after_ms", r, "ms", lever.get("time_after_ms"), f"the time after {label}")
        table.add(f"{q}.bound", r, "word", qualifier or ("at most" if lever.get("upper_bound") else None),
                  f"{label}'s saving is a bound")  # fmt: skip
    _facts_refs(table, p, r, _dict(raw.get("facts")))
    for k, op in enumerate(ops[:MAX_MEMBER_REFS], start=1):
        _op_refs(table, r, k, op, scope)


QUOTABLE = "ranks"


def _kind_of_key(key: str) -> str:
    """The quantity kind of another tool result's number, from its field name (`median_ms`, `share_pct`)."""
    k = key.lower()
    if k.endswith("_ms") or k == "ms":
        return "ms"
    if k.endswith("_us") or k == "us":
        return "us"
    if "pct" in k or "percent" in k or "share" in k:
        return "pct_e2e" if "e2e" in k else "pct"
    return "number"
MAX_QUOTABLE_REFS = 400


def _quotable_refs(table: RefTable, quotable: dict[str, Any]) -> None:
    """Another tool result's numbers (a distributed job's ranks summary), as `ranks.<path>` references."""
    stack: list[tuple[str, str, Any]] = [(QUOTABLE, "", quotable)]
    while stack and len(table.by_name) < MAX_QUOTABLE_REFS * 4:
        path, key, value = stack.pop()
        if isinstance(value, dict):
            stack += [(f"{path}.{k}", str(k), v) for k, v in reversed(value.items()) if re.fullmatch(r"[\w-]+", str(k))]
        elif isinstance(value, list):
            stack += [(f"{path}.{i + 1}", key, v) for i, v in reversed(list(enumerate(value[:64])))]
        elif is_number(value) and not isinstance(value, bool):
            table.add(path, None, _kind_of_key(key), value, f"{key} of the ranks summary")


def reference_table(
    metrics: dict[str, Any], view: MetricsView | None = None, quotable: dict[str, Any] | None = None
) -> RefTable:
    """Every reference the prose of this metrics JSON may write (see the module docstring); `quotable`: another
    tool result the prose may quote (a ranks summary)."""
    view = view if view is not None else view_metrics(metrics)
    table = RefTable()
    if quotable is not None:
        _quotable_refs(table, quotable)
    table.add(f"{RULE}.kv_write_pct", None, "pct", KV_WRITE_SHARE_PCT, "the rule: tune the KV block size above it")
    table.add(f"{RULE}.prefill_ratio", None, "number", PREFILL_HEAVY_RATIO, "ctx_ratio above it: prefill-heavy")
    table.add(f"{RULE}.decode_ratio", None, "number", DECODE_HEAVY_RATIO, "ctx_ratio below it: decode-heavy")
    table.add(f"{CATEGORY}.time_ms", None, "ms", metrics.get("total_time_ms"), "the category's kernel time")
    table.add(f"{CATEGORY}.share", None, "pct", metrics.get("percent_of_compute"), "its share of the compute time")
    table.add(f"{CATEGORY}.count", None, "count", metrics.get("operation_count"), "its calls")
    ours = _dict(metrics.get("sdpa_analyzer"))
    table.add(f"{CATEGORY}.e2e_ms", None, "ms", ours.get("e2e_baseline_ms"), "the profiled window (E2E)")
    table.add(f"{CATEGORY}.gpu", None, "word", _dict(ours.get("gpu")).get("name"), "the GPU the roofline used")
    base = _dict(ours.get("time_base"))
    table.add(f"{CATEGORY}.busy_ms", None, "ms", base.get("gpu_busy_ms"), "the GPU's busy time in the window")
    table.add(f"{CATEGORY}.idle_ms", None, "ms", base.get("gpu_idle_ms"), "the GPU's idle time in the window")
    table.add(f"{CATEGORY}.share_busy", None, "pct", base.get("percent_of_busy"),
              "the category's kernel time as a share of the GPU's busy time")  # fmt: skip
    facts = _dict(ours.get("facts"))
    _facts_refs(table, CATEGORY, None, facts)
    for trace, x in _dict(facts.get("attention_outside_rows")).items():
        q = f"{CATEGORY}.outside.{trace}"
        x = _dict(x)
        table.add(f"{q}.kernels", None, "count", x.get("kernels"), f"attention kernels outside every op ({trace})")
        table.add(f"{q}.time_us", None, "us", x.get("time_us"), f"their time ({trace})")
        table.add(f"{q}.e2e", None, "pct_e2e", x.get("percent_of_e2e"), f"their share of E2E ({trace})")
    for k, x in enumerate(_list(facts.get("backward_vs_forward"))[:5], start=1):
        q = f"{CATEGORY}.bwd{k}"
        x = _dict(x)
        table.add(f"{q}.time_ratio", None, "ratio", x.get("time_ratio"), f"backward/forward time per call ({k})")
        table.add(f"{q}.flops_ratio", None, "ratio", x.get("flops_ratio"), f"backward/forward FLOPs ({k})")
    scope = view.scope or "standalone"
    members: set[int] = set()
    for finding in view.findings:
        indices = finding_operation_indices(finding, view.operations)
        members.update(indices)
        # only the members with references of their own are parsed (a finding of 10^4 members reads 8 of them)
        _finding_refs(table, finding, [view.operations[i] for i in indices[:MAX_MEMBER_REFS]], scope)
    # the ops in no finding (in band, under the threshold): their facts get references too, the first few of them
    others = (i for i in range(min(len(view.operations), MAX_MEMBER_REFS + len(members))) if i not in members)
    for k, i in enumerate(list(others)[:MAX_MEMBER_REFS], start=1):
        _op_refs(table, None, k, view.operations[i], scope)
    return table


# ---- resolving ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RefProblem:
    line: int  # 0-based
    rule: str
    message: str
    fix: str
    old: str
    new: str


@dataclass
class Resolution:
    resolved: list[str]  # the lines with every known reference written out
    masked: list[str]  # the lines with every reference (known or not) as a digit-free token
    problems: list[RefProblem]
    count: int
    regions: list[int | None]


MASK = "⟨value⟩"


def regions_of(lines: list[str]) -> list[int | None]:
    """The rank whose P-item or candidate block each line sits in (None: free text)."""
    out: list[int | None] = []
    rank: int | None = None
    for line in lines:
        start = REGION_START.match(line)
        if start:
            rank = int(start.group(1) or start.group(2))
        elif line.startswith("## "):
            rank = None
        out.append(rank)
    return out


def _suggest(table: RefTable, rank: int | None, name: str) -> str | None:
    if rank is not None and name.startswith("P"):
        own = f"P{rank}." + name.split(".", 1)[1] if "." in name else None
        if own in table.by_name:
            return own
    names = [ref.name for ref in table.usable(rank)]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


def resolve(lines: list[str], table: RefTable) -> Resolution:
    regions = regions_of(lines)
    resolved, masked, problems = [], [], []
    count = 0
    for index, (line, rank) in enumerate(zip(lines, regions, strict=True)):
        if "{{" not in line:
            resolved.append(line)
            masked.append(line)
            continue

        def one(match: re.Match[str], index: int = index, rank: int | None = rank, line: str = line) -> str:
            nonlocal count
            written = match.group(0)
            name_match = REFERENCE.fullmatch(written)
            name = name_match.group(1) if name_match else match.group(1).strip()
            ref = table.by_name.get(name)
            if ref is not None and (rank is None or ref.rank in (rank, None)):
                start, end = match.span()  # a window each side: linear in the line, however many references
                wrong = _wrong_kind(line[max(0, start - 40) : start], line[end : end + 8], ref)
                if wrong is not None:
                    problems.append(RefProblem(index, "R19-kind", f"`{written}` is {ref.label} ({ref.kind}), where "
                                               f"the sentence asks for {wrong}.", f"Delete `{written}`, or write the "
                                               f"reference of the {wrong} you mean.", written, ""))  # fmt: skip
                    return written
                count += 1
                return ref.text
            problems.append(_problem(index, written, name, ref, rank, table))
            return written

        resolved.append(ANY_BRACES.sub(one, line))
        masked.append(ANY_BRACES.sub(MASK, line))
    return Resolution(resolved, masked, problems, count, regions)


_CONTEXT = [(re.compile(phrase, re.IGNORECASE), kinds) for phrase, kinds in REFERENCE_CONTEXT.items()]
_KIND_WORDS = {("ms", "us"): "a time", ("pct", "tflops", "tbs"): "an efficiency or a rate"}


def _wrong_kind(before: str, after: str, ref: Ref) -> str | None:
    """What the words before a reference ask for, when the reference is of another kind (None: it fits; a share
    followed by `of …` says what it is a share of: `takes 11.11 % of the op`)."""
    if ref.kind == "word" or (ref.kind == "pct" and re.match(r"\s*of\b", after)):
        return None
    for pattern, kinds in _CONTEXT:
        if pattern.search(before) and ref.kind not in kinds:
            return _KIND_WORDS[kinds]
    return None


def _problem(index: int, written: str, name: str, ref: Ref | None, rank: int | None, table: RefTable) -> RefProblem:
    better = _suggest(table, rank, name)
    who = f"P{rank}" if rank is not None else "the category"
    # the edit deletes (a deletion never makes a file untrue); the message names the reference meant, if any
    meant = f"; if you meant `{{{{{better}}}}}`, write that" if better is not None else ""
    if ref is not None:  # another P-item's value
        message = f"`{written}` is P{ref.rank}'s value ({ref.label}), not {who}'s."
        return RefProblem(index, "R19-other-item", message,
                          f"Delete `{written}`: write about {who}'s own values here{meant}.", written, "")  # fmt: skip
    message = f"`{written}` is not a reference the tools wrote for {who}."
    return RefProblem(index, "R19-unknown", message,
                      f"Delete `{written}` (the template lists {who}'s references){meant}.", written, "")  # fmt: skip


def reference_list(table: RefTable) -> list[str]:
    """The template's list of references, in an HTML comment the validator removes when it resolves the file."""
    lines = [f"{REFERENCES_BEGIN}: write a value as its reference, e.g. `{{{{P1.op1.time_ms}}}}`; never type a number."]
    ranks = sorted({ref.rank for ref in table.by_name.values() if ref.rank is not None})
    for rank in (None, *ranks):
        head = "category and rules (any section)" if rank is None else f"P{rank} (its P-item and its block only)"
        lines.append(f"  {head}:")
        lines += [f"    {{{{{ref.name}}}}} = {ref.text} : {ref.label}" for ref in table.of(rank)]
    lines.append(REFERENCES_END)
    return [line.replace("-->", "- ->") if i < len(lines) - 1 else line for i, line in enumerate(lines)]


def strip_reference_list(lines: list[str]) -> list[str]:
    out: list[str] = []
    inside = False
    for line in lines:
        if not inside and line.startswith(REFERENCES_BEGIN):
            inside = not line.rstrip().endswith(REFERENCES_END)
            continue
        if inside:
            inside = line.strip() != REFERENCES_END
            continue
        out.append(line)
    return out


def written_out(text: str, metrics: dict[str, Any]) -> tuple[str, int, list[RefProblem]]:
    """A findings text with its references written out as validate_findings writes them (the same table and
    resolver), the reference list gone: (text, references resolved, the ones it could not resolve). For a reader
    of a file not validated yet (the HTML report); the checks are validate_findings'."""
    resolution = resolve(text.split("\n"), reference_table(metrics))
    return "\n".join(strip_reference_list(resolution.resolved)), resolution.count, resolution.problems


def references_in(lines: list[str]) -> Iterator[tuple[int, str]]:
    for index, line in enumerate(lines):
        for match in REFERENCE.finditer(line):
            yield index, match.group(1)


__all__ = [
    "MASK",
    "RESOLVED_LINE",
    "Ref",
    "RefProblem",
    "RefTable",
    "Resolution",
    "reference_list",
    "reference_table",
    "references_in",
    "regions_of",
    "resolve",
    "strip_reference_list",
    "written_out",
]
