"""Rule 13 by construction: prose types no quantity. Every number is a reference (server.findings.references).

A bare quantity — digits with or without a unit, or a number word, hedged or not (`about 4 ms`, `forty percent`,
`twice`, `a third of`) — is an error. Its fix deletes it (a deletion never makes a file untrue) and names the
reference whose value it is, when one of the P-item's or the category's has that value. Identifiers are not
quantities (`P1`, `fp8`, `sm_90`, `FlashAttention-3`: digits glued to a word), nor are code spans, nor the
contract's own constants (CONTRACT_NUMBERS: the 10 % KV-write rule, N < 1024, block sizes 16/32/64, head dim 128).

A file validate_findings resolved (RESOLVED_LINE) holds the references' renderings: there a number is accepted when
it is exactly the rendering (digits and unit) of a reference its region may cite.
"""

from __future__ import annotations

import re

from sdpa_analyzer.server.findings.document import Collector
from sdpa_analyzer.server.findings.grounding import Number
from sdpa_analyzer.server.findings.prose import Run
from sdpa_analyzer.server.findings.references import MASK, RefTable
from sdpa_analyzer.server.findings.spec import CONTRACT_NUMBERS
from sdpa_analyzer.server.vocab import NUMBER_WORDS, UNIT_AFTER_REFERENCE

_WORDS = re.compile(NUMBER_WORDS, re.IGNORECASE)
_UNIT_AFTER_MASK = re.compile(re.escape(MASK) + r"\s*(?:" + UNIT_AFTER_REFERENCE + r")(?![\w/])", re.IGNORECASE)
_CONSTANTS = frozenset(CONTRACT_NUMBERS)
# a number naming a thing, not measuring it: `trace 2`, `rank 3`, `row 1`, `layer 12`, `stream 7`
_NAMED_BY = re.compile(r"(?:\b(?:trace|traces|rank|row|stream|device|layer|GPU|step|lever|P-item|op)\s+)$",
                       re.IGNORECASE)  # fmt: skip


def _written(run: Run, number: Number) -> str:
    return run.text[number.start : max(number.stop, number.end)]


def check_bare(runs: list[tuple[Run, int | None]], table: RefTable, resolved: bool, out: Collector,
               digits: bool = True) -> None:
    """R13-bare (digits), R13-words (number words) and R19-unit (a unit typed after a reference) on masked runs,
    each with the rank whose content it holds (None: free text). `digits=False` (prose written against an
    orchestrator's metrics JSON, whose typed numbers the number rules check against its fields) leaves digits to
    those rules: number words and a unit after a reference can be checked against nothing, in any file."""
    for run, rank in runs:
        for number in run.numbers if digits else ():
            if (number.text, number.unit) in _CONSTANTS and not number.e2e:
                continue
            before = run.text[max(0, number.start - 16) : number.start]  # a window: linear however many numbers
            if number.unit is None and "." not in number.text and _NAMED_BY.search(before):
                continue
            if resolved and table.matching(rank, number.text, number.unit, number.e2e):
                continue
            _bare(run, number, rank, table, out)
        for match in _WORDS.finditer(run.text):
            written = match.group(0)
            out.error(
                "R13-words",
                run.line_at(match.start()),
                f"`{written}` states a quantity in words; prose writes every quantity as a reference.",
                f"Delete `{written}`, and state the quantity with its reference (the template lists them).",
                edit=(written, ""),
            )
        for match in _UNIT_AFTER_MASK.finditer(run.text):
            out.error(
                "R19-unit",
                run.line_at(match.start()),
                "a unit typed after a reference: the reference writes its own unit.",
                f"Delete the unit after the reference (`{match.group(0).removeprefix(MASK).strip()}`).",
            )


def _bare(run: Run, number: Number, rank: int | None, table: RefTable, out: Collector) -> None:
    if out.full:
        out.dropped += 1
        return
    written = _written(run, number)
    who = f"P{rank}" if rank is not None else "the category"
    mine = table.matching(rank, number.text, number.unit, number.e2e)
    others = [ref for ref in table.matching(None, number.text, number.unit, number.e2e) if ref not in mine]
    if mine:
        names = " or ".join(f"`{{{{{ref.name}}}}}` ({ref.label})" for ref in mine[:3])
        fix = f"Delete `{written}`; if it is {names}, write that reference in its place."
    elif others:
        fix = (f"Delete `{written}`: it is P{others[0].rank}'s value ({others[0].label}), not {who}'s; write one of "
               f"{who}'s references instead.")  # fmt: skip
    else:
        fix = (f"Delete `{written}`: no value the tools computed for {who} reads so; write the reference of the "
               "quantity you mean (the template lists them), or put a shape or name in backticks, copied verbatim.")
    out.error(
        "R13-bare",
        run.line_at(number.start),
        f"`{written}` is a number typed in prose; prose writes every quantity as a reference.",
        fix,
        edit=(written, ""),
    )


__all__ = ["check_bare"]
