"""The findings tools read operations[] streamed (server.folder.metrics_file): what they give is what the
whole-document read gives, on the findings corpus, the shared analysis folders and folders made from the shared
traces; the free-text pool that keeps only what the prose asks about answers as the whole pool does."""

from __future__ import annotations

import dataclasses
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from sdpa_analyzer.server.findings import load_metrics, render_findings_template, validate_findings_text
from sdpa_analyzer.server.findings.grounding import build_grounding, numbers_in_text, skeleton_for
from sdpa_analyzer.server.findings.metrics_view import view_metrics
from sdpa_analyzer.server.folder.metrics_file import OperationKeys, StreamedOperations, metrics_document, open_streamed
from sdpa_analyzer.server.folder.read import read_json_file
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.ranked import load_ranked
from sdpa_analyzer.server.tools import call
from tests.support import (
    ANALYSIS_FOLDERS,
    FINDINGS_CORPUS,
    FIXTURES_WITH_OPS,
    TRACES,
    copy_fixture,
    fill_findings,
    need,
    roots_for,
)

CORPUS_METRICS = sorted((FINDINGS_CORPUS / "metrics").glob("*.json"))
CORPUS_FILES = sorted((FINDINGS_CORPUS / "valid").glob("*.md")) + sorted((FINDINGS_CORPUS / "broken").glob("*.md"))
FREE_TEXT = "\n\nOverall {numbers} — see `{span}` and `aten::nothing_like_it` and `{name}`.\n"


def line_layout(text: str) -> str:
    """The same JSON document with operations[] one entry a line, as rank_findings writes it: each entry's text kept
    as written (its number spellings too), newlines outside strings turned into spaces (JSON strings hold none)."""
    decoder = json.JSONDecoder()
    key = text.index('"operations"')
    start = text.index("[", key) + 1
    items, pos = [], start
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            break
        _, end = decoder.raw_decode(text, pos)
        items.append(text[pos:end].replace("\n", " "))
        pos = end
    head = text[:key].replace("\n", " ") + '"operations":[\n'
    return head + ",\n".join(items) + "\n" + text[pos:].replace("\n", " ") + "\n"


def _pair(path: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(the file as it is, a copy in the line layout) under tmp_path."""
    text = path.read_text(encoding="utf-8")
    whole, lines = tmp_path / "whole" / path.name, tmp_path / "lines" / path.name
    for p, t in ((whole, text), (lines, line_layout(text))):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(t, encoding="utf-8")
    return whole, lines


def _with_ops(metrics: dict[str, Any]) -> dict[str, Any]:
    ops = metrics["operations"]
    return {**metrics, "operations": list(ops) if isinstance(ops, StreamedOperations) else ops}


def _sources() -> list[Path]:
    """The metrics files with operations: the corpus's and the shared folders' (the others have no list to stream)."""
    shared = sorted(ANALYSIS_FOLDERS.glob("*/category_data/*_metrics.json")) if ANALYSIS_FOLDERS.exists() else []
    return [p for p in [*CORPUS_METRICS, *shared] if json.loads(p.read_text()).get("operations")]


def _texts(metrics: dict[str, Any], category: str) -> list[str]:
    """The skeleton, it filled, and it filled with free text that quotes numbers and names of the whole file."""
    skeleton = render_findings_template(metrics, category)
    filled = fill_findings(skeleton, metrics)
    view = view_metrics(metrics)
    ops = list(view.operations)
    numbers = [str(x) for op in ops[:3] for x in (op.get("time_ms"), op.get("percent_of_total")) if x is not None]
    rounded = [f"{float(n):.1f}" for n in numbers]
    name = str(ops[-1].get("kernel_name_trunc") or ops[-1].get("name")) if ops else "x"
    free = FREE_TEXT.format(numbers=" ms, ".join([*numbers, *rounded, "31415.9"]) + " ms", span=name[:12], name=name)
    return [skeleton, filled, filled.replace("## Recommendations", free + "## Recommendations", 1)]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_streamed_read_gives_the_whole_documents_values(path: Path, tmp_path: Path) -> None:
    whole, lines = _pair(need(path), tmp_path)
    roots = DataRoots([tmp_path])
    assert open_streamed(whole, roots, "decimal") is None or "\n" not in whole.read_text().rstrip("\n")
    expected = load_metrics(whole)
    with metrics_document(lines, roots, "decimal", lambda: pytest.fail("not streamed")) as streamed:
        ops = streamed["operations"]
        assert isinstance(ops, StreamedOperations)
        assert list(streamed) == list(expected)  # key order kept
        assert _with_ops(streamed) == expected
        assert [str(op) for op in ops] == [str(op) for op in expected["operations"]]  # Decimal spellings too
        assert ops.keys.names == [op.get("name") for op in expected["operations"]]
    floats = read_json_file(whole, "metrics JSON")
    with metrics_document(lines, roots, "float", lambda: pytest.fail("not streamed")) as streamed:
        assert _with_ops(streamed) == floats
        assert [repr(op) for op in streamed["operations"]] == [repr(op) for op in floats["operations"]]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_template_and_validator_agree_streamed_and_whole(path: Path, tmp_path: Path) -> None:
    whole, lines = _pair(need(path), tmp_path)
    roots = DataRoots([tmp_path])
    category = str(load_metrics(whole).get("category") or "sdpa_fwd")
    floats = read_json_file(whole, "metrics JSON")
    with metrics_document(lines, roots, "float", lambda: pytest.fail("not streamed")) as streamed:
        assert render_findings_template(streamed, category) == render_findings_template(floats, category)
    expected = load_metrics(whole)
    texts = _texts(expected, category) + [p.read_text(encoding="utf-8") for p in CORPUS_FILES]
    with metrics_document(lines, roots, "decimal", lambda: pytest.fail("not streamed")) as streamed:
        for text in texts:
            got = validate_findings_text(text, streamed)
            assert got == validate_findings_text(text, expected)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_free_text_pool_answers_as_the_whole_pool(path: Path) -> None:
    metrics = load_metrics(need(path))
    view = view_metrics(metrics)
    skeleton = skeleton_for(metrics, view)
    asked = build_grounding(metrics, view, skeleton)
    whole = build_grounding(metrics, view, skeleton)
    values = sorted(whole.whole_everything.numbers.values)[::7][:300]
    text = " ".join(
        [f"{v}" for v in values] + [f"{v:.1f}" for v in values if v.is_finite()] + ["99999.125", "1,128,2048"]
    )
    numbers = numbers_in_text(text)
    names = whole.whole_everything.strings[::11][:50]
    spans = [s[1:9] for s in names] + ["not-in-it", "", names[0] + "\0" if names else "z"]
    asked.expect_free_text(numbers, spans)
    for number in numbers:
        assert asked.everything.numbers.sources(number.value) == whole.whole_everything.numbers.sources(number.value)
        assert asked.everything.numbers.rounding_of(number) == whole.whole_everything.numbers.rounding_of(number)
        for part in number.parts:
            assert asked.everything.numbers.sources(part) == whole.whole_everything.numbers.sources(part)
    for span in spans:
        assert asked.has_free_name(span) == (span in whole.all_names)
    assert "whole_everything" not in vars(asked)  # answered without building the whole pool
    assert asked.everything.numbers.sources(Decimal("123456.789")) == []  # not asked: the whole pool answers


_RUN = re.compile(r"^<!-- sdpa_analyzer_run_id: [0-9a-f]+ -->$", re.M)


def _tools(folder: Path, roots: DataRoots, category: str) -> tuple[str, Any, Any]:
    """The template the tool writes, the validator's report on it filled, and the report's reading of the ranking."""
    findings = folder / "category_findings" / f"{category}_findings.md"
    findings.unlink(missing_ok=True)
    call("render_findings_template", roots, output_dir=str(folder), category=category)
    skeleton = findings.read_text(encoding="utf-8")
    findings.write_text(fill_findings(skeleton, load_metrics(folder / "category_data" / f"{category}_metrics.json")))
    report = call("validate_findings", roots, findings_path=str(findings))
    ranked = load_ranked(folder, category, roots)
    return skeleton, report, ranked.__dict__ | {"mtime_ns": 0} if ranked else None


def _compare_layouts(folder: Path, roots: DataRoots) -> int:
    """Rank each category, run the tools on the line layout, then on the same document compact (as main wrote it:
    read whole); both give the same. Returns the categories compared."""
    compared = 0
    for category in ("sdpa_fwd", "sdpa_bwd", "inferenceattention"):
        if not (folder / "category_data" / f"{category}_ops.csv").exists():
            continue
        call("rank_findings", roots, output_dir=str(folder), category=category)
        mpath = folder / "category_data" / f"{category}_metrics.json"
        data = mpath.read_bytes()
        assert open_streamed(mpath, roots, "float") is not None
        streamed = _tools(folder, roots, category)
        mpath.write_bytes(orjson.dumps(orjson.loads(data)) + b"\n")  # the compact layout: read whole
        assert open_streamed(mpath, roots, "float") is None
        assert _tools(folder, roots, category) == streamed
        compared += 1
    return compared


@pytest.mark.parametrize("name", FIXTURES_WITH_OPS)
def test_tools_agree_on_shared_folders(name: str, tmp_path: Path) -> None:
    folder = copy_fixture(name, tmp_path)
    assert _compare_layouts(folder, DataRoots(roots_for(tmp_path))) >= 1


_SHARED_TRACES = ["h100", "mi300", "mi300x-microbench", "inference", "b200", "synthetic"]


@pytest.mark.parametrize("kind", _SHARED_TRACES)
def test_tools_agree_on_analyzed_shared_traces(kind: str, tmp_path: Path) -> None:
    traces = sorted(p for p in need(TRACES / kind).rglob("*.json*") if "capture_traces" not in p.parts)
    compared = 0
    for i, trace in enumerate(traces):
        out = tmp_path / f"t{i}"
        roots = DataRoots(roots_for(tmp_path))
        try:
            call("analyze_trace", roots, trace_path=str(trace), output_dir=str(out))
        except ValueError:  # a trace the analyzer refuses (no GPU events, ...): nothing to compare
            continue
        compared += _compare_layouts(out, roots)
    assert compared or not traces


def _unusual() -> list[tuple[str, bytes]]:
    """A line-layout document changed in one way each: what the streamed read must either read as the whole read
    does, or leave to it."""
    ops = [b'{"name":"a","args":"x","time_ms":1.50,"efficiency":{"efficiency_percent":2.0}}', b'{"name":"b"}']
    head, tail = b'{"category":"sdpa_fwd","operations":[\n', b'\n],"category_findings":[]}\n'

    def doc(items: list[bytes], before: bytes = head, after: bytes = tail) -> bytes:
        return before + b",\n".join(items) + after

    deep = b'{"name":"d","x":' + b"[" * 70 + b"]" * 70 + b"}"
    return [
        ("plain", doc(ops)),
        ("NaN (json reads it, msgspec does not)", doc([*ops, b'{"name":"n","time_ms":NaN}'])),
        ("a lone surrogate", doc([*ops, b'{"name":"\\ud800"}'])),
        ("a big exponent", doc([*ops, b'{"name":"e","time_ms":1e400}'])),
        ("an entry that is no object", doc([*ops, b"[1,2]"])),
        ("nesting past the limit", doc([*ops, deep])),
        ("invalid UTF-8 in a string", doc([*ops, b'{"name":"\xff"}'])),
        ("a raw control character", doc([*ops, b'{"name":"a\x01b"}'])),
        ("two entries on a line", doc([ops[0] + b"," + ops[1]])),
        ("a trailing comma", doc(ops, after=b",\n" + tail[1:])),
        ("a second operations key", doc(ops, after=b'\n],"operations":[]}\n')),
        ("a second operations key, escaped", doc(ops, after=b'\n],"operation\\u0073":[]}\n')),
        ("an escaped key after the list", doc(ops, after=b'\n],"categor\\u0079_findings":[]}\n')),
        ("duplicate keys in an entry", doc([b'{"name":"a","name":"b","time_ms":1,"time_ms":2}'])),
        ("efficiency null, a list, a string", doc([*ops, b'{"name":"n","efficiency":null}',
                                                    b'{"name":"l","efficiency":[1.5]}', b'{"efficiency":"x"}'])),
        ("a duplicated efficiency_percent", doc([b'{"name":"a","efficiency":{"efficiency_percent":1.0,'
                                                 b'"efficiency_percent":2.50}}'])),
        ("not closed", doc(ops, after=b"\n")),
        ("junk after the document", doc(ops, after=tail + b"x")),
        ("deep after the list", doc(ops, after=b'\n],"z":' + b"[" * 70 + b"]" * 70 + b"}\n")),
    ]


@pytest.mark.parametrize(("what", "data"), _unusual(), ids=[w for w, _ in _unusual()])
@pytest.mark.parametrize("numbers", ["decimal", "float"])
def test_unusual_documents_are_read_as_whole_or_left_to_the_whole_read(
    what: str, data: bytes, numbers: str, tmp_path: Path
) -> None:
    path = tmp_path / "sdpa_fwd_metrics.json"
    path.write_bytes(data)
    whole_read = (lambda: load_metrics(path)) if numbers == "decimal" else (lambda: read_json_file(path, "metrics"))
    try:
        expected: Any = whole_read()
    except ValueError as exc:  # MetricsFormatError and InputError: the streamed read must leave it to the whole read
        expected = exc
    streamed = open_streamed(path, DataRoots([tmp_path]), numbers)  # type: ignore[arg-type]
    if isinstance(expected, Exception):  # the one leniency (docs/formats.md): 1e400 in a field orjson would refuse
        assert streamed is None or (numbers == "float" and what == "a big exponent")
        return
    if streamed is not None:
        assert [str(op) for op in streamed["operations"]] == [str(op) for op in expected["operations"]]
        assert _with_ops(streamed) == expected
        kept, read = streamed["operations"].keys, OperationKeys.of(expected["operations"])
        assert repr(dataclasses.astuple(kept)) == repr(dataclasses.astuple(read))  # the lookup fields, spellings too
        streamed["operations"].close()
    else:
        assert what not in ("plain", "NaN (json reads it, msgspec does not)", "duplicate keys in an entry",
                            "efficiency null, a list, a string", "a duplicated efficiency_percent")


_SPELLINGS = [
    b'{"a":1,"a":2}',
    b'{"a":"\\ud800"}',
    b'{"a":123456789012345678901234567890,"b":-9223372036854775809,"c":18446744073709551616}',
    b'{"a":1e400,"b":-0,"c":1.0E+2,"d":-0.0,"e":1.50,"f":0.1,"g":1.5e-7}',
    b'{"a":"\\u0000\\u00e9\\"","b":NaN,"c":-Infinity}',
    b'{"k\\u0073":[1,{"x":[true,false,null]}],"z":{}}',
]


@pytest.mark.parametrize("text", _SPELLINGS, ids=[str(i) for i in range(len(_SPELLINGS))])
def test_decimal_parse_is_jsons(text: bytes) -> None:
    """The streamed read's Decimal parser gives what `json.loads(parse_float=Decimal)` gives (values, types, key
    order, spellings), msgspec or not."""
    from sdpa_analyzer.server.folder.metrics_file import _decimal_loads

    expected = json.loads(text.decode(), parse_float=Decimal)
    got = _decimal_loads(text)
    assert repr(got) == repr(expected)
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


def test_a_pass_over_more_operations_than_the_cache_holds_still_finds_its_first_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finding's members are read by several checks in turn, in one order: past the cache's size the newest entry
    gives its slot to the next, so each later pass over 10 operations with room for 4 parses 7 of them again (an
    LRU, dropping the oldest, parses all 10 each time)."""
    from sdpa_analyzer.server.folder import metrics_file

    monkeypatch.setattr(metrics_file, "CACHED_OPERATIONS", 4)
    ops = ",\n".join(json.dumps({"name": "op", "time_ms": i + 0.5}) for i in range(10))
    path = tmp_path / "m_metrics.json"
    path.write_text('{"category":"m","operations":[\n' + ops + "\n]}\n")
    doc = open_streamed(path, DataRoots([tmp_path]), "decimal")
    assert doc is not None
    streamed = doc["operations"]
    parsed = [0]
    real = streamed._parse

    def counted(data: bytes) -> Any:
        parsed[0] += 1
        return real(data)

    streamed._parse = counted
    try:
        assert [op["time_ms"] for op in streamed] == [Decimal(f"{i}.5") for i in range(10)]
        assert parsed[0] == 10
        assert [op["time_ms"] for op in streamed] == [Decimal(f"{i}.5") for i in range(10)]
        assert parsed[0] == 10 + 7  # entries 0, 1, 2 kept; the fourth slot holds the newest, replaced at each miss
        assert [op["time_ms"] for op in streamed] == [Decimal(f"{i}.5") for i in range(10)]
        assert parsed[0] == 10 + 7 + 7
    finally:
        streamed.close()


@pytest.mark.parametrize("pread", [True, False], ids=["pread", "seek-and-read"])
def test_an_operation_is_read_at_its_line_with_or_without_pread(
    pread: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POSIX reads a line with one pread; elsewhere (no os.pread) a seek and a read: both give each line's entry."""
    from sdpa_analyzer.server.folder import roofline_rows

    if not pread:
        monkeypatch.setattr(roofline_rows, "_PREAD", None)  # the one read_at of the metrics and roofline readers
    ops = ",\n".join(json.dumps({"name": f"op{i}", "time_ms": i + 0.25}) for i in range(5))
    path = tmp_path / "m_metrics.json"
    path.write_text('{"category":"m","operations":[\n' + ops + "\n]}\n")
    doc = open_streamed(path, DataRoots([tmp_path]), "decimal")
    assert doc is not None
    try:
        got = [(doc["operations"][i]["name"], doc["operations"][i]["time_ms"]) for i in (3, 0, 4, 1, 2)]
    finally:
        doc["operations"].close()
    assert got == [(f"op{i}", Decimal(f"{i}.25")) for i in (3, 0, 4, 1, 2)]
