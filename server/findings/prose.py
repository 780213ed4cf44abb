"""The prose of a findings file and whose it is: numbers (rule 13) and backticked names (rule 14).

Prose is every paragraph and heading an LLM writes: titles, Insight, Action, Identification, Reasoning for
Slowdown, Resolution and any free text, read with markdown-it (paragraphs wrap freely). Not prose: the markers,
the Impact line, the impact bullets, the warning line and table rows, which rules 5-10 check. A P-item's prose and
its Detailed Analysis block's are checked against that P-item's grounding (grounding.py), free text against all.

Which rank a region's prose is checked against is owners.py's answer (its own, or the rank whose content it holds).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from sdpa_analyzer.server.findings.document import Collector, Document, inside_any
from sdpa_analyzer.server.findings.grounding import Grounding, Number, NumberSet, compatible, numbers_in_text
from sdpa_analyzer.server.findings.markdown import Block, inline_pieces
from sdpa_analyzer.server.findings.spec import SLOT_CLOSE, SLOT_OPEN
from sdpa_analyzer.server.folder import layout

CODE = "⟨code⟩"  # a backticked span in a run's text: phrase rules see that a name stood there, not the name
_EXCLUDED = re.compile(r"<!--|^\s*\*\*Impact\*\*\s*:|^\s*>\s*\*\*Warning|^\s*\|")
_SLOT = re.compile(re.escape(SLOT_OPEN) + r".*?" + re.escape(SLOT_CLOSE))
_P_PREFIX = re.compile(r"^\s*P\d+:\s*")
_RANK_REF = re.compile(r"(?<![\w-])P(\d+)\b")
_FIELD_PART = re.compile(r"[\w$-]+")
_METRICS_NAME = PurePosixPath(layout.metrics_json("")).name  # `<cat>_metrics.json` ends so
_FIELD_SEPARATORS = re.compile(r"^[\s.\[\]→>:/,()-]*$")


@dataclass
class Run:
    """One paragraph or heading of prose: its region (`p_item`, `candidate` or `free`; `index` into doc.p_items /
    doc.candidates, -1 for free text), its text with code spans as CODE, the line each piece starts on, its code
    spans (line, text) and its numbers."""

    region: str
    index: int
    start: int
    end: int
    heading: bool
    text: str
    starts: list[int]
    lines: list[int]
    spans: list[tuple[int, str]]
    raw: str = ""  # the block's markdown, as written
    numbers: list[Number] = field(default_factory=list)

    def literal(self, number: Number) -> str:
        """The number with its unit, exactly as the run writes it."""
        return self.text[number.start : max(number.stop, number.end)]

    def line_at(self, offset: int) -> int:
        return self.lines[max(0, bisect.bisect_right(self.starts, offset) - 1)] if self.lines else self.start


def read_runs(doc: Document) -> list[Run]:
    excluded = {i for i, line in enumerate(doc.lines) if _EXCLUDED.search(line)}
    for marker in doc.markers:
        excluded.update(range(marker.begin, (marker.end if marker.end is not None else marker.begin) + 1))
    item_starts = [item.index for item in doc.p_items]
    cand_starts = [c.index for c in doc.candidates]
    runs = []
    for block in doc.blocks:
        if block.kind not in ("paragraph", "heading") or not block.content:
            continue
        if all(line in excluded for line in range(block.start, block.end)):
            continue  # a table, markers, the Impact line: no prose (and a 20,000-row table is not parsed inline)
        region, index = "free", -1
        if inside_any(doc.p_items, block.start, item_starts) or block.start in item_starts:
            region, index = "p_item", bisect.bisect_right(item_starts, block.start) - 1
        elif inside_any(doc.candidates, block.start, cand_starts):
            region, index = "candidate", bisect.bisect_right(cand_starts, block.start) - 1
        run = _run(block, region, index, excluded)
        if run is not None:
            runs.append(run)
    return runs


def _run(block: Block, region: str, index: int, excluded: set[int]) -> Run | None:
    parts: list[str] = []
    starts: list[int] = []
    lines: list[int] = []
    spans: list[tuple[int, str]] = []
    offset = 0
    previous_line = None
    for piece in inline_pieces(block):
        if piece.line in excluded:
            continue
        text = CODE if piece.kind == "code" else _SLOT.sub(" ", piece.text)
        if block.kind == "heading" and region == "p_item" and not parts:
            text = _P_PREFIX.sub("", text)
        if previous_line is not None and piece.line != previous_line:
            text = " " + text
        starts.append(offset)
        lines.append(piece.line)
        parts.append(text)
        offset += len(text)
        previous_line = piece.line
        if piece.kind == "code" and piece.text.strip():
            spans.append((piece.line, piece.text.strip()))
    if not parts:
        return None
    text = "".join(parts)
    run = Run(region, index, block.start, block.end, block.kind == "heading", text, starts, lines, spans, block.content)
    run.numbers = numbers_in_text(text)
    return run


def category_number(grounding: Grounding, number: Number) -> bool:
    return any(compatible(number.unit, number.e2e, s.unit) for s in grounding.category.numbers.sources(number.value))


def neutral_name(grounding: Grounding, span: str) -> bool:
    """A field path, the metrics file name, or a string of the category (GPU, notes): nobody's in particular."""
    return is_field_path(span, grounding.keys) or span in grounding.category_names


def is_field_path(span: str, keys: set[str]) -> bool:
    """`operations[].efficiency.efficiency_percent`, `sdpa_fwd_metrics.json → category_findings[]`, `band_status`."""
    if span.endswith(_METRICS_NAME):
        return True
    parts = _FIELD_PART.findall(span)
    if not parts or not _FIELD_SEPARATORS.match(_FIELD_PART.sub("", span)):
        return False
    return all(part in keys or part.endswith(_METRICS_NAME) for part in parts)


# ---- rules 13 and 14 on one run ------------------------------------------------------------------------------------
_UNIT_TEXT = {"%E2E": "% of E2E", "%": "%", "ms": "ms", "us": "µs", "TFLOPS": "TFLOPS", "TB/s": "TB/s"}


def check_run(
    run: Run, rank: int | None, grounding: Grounding, ranks: set[int], example: str, out: Collector,
    numbers: bool = True,
) -> None:
    """Rule 13 (numbers) and rule 14 (names) for one run; rank None: free text, checked against everything.
    `numbers` False: the file is checked by reference (server.findings.bare), its numbers are the tools' own."""
    who = f"P{rank}" if rank is not None else "the category"
    for number in run.numbers if numbers else ():
        _check_number(run, number, rank, who, grounding, out)
    for match in _RANK_REF.finditer(run.text):
        if int(match.group(1)) not in ranks:
            out.error(
                "R13-rank",
                run.line_at(match.start()),
                f"`{match.group()}` names a P-item that does not exist (P-items: "
                f"{', '.join(f'P{r}' for r in sorted(ranks)) or 'none'}).",
                f"Delete `{match.group()}` or name an existing P-item.",
            )
    for line, span in run.spans:
        _check_span(line, span, rank, who, grounding, example, out)


def _grounded(number: Number, rank: int | None, grounding: Grounding) -> bool:
    if category_number(grounding, number):
        return True
    if rank is None:
        return any(
            compatible(number.unit, number.e2e, s.unit) for s in grounding.everything.numbers.sources(number.value)
        )
    return grounding.has_number(rank, number)


def _pools(rank: int | None, grounding: Grounding) -> list[NumberSet]:
    return [
        grounding.category.numbers,
        grounding.everything.numbers if rank is None else grounding.by_rank[rank].numbers,
    ]


def _check_number(run: Run, number: Number, rank: int | None, who: str, grounding: Grounding, out: Collector) -> None:
    if _grounded(number, rank, grounding):
        return
    if number.parts and all(_grounded(Number(0, 0, str(p), p, None, False), rank, grounding) for p in number.parts):
        return  # `1,128,2048` read as 1128 and 2048 is the list 1, 128, 2048
    if out.full:  # no more errors are listed: count it without looking up why
        out.dropped += 1
        return
    line = run.line_at(number.start)
    written = run.literal(number)
    pools = _pools(rank, grounding)
    same_value = [s for pool in pools for s in pool.sources(number.value)]
    rounded = [s for pool in pools for s in pool.rounding_of(number) if compatible(number.unit, number.e2e, s.unit)]
    if rounded and (number.unit is not None or not same_value) and str(rounded[0].value) != number.text:
        source = rounded[0]
        out.error(
            "R13-rounded",
            line,
            f"`{number.text}` rounds {source.value} ({source.path}): numbers keep the metrics JSON's digits.",
            f"Write `{source.value}` instead of `{number.text}`.",
        )
        return
    right = ""
    if same_value:
        source = same_value[0]
        unit = _UNIT_TEXT.get(source.unit or "", "")
        right = f"{number.text} {unit}".strip()
        what = f"in {unit}" if unit else "without a unit"
    if same_value and right != written and right != written.replace("\u00a0", " "):  # a fix never repeats the input
        out.error(
            "R13-unit",
            line,
            f"`{written}`: the metrics JSON has {number.text} {what} ({source.path}).",
            f"Write `{right}` instead of `{written}`"
            + (" (a share of E2E is written `% of E2E`)." if source.unit == "%E2E" else "."),
        )
        return
    others = [q for q in grounding.number_ranks(number) if q != rank] if rank is not None else []
    if others:
        out.error(
            "R13-other-item",
            line,
            f"`{written}` is P{others[0]}'s number, not {who}'s.",
            f"Delete `{written}` here, or quote a number of {who}'s own finding and members.",
        )
        return
    out.error(
        "R13-number",
        line,
        f"`{written}` is not a number the tools returned for {who}.",
        f"Delete `{written}`, or copy a number of {who} from the metrics JSON (its finding, its members' "
        "operations[] entries or the category) with its digits and unit.",
    )


def _check_span(
    line: int, span: str, rank: int | None, who: str, grounding: Grounding, example: str, out: Collector
) -> None:
    if is_field_path(span, grounding.keys):
        return
    if rank is None:
        # the category's strings and the P-items' first (cheap): all_names holds every operation's strings too
        if span in grounding.category_names or grounding.name_owners(span) or grounding.has_free_name(span):
            return
    elif grounding.has_name(rank, span) or span in grounding.category_names:
        return
    if out.full:
        out.dropped += 1
        return
    others = [q for q in grounding.name_owners(span) if q != rank] if rank is not None else []
    if others:
        out.error(
            "R14-other-item",
            line,
            f"`{span}` names P{others[0]}'s member, not one of {who}'s.",
            f"Write about {who}'s members here (e.g. `{example}`); P{others[0]}'s belong under P{others[0]}.",
        )
        return
    out.error(
        "R14-name",
        line,
        f"`{span}` is not an op, kernel, argument or field name of {who} in the metrics JSON.",
        f"Copy the name verbatim from the metrics JSON (e.g. `{example}`), or write it without backticks.",
    )
