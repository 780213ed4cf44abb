"""Issue 31: the streamed metrics reader and the whole-document read agree on every document, whatever escapes spell
its keys, or the streamed one declines (None: the caller reads the document whole).

Documents in rank_findings' layout (one operation a line) are generated with every key spelled with random `\\uXXXX`
escapes, and with duplicates: a second top-level `operations` (the issue's `"operation\\u0073"`: an empty list the
whole read keeps, since a parser keeps the last of a duplicated key) before or after the list, and duplicated
operation fields. The reference is the parser itself on the whole text (json with Decimal numbers, and orjson),
never the streamed code.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdpa_analyzer.server.folder.metrics_file import OperationKeys, open_streamed
from sdpa_analyzer.server.roots import DataRoots

PARSERS = {"decimal": lambda b: json.loads(b.decode(), parse_float=Decimal), "float": orjson.loads}
OP_FIELDS = ["name", "args", "time_ms", "efficiency", "difference_ms", "other"]


@st.composite
def spelled(draw: st.DrawFn, key: str) -> str:
    """`key` as JSON string text (quotes included), each character escaped or not."""
    out = []
    for ch in key:
        if draw(st.booleans()):
            out.append(f"\\u{ord(ch):04{draw(st.sampled_from(['x', 'X']))}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


values = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "\\u0041"]), st.just(1.5), st.just([]))


@st.composite
def operation(draw: st.DrawFn, i: int) -> str:
    members = []
    for name in draw(st.lists(st.sampled_from(OP_FIELDS), min_size=1, max_size=8)):  # duplicates allowed
        if name == "efficiency":
            inner = draw(spelled("efficiency_percent"))
            value = f"{{{inner}: {draw(st.integers(0, 100))}}}"
        elif name == "name":
            value = f'"op{i}_{draw(st.integers(0, 3))}"'
        else:
            v = draw(values)
            value = f'"{v}"' if isinstance(v, str) else json.dumps(v)  # strings as written: escapes kept
        members.append(f"{draw(spelled(name))}: {value}")
    return "{" + ", ".join(members) + "}"


@st.composite
def document(draw: st.DrawFn) -> str:
    ops = [draw(operation(i)) for i in range(draw(st.integers(1, 4)))]
    head = ['"category": "sdpa_fwd"']
    tail = ['"summary": {"n": 1}']
    for _ in range(draw(st.integers(0, 2))):  # duplicated operations keys, spelled any way, on either side
        dup = f"{draw(spelled('operations'))}: {draw(st.sampled_from(['[]', '[1]', '{}', 'null']))}"
        (head if draw(st.booleans()) else tail).append(dup)
    if draw(st.booleans()):
        head.append(f"{draw(spelled('category'))}: \"x\"")
    return "{" + ", ".join(head) + ', "operations":[\n' + ",\n".join(ops) + "\n], " + ", ".join(tail) + "}\n"


@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(text=document(), numbers=st.sampled_from(["decimal", "float"]))
def test_streamed_and_whole_reads_agree_on_any_key_spelling(text: str, numbers: str, tmp_path: Path) -> None:
    path = tmp_path / "sdpa_fwd_metrics.json"
    path.write_text(text)
    whole = PARSERS[numbers](text.encode())
    doc = open_streamed(path, DataRoots([tmp_path]), numbers)  # type: ignore[arg-type]
    if doc is None:
        return  # declined: the caller reads it whole
    try:
        ops = doc["operations"]
        assert list(ops) == whole["operations"], text
        assert {k: v for k, v in doc.items() if k != "operations"} == {
            k: v for k, v in whole.items() if k != "operations"
        }, text
        assert list(doc) == list(whole), text  # the keys in the same order
        assert vars(ops.keys) == vars(OperationKeys.of(whole["operations"])), text
    finally:
        doc["operations"].close()


def test_the_issue_document_is_declined(tmp_path: Path) -> None:
    """The issue's case: `"operation\\u0073": []` after the list. A JSON parser keeps the empty list; the streamed
    read served the four operations above it."""
    ops = ",\n".join(json.dumps({"name": f"op{i}", "time_ms": 1.0}) for i in range(4))
    text = '{"category": "sdpa_fwd", "operations":[\n' + ops + '\n], "operation\\u0073": []}\n'
    assert json.loads(text)["operations"] == []
    path = tmp_path / "m.json"
    path.write_text(text)
    assert open_streamed(path, DataRoots([tmp_path]), "float") is None


def test_a_plain_document_still_streams(tmp_path: Path) -> None:
    ops = ",\n".join(json.dumps({"name": f"op{i}", "time_ms": 1.0}) for i in range(4))
    path = tmp_path / "m.json"
    path.write_text('{"category": "sdpa_fwd", "operations":[\n' + ops + '\n], "summary": {}}\n')
    doc = open_streamed(path, DataRoots([tmp_path]), "float")
    assert doc is not None and len(doc["operations"]) == 4
    doc["operations"].close()
