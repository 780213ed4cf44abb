"""What the prose of a findings file may quote (rules 13 and 14): the numbers and names the tools returned, per
P-item and for the category, read generically from the metrics JSON and from the skeleton the template renders.

For a P-item (rank r) that is every number and string under its `category_findings[]` object (nested objects
such as `advice` or `facts` included: a new field joins by itself), under the `operations[]` entries its members
stand for (metrics_view matches them), and the category's own (`total_time_ms`, `percent_of_compute`,
`operation_count`, `category_specific`, `sdpa_analyzer.*` ...), plus what the rendered skeleton writes in that
P-item's two blocks (the table cells as the template spells them, e.g. `22.50% of 989.4 TFLOPS`). Free text
outside the P-items may quote any of them. Numbers inside strings (`fwd B2 H32/8 N4096 d128`, args) count too.

A number carries a unit taken from its field name (`time_ms`: ms, `percent_of_total`: % of E2E, ...) or from the
text it was written in; the one conversion the contract defines is ms ↔ µs (×1000 exactly). Values are compared
as decimals: 12.34 matches `12.34` and `12.340`, never 12.3.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation
from functools import cached_property, lru_cache, partial
from typing import Any

from sdpa_analyzer.server.findings.metrics_view import (
    MetricsFormatError,
    MetricsView,
    finding_operation_indices,
    lookup_keys,
    view_metrics,
)
from sdpa_analyzer.server.findings.spec import (
    CONTRACT_NUMBERS,
    SLOT_CLOSE,
    SLOT_OPEN,
    TIME_CONVERSIONS,
    UNIT_WORDS,
    as_float,
)
from sdpa_analyzer.server.findings.template import render_findings_template
from sdpa_analyzer.server.folder.metrics_file import StreamedOperations

# ---- numbers in text --------------------------------------------------------------------------------------------
_NUMBER = re.compile(r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?")
_UNIT_AFTER = re.compile(
    r"[ \u00a0]?(ms|msec|milliseconds?|µs|μs|us|usec|microseconds?|ns|seconds|sec|s|%|percent|TFLOPS|TFLOP/s"
    r"|TB/s|GB/s|x|×)(?![\w/])",
    re.IGNORECASE,
)
_E2E_AFTER = re.compile(r"\s*(?:of\s+(?:the\s+)?)?(?:E2E|end-to-end|profiled window|total GPU time)", re.IGNORECASE)
_RANGE_NEXT = re.compile(r"\s*(?:[–—-]|to)\s*")
_MAX_PLACES = 4  # a rounded spelling is recognised up to this many decimals
# per unit converted from: (the unit converted to, the factor as a Decimal, the factor as a path writes it)
_CONVERSIONS: dict[str, list[tuple[str, Decimal, str]]] = {}
for (_src, _dst), _factor in TIME_CONVERSIONS.items():
    _CONVERSIONS.setdefault(_src, []).append((_dst, Decimal(str(_factor)), f"{_factor:g}"))


@dataclass(frozen=True)
class Number:
    """A number written in text: where (offsets), as written, its value, the unit written after it (None: none),
    whether `of E2E` follows, and, for a comma-grouped spelling (`2,766`), its comma-separated parts."""

    start: int
    end: int
    text: str
    value: Decimal
    unit: str | None
    e2e: bool
    parts: tuple[Decimal, ...] = ()
    stop: int = 0  # the end of the unit written after it (end when none)

    @property
    def written(self) -> str:
        """The number as written, with its unit when one follows."""
        return self.text if self.unit is None else f"{self.text} {'%' if self.unit == '%' else self.unit}"

    @property
    def places(self) -> int:
        exponent = self.value.as_tuple().exponent
        return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def numbers_in_text(text: str) -> list[Number]:
    return list(_numbers_in(text)) if len(text) > 256 else list(_numbers_cached(text))


@lru_cache(maxsize=8192)
def _numbers_cached(text: str) -> tuple[Number, ...]:
    return tuple(_numbers_in(text))


def _numbers_in(text: str) -> list[Number]:
    """The numbers of a text that stand alone: not part of a word (`fp8`, `sm_80`, `H100`, `FlashAttention-2`,
    `0.5b`, `64x64`, `1.5.0`), each with the unit written after it. A range's first number takes the unit of the
    second (`15–22 %`)."""
    found: list[Number] = []
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        before = text[start - 1] if start else " "
        if before.isalnum() or before in "_.":
            continue
        if before == "-" and start >= 2 and text[start - 2].isalpha():
            continue
        if end < len(text) and text[end] == "." and end + 1 < len(text) and text[end + 1].isdigit():
            continue
        unit_match = _UNIT_AFTER.match(text, end)
        unit = UNIT_WORDS.get(unit_match.group(1).lower()) if unit_match else None
        tail = unit_match.end() if unit_match else end
        if tail < len(text) and (text[tail].isalnum() or text[tail] == "_"):
            continue  # glued to a word: an identifier, not a quantity
        written = match.group()
        parts = tuple(Decimal(p) for p in written.split(",")) if "," in written else ()
        e2e = bool(unit == "%" and _E2E_AFTER.match(text, tail))
        found.append(Number(start, end, written, Decimal(written.replace(",", "")), unit, e2e, parts, tail))
    for i in range(len(found) - 1):  # `15–22 %`: the first number of a range has the unit of the second
        first, second = found[i], found[i + 1]
        if first.unit is None and second.unit is not None and _RANGE_NEXT.fullmatch(text, first.end, second.start):
            found[i] = Number(
                first.start, first.end, first.text, first.value, second.unit, second.e2e, first.parts, first.end
            )
    return found


@lru_cache(maxsize=4096)
def unit_of(key: str) -> str | None:
    """The unit of a metrics JSON number, from its field name (`%E2E`: a share of the E2E baseline)."""
    k = key.lower()
    if "percent_of_total" in k or k.startswith("impact") or ("e2e" in k and ("pct" in k or "percent" in k)):
        return "%E2E"
    if k.endswith("_ms") or k.startswith("time_ms") or "(ms)" in k:
        return "ms"
    if k.endswith("_us") or "(µs)" in k or k.endswith("_µs"):
        return "us"
    if "percent" in k or "pct" in k or k in ("band_low", "band_high", "band_value") or "share" in k:
        return "%"
    if "tflops" in k or "peak_maf" in k:
        return "TFLOPS"
    if "tb_s" in k or "tbs" in k or "hbm_bw" in k:
        return "TB/s"
    return None


def as_decimal(value: Any) -> Decimal | None:
    if type(value) is Decimal:  # the validator's parser gives Decimals: no copy (most leaves of a pool)
        return value if value.is_finite() else None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


# ---- sets of numbers --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """Where a grounded number comes from: its value as written there, its unit and its field path."""

    value: Decimal
    unit: str | None
    path: str


def compatible(written: str | None, e2e: bool, unit: str | None) -> bool:
    """Whether a number written with unit `written` (and `of E2E` when e2e) may stand for a value in `unit`."""
    if written is None:
        return True
    if written == "%":
        return unit == "%E2E" if e2e else unit in ("%", "%E2E")
    if written == "x":
        return unit is None
    return written == unit


class NumberSet:
    """Values -> their sources, and (built on the first question, as most prose is grounded) an index of their
    rounded spellings, to tell a rounded number from an invented one in one lookup."""

    def __init__(self) -> None:
        self.values: dict[Decimal, list[Source]] = {}
        self._rounded: dict[tuple[int, Decimal], list[Source]] | None = None

    def add(self, value: Decimal, unit: str | None, path: str) -> None:
        conversions = _CONVERSIONS.get(unit) if unit is not None else None
        for number in (value, -value) if value < 0 else (value,):
            self._add_one(number, unit, path)
            if conversions:
                for dst, factor, factor_text in conversions:
                    self._add_one(number * factor, dst, f"{path} × {factor_text}")

    def _add_one(self, value: Decimal, unit: str | None, path: str) -> None:
        sources = self.values.get(value)
        if sources is None:
            self.values[value] = [Source(value, unit, path)]
        elif len(sources) < 8:
            for s in sources:
                if s.unit == unit:
                    break
            else:
                sources.append(Source(value, unit, path))
        self._rounded = None

    def sources(self, value: Decimal) -> list[Source]:
        return self.values.get(value, [])

    def rounding_of(self, number: Number) -> list[Source]:
        """Sources with more decimals than `number` that round (or cut) to it."""
        if number.places >= _MAX_PLACES:
            return []
        if self._rounded is None:
            self._rounded = {}
            for value, sources in self.values.items():
                places = Number(0, 0, "", value, None, False).places
                for k in range(min(places, _MAX_PLACES + 1)):
                    quantum = Decimal(1).scaleb(-k)
                    for mode in (ROUND_HALF_UP, ROUND_DOWN):
                        bucket = self._rounded.setdefault((k, value.quantize(quantum, rounding=mode)), [])
                        for source in sources:
                            if len(bucket) < 4 and source not in bucket:
                                bucket.append(source)
        return self._rounded.get((number.places, number.value), [])


class DeferredNumbers(NumberSet):
    """A NumberSet whose additions wait for its first question, then run in the order they were made (the set is the
    one eager additions give). The category's and the P-items' numbers are asked only when prose types a number, which
    a findings file written by reference rarely does: the category's in-band list holds one entry per op within its
    band (~0.4 s of the validator's work at 20,000 rows, more with the rows), a P-item's pool its finding's members
    and up to MAX_MEMBER_OPS operations (~0.35 s for a finding of 7,000 members)."""

    def __init__(self) -> None:
        self._pending: list[Callable[[], None]] = []
        self._filling = False
        super().__init__()

    @property  # type: ignore[override]
    def values(self) -> dict[Decimal, list[Source]]:
        self._fill()
        return self._values

    @values.setter
    def values(self, values: dict[Decimal, list[Source]]) -> None:
        self._values = values

    def later(self, fill: Callable[[], None]) -> None:
        """Run `fill` (which adds numbers) before the first question, after the additions made before it."""
        if self._filling:
            fill()
        else:
            self._pending.append(fill)

    def add(self, value: Decimal, unit: str | None, path: str) -> None:
        self.later(partial(NumberSet.add, self, value, unit, path))

    def sources(self, value: Decimal) -> list[Source]:
        self._fill()
        return super().sources(value)

    def rounding_of(self, number: Number) -> list[Source]:
        self._fill()  # first: an addition resets the index of rounded spellings
        return super().rounding_of(number)

    def _fill(self) -> None:
        if not self._pending or self._filling:
            return
        self._filling = True
        try:
            while self._pending:
                pending, self._pending = self._pending, []
                for fill in pending:
                    fill()
        finally:
            self._filling = False


class _AskedNumbers(NumberSet):
    """A NumberSet that keeps only the values some numbers of free text can match: each of them, its comma-separated
    parts, and the values that round (or cut) to one of them. A question about another value goes to the whole set,
    built then (`whole`). Sources come in the order the whole set would hold them: the values kept are added in the
    same order, and a value is kept with all of its sources."""

    def __init__(self, numbers: list[Number], whole: Callable[[], NumberSet]) -> None:
        super().__init__()
        self.asked = {n.value for n in numbers} | {p for n in numbers for p in n.parts}
        self.asked_rounded = {(n.places, n.value) for n in numbers if n.places < _MAX_PLACES}
        self.places = sorted({k for k, _ in self.asked_rounded})
        self.near = sorted(float(v) for _, v in self.asked_rounded)  # a rounding moves a value by less than 1
        self.whole = whole

    def _add_one(self, value: Decimal, unit: str | None, path: str) -> None:
        if value in self.asked or self._rounds_to_asked(value):
            super()._add_one(value, unit, path)

    def _rounds_to_asked(self, value: Decimal) -> bool:
        if not self.near:
            return False
        f = float(value)
        i = bisect.bisect_left(self.near, f - 1.5)
        if i >= len(self.near) or self.near[i] > f + 1.5:
            return False
        places = Number(0, 0, "", value, None, False).places
        for k in self.places:
            if k >= min(places, _MAX_PLACES + 1):
                break
            quantum = Decimal(1).scaleb(-k)
            for mode in (ROUND_HALF_UP, ROUND_DOWN):
                if (k, value.quantize(quantum, rounding=mode)) in self.asked_rounded:
                    return True
        return False

    def sources(self, value: Decimal) -> list[Source]:
        return super().sources(value) if value in self.asked else self.whole().sources(value)

    def rounding_of(self, number: Number) -> list[Source]:
        if number.places >= _MAX_PLACES:
            return []
        if (number.places, number.value) in self.asked_rounded:
            return super().rounding_of(number)
        return self.whole().rounding_of(number)


class _NameSearch(list[str]):
    """The strings of a pool, never held: each span asked about is looked for in `"\\0".join(strings)` a piece at a
    time (a piece keeps the end of the one before it, so a span across two pieces is found too)."""

    PIECE_CHARS = 1 << 20

    def __init__(self, spans: list[str]) -> None:
        super().__init__()
        self.asked = set(spans)
        self.found = {span for span in self.asked if not span}  # "" is in any text
        self.tail_chars = max((len(span) for span in self.asked), default=1) - 1
        self.buffer: list[str] = []
        self.buffered = 0
        self.tail = ""
        self.started = False

    def append(self, text: str) -> None:
        self.buffer.append(text)
        self.buffered += len(text) + 1
        if self.buffered >= self.PIECE_CHARS:
            self._search()

    def _search(self) -> None:
        if not self.buffer:
            return
        piece = ("\0" if self.started else "") + "\0".join(self.buffer)
        self.started = True
        window = self.tail + piece
        for span in self.asked - self.found:
            if span in window:
                self.found.add(span)
        self.tail = window[len(window) - self.tail_chars :] if self.tail_chars else ""
        self.buffer, self.buffered = [], 0

    def finish(self) -> None:
        self._search()


# ---- walking the metrics JSON -----------------------------------------------------------------------------------
_LEAF_TYPES = frozenset({str, int, float, Decimal})  # exactly these types (not bool): never None, never a container
def _walk(obj: Any, path: str, key: str) -> Iterator[tuple[str, str, Any]]:
    """(path, key, leaf) for every number and string under obj, iteratively (a metrics JSON nests ≤ 64 deep)."""
    stack: list[tuple[Any, str, str]] = [(obj, path, key)]
    while stack:
        node, where, name = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if type(v) in _LEAF_TYPES:  # most leaves: no container check through the ABC
                    yield (f"{where}.{k}" if where else str(k)), str(k), v
                elif isinstance(v, dict | list | StreamedOperations):
                    stack.append((v, f"{where}.{k}" if where else str(k), str(k)))
                elif v is not None and not isinstance(v, bool):
                    yield (f"{where}.{k}" if where else str(k)), str(k), v
        elif isinstance(node, list):
            for v in reversed(node):
                stack.append((v, f"{where}[]", name))
        elif isinstance(node, StreamedOperations):  # as a list: each entry walked whole, in order, parsed in turn
            for v in node:
                yield from _walk(v, f"{where}[]", name)
        elif node is not None and not isinstance(node, bool):
            yield where, name, node


@dataclass
class Pool:
    """The numbers, strings and keys of one scope (a P-item, the category, or everything)."""

    numbers: NumberSet = field(default_factory=NumberSet)
    strings: list[str] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)

    def take(self, obj: Any, path: str) -> None:
        if isinstance(self.numbers, DeferredNumbers):  # the names now, the numbers when one is asked
            for _, key, leaf in _walk(obj, path, path.rsplit(".", 1)[-1]):
                self.keys.add(key)
                if isinstance(leaf, str) and leaf:
                    self.strings.append(leaf)
            self.numbers.later(partial(self._take_numbers, obj, path))
            return
        for where, key, leaf in _walk(obj, path, path.rsplit(".", 1)[-1]):
            self.keys.add(key)
            number = as_decimal(leaf)
            if number is not None:
                self.numbers.add(number, unit_of(key), where)
            elif isinstance(leaf, str) and leaf:
                self.take_text(leaf, where, numbers=key not in _NAMES_ONLY)

    def _take_numbers(self, obj: Any, path: str) -> None:
        """The numbers `take` adds, in its order (a DeferredNumbers' fill)."""
        for where, key, leaf in _walk(obj, path, path.rsplit(".", 1)[-1]):
            number = as_decimal(leaf)
            if number is not None:
                self.numbers.add(number, unit_of(key), where)
            elif isinstance(leaf, str) and leaf and key not in _NAMES_ONLY:
                self._text_numbers(leaf, where)

    def take_text(self, text: str, path: str, numbers: bool = True) -> None:
        self.strings.append(text)
        if not numbers:
            return
        if isinstance(self.numbers, DeferredNumbers):
            self.numbers.later(partial(self._text_numbers, text, path))
        else:
            self._text_numbers(text, path)

    def _text_numbers(self, text: str, path: str) -> None:
        for number in numbers_in_text(text):
            self.numbers.add(number.value, "%E2E" if number.e2e else number.unit, f"{path} (text)")
            for part in number.parts:
                self.numbers.add(part, None, f"{path} (text)")


_CATEGORY_SKIP = frozenset({"operations", "category_findings", "impact_estimates"})
MAX_MEMBER_OPS = 500  # operations[] entries read per finding (its longest), and Data-table rows of the skeleton
MAX_SKELETON_ROWS = MAX_MEMBER_OPS
# strings whose digits are no quantities: a call stack's source line numbers (`train.py(112): main`), kernel
# template arguments
# and the op's raw trace cells, whose quantities the numeric fields and `args` already carry
_NAMES_ONLY = frozenset(
    {"call_chain", "kernel_details_summary", "kernel_name", "kernel_name_trunc", "kernel_name_trace2", "launcher_path",
     "Input type",
     "Concrete Inputs", "perf_params"}
)  # fmt: skip
_SKELETON_START = re.compile(r"^### P(\d+):|^<!--\s*reasoning-candidate\b.*?\brank=(\d+)")
_SLOT = re.compile(re.escape(SLOT_OPEN) + r".*?" + re.escape(SLOT_CLOSE))


@dataclass
class Grounding:
    """Per rank, the category, and everything: what prose may quote. `names[r]` is one string holding every string
    of rank r's pool (joined by NUL), so that a backticked name is looked up with one substring search."""

    ranks: list[int]
    category: Pool
    by_rank: dict[int, Pool]
    citations: dict[int, str]  # rank -> the `(source: …)` citation the skeleton ends its Identification with
    metrics: dict[str, Any] = field(default_factory=dict, repr=False)
    names: dict[int, str] = field(default_factory=dict)
    category_names: str = ""
    keys: set[str] = field(default_factory=set)  # every field name of the category and the P-items
    _owners_text: str = ""
    _owner_starts: list[int] = field(default_factory=list)
    _owner_ranks: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.names = {rank: "\0".join(pool.strings) for rank, pool in self.by_rank.items()}
        self.category_names = "\0".join(self.category.strings)
        self.keys = set(self.category.keys).union(*(pool.keys for pool in self.by_rank.values()))
        pieces, offset = [], 0
        for rank in self.ranks:
            self._owner_starts.append(offset)
            self._owner_ranks.append(rank)
            pieces.append(self.names.get(rank, "") + "\0\0")
            offset += len(pieces[-1])
        self._owners_text = "".join(pieces)

    @cached_property
    def value_ranks(self) -> dict[Decimal, dict[int, set[str | None]]]:
        """Per value of the P-items' pools, the ranks holding it and its units there: built when prose first types a
        number (the pools' numbers wait for it: a findings file written by reference types none)."""
        value_ranks: dict[Decimal, dict[int, set[str | None]]] = {}
        for rank, pool in self.by_rank.items():
            for value, sources in pool.numbers.values.items():
                value_ranks.setdefault(value, {}).setdefault(rank, set()).update(s.unit for s in sources)
        return value_ranks

    def expect_free_text(self, numbers: list[Number], spans: list[str]) -> None:
        """The numbers and backticked names of the prose outside every P-item, before it is checked: `everything`
        then keeps only what they can match (the whole of operations[] is ~70 numbers and strings a row, GBs at
        10^5 rows) and reads the operations one at a time. A question about anything else builds it whole."""
        self._free = (numbers, spans)

    @cached_property
    def everything(self) -> Pool:
        """Every number and string of the metrics JSON, for free text (built only when free text needs it); only
        what `expect_free_text` named when it was told."""
        free = getattr(self, "_free", None)
        if free is None:
            return self.whole_everything
        numbers, spans = free
        pool = Pool(numbers=_AskedNumbers(numbers, lambda: self.whole_everything.numbers),
                    strings=_NameSearch(spans))  # fmt: skip
        pool.take({k: self.metrics.get(k) for k in _CATEGORY_SKIP}, "")
        assert isinstance(pool.strings, _NameSearch)
        for text in self.category.strings:  # all_names ends with the category's strings
            pool.strings.append(text)
        pool.strings.finish()
        return pool

    @cached_property
    def whole_everything(self) -> Pool:
        pool = Pool()
        pool.take({k: self.metrics.get(k) for k in _CATEGORY_SKIP}, "")
        return pool

    @cached_property
    def all_names(self) -> str:
        return "\0".join([*self.whole_everything.strings, *self.category.strings])

    def has_free_name(self, span: str) -> bool:
        """Whether `span` is in the text of every string of the metrics JSON (`all_names`)."""
        strings = self.everything.strings
        if isinstance(strings, _NameSearch) and span in strings.asked:
            return span in strings.found
        return span in self.all_names

    def has_number(self, rank: int, number: Number) -> bool:
        units = self.value_ranks.get(number.value, {}).get(rank)
        return units is not None and any(compatible(number.unit, number.e2e, unit) for unit in units)

    def number_ranks(self, number: Number, limit: int = 3) -> list[int]:
        """Up to `limit` ranks whose pools hold the number with a compatible unit."""
        found = []
        for rank, units in self.value_ranks.get(number.value, {}).items():
            if any(compatible(number.unit, number.e2e, unit) for unit in units):
                found.append(rank)
                if len(found) >= limit:
                    break
        return found

    def has_name(self, rank: int, span: str) -> bool:
        return span in self.names.get(rank, "")

    def name_owners(self, span: str) -> list[int]:
        """The ranks whose strings hold `span` (the first two found: enough to tell one owner from several)."""
        owners: list[int] = []
        pos = 0
        while len(owners) < 2 and (hit := self._owners_text.find(span, pos)) >= 0:
            i = bisect.bisect_right(self._owner_starts, hit) - 1
            owners.append(self._owner_ranks[i])
            pos = self._owner_starts[i + 1] if i + 1 < len(self._owner_starts) else len(self._owners_text)
        return owners


def build_grounding(
    metrics: dict[str, Any], view: MetricsView, skeleton: str | None, quotable: dict[str, Any] | None = None
) -> Grounding:
    """`quotable`: another tool result whose numbers and names count as the category's (a ranks summary)."""
    category = Pool(numbers=DeferredNumbers())
    if quotable is not None:
        category.take(quotable, "ranks_summary")
    category.keys.update(str(key) for key in metrics)
    for key, value in metrics.items():
        if key not in _CATEGORY_SKIP:
            category.take(value, key)
    for text, unit in CONTRACT_NUMBERS:
        category.numbers.add(Decimal(text), unit, "the contract (prompts/findings_format.md)")
    by_rank: dict[int, Pool] = {}
    for position, finding in enumerate(view.findings):
        pool = by_rank.setdefault(finding.rank, Pool(numbers=DeferredNumbers()))  # 7,000 members: ~0.4 s
        pool.take(finding.raw, f"category_findings[{position}]")
        indices = finding_operation_indices(finding, view.operations)
        if len(indices) > MAX_MEMBER_OPS:  # a finding of thousands of members: its longest ones are what prose quotes
            times = lookup_keys(view.operations).times  # the operations' own time_ms, none of them parsed
            indices = sorted(indices, key=lambda i: -(as_float(times[i]) or 0.0))
            indices = indices[:MAX_MEMBER_OPS]
        for index in indices:
            pool.take(view.operations[index], f"operations[{index}]")
    citations: dict[int, str] = {}
    if skeleton is not None:
        _take_skeleton(skeleton, category, by_rank, citations)
    return Grounding(sorted(by_rank), category, by_rank, citations, metrics)


def _take_skeleton(skeleton: str, category: Pool, by_rank: dict[int, Pool], citations: dict[int, str]) -> None:
    """The rendered skeleton's text, region by region: a P-item's and its candidate block's go to that rank, the
    rest (overview, sections the template adds before Recommendations) to the category."""
    from sdpa_analyzer.server.findings.references import (
        strip_reference_list,  # the list names every rank's values: not text
    )

    rank: int | None = None
    rows = 0
    for line in strip_reference_list(skeleton.splitlines()):
        start = _SKELETON_START.match(line)
        if start:
            rank, rows = int(start.group(1) or start.group(2)), 0
        elif line.startswith("## "):
            rank, rows = None, 0
        if line.startswith("|"):
            rows += 1
            if rows > MAX_SKELETON_ROWS:
                continue
        text = _SLOT.sub(lambda m: m.group(0)[len(SLOT_OPEN) : -len(SLOT_CLOSE)], line)
        pool = by_rank.get(rank) if rank is not None else category
        if pool is None:
            continue
        pool.take_text(text, "the template")
        if rank is not None and "(source:" in line and line.startswith("**Identification:**"):
            citations[rank] = line[line.index("(source:") :].strip()


def skeleton_for(metrics: dict[str, Any], view: MetricsView) -> str | None:
    """The skeleton render_findings_template writes for these metrics (None when it cannot be rendered); a finding
    of more than MAX_MEMBER_OPS members is rendered with its first ones (a 20,000-row table adds no new spelling)."""
    if not view.category:
        return None
    try:
        return render_findings_template(_trimmed(metrics, view), view.category)
    except (MetricsFormatError, ValueError, TypeError):
        return None


def _trimmed(metrics: dict[str, Any], view: MetricsView) -> dict[str, Any]:
    if all(len(f.members) <= MAX_MEMBER_OPS for f in view.findings):
        return metrics
    findings = []
    for raw in metrics.get("category_findings") or []:
        members = raw.get("members") if isinstance(raw, dict) else None
        if isinstance(members, list) and len(members) > MAX_MEMBER_OPS:
            raw = {**raw, "members": members[:MAX_MEMBER_OPS]}
        findings.append(raw)
    keep: set[int] = set()
    for finding in view_metrics({**metrics, "category_findings": findings}).findings:
        keep.update(finding_operation_indices(finding, view.operations))
    return {**metrics, "category_findings": findings, "operations": [view.operations[i] for i in sorted(keep)]}
