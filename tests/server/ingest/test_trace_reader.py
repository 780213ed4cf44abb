"""The streamed trace reader: same events and header as one json.loads, for every layout we can think of."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sdpa_analyzer.server.ingest import reader as R
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.ingest.reader import TraceReader


def _read(path: Path) -> tuple[list, dict]:
    rd = TraceReader(path)
    events: list = []
    for chunk in rd.chunks():
        events.extend(chunk)
    assert rd.n_events == len(events)
    return events, rd.header


def _expected(path: Path) -> tuple[list, dict]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    return doc.pop("traceEvents"), doc


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut after every ~60 bytes and read 97-byte blocks: every boundary case gets exercised."""
    monkeypatch.setattr(R, "CHUNK_BYTES", 60)
    monkeypatch.setattr(R, "READ_BYTES", 97)
    monkeypatch.setattr(R, "_MAX_OUT", 97)


TRICKY_EVENTS = [
    {"ph": "X", "cat": "cpu_op", "name": 'weird },{ name }] with "quotes" and \\ slash', "ts": 1, "dur": 2},
    {"ph": "X", "cat": "python_function", "name": "f(x) -> {'a': [1, {\"b\": 2}]}", "ts": 2, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "nested", "args": {"list": [{"a": 1}, {"b": [2, {"c": "}"}]}]}},
    {"ph": "i", "name": "unicode é ✓ 漢字", "ts": 3},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t },\n{ x"}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 4.5, "dur": 0.25, "args": {"correlation": 7}},
]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("events_first", [False, True])
def test_tricky_layouts_match_json(
    tmp_path: Path, tiny_chunks: None, indent: int | None, gz: bool, events_first: bool
) -> None:
    meta = {
        "schemaVersion": 1,
        "metadata": {"nested": {"traceEvents": [1, 2]}, "s": '"traceEvents": ['},
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
    }
    doc = {"traceEvents": TRICKY_EVENTS * 3, **meta} if events_first else {**meta, "traceEvents": TRICKY_EVENTS * 3}
    text = json.dumps(doc, indent=indent).encode()
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(text) if gz else text)
    events, header = _read(path)
    exp_events, exp_header = _expected(path)
    assert events == exp_events
    assert header == exp_header


def test_empty_events_and_multimember_gzip(tmp_path: Path, tiny_chunks: None) -> None:
    p = tmp_path / "empty.json"
    p.write_bytes(b'{"traceEvents": [ ], "x": 1}')
    assert _read(p) == ([], {"x": 1})
    # a gzip file made of two members (cat a.gz b.gz) is one stream
    text = json.dumps({"traceEvents": TRICKY_EVENTS, "y": [1]}).encode()
    half = len(text) // 2
    q = tmp_path / "two.json.gz"
    q.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    assert _read(q) == _expected(q)


def test_real_traces_match_json(traces_dir: Path) -> None:
    for path in sorted(traces_dir.glob("*/*.json.gz")):
        assert _read(path) == _expected(path), path


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"", "empty"),
        (b"   \n", "only whitespace"),
        (b"not json at all", "not valid JSON"),
        (b'{"a": 1}', "without 'traceEvents'"),
        (b"[1, 2, 3]", "not a trace object"),
        (b'{"traceEvents": {"a": 1}}', "expected a list"),
        (b'{"traceEvents": [{"ph": "X"}, {"ph": "X"', "truncated"),
        (b'{"traceEvents": [{"ph": "X"}], "x": ', "not valid JSON after the traceEvents array"),
        (b'{"traceEvents": [1, 2]}', "is not a JSON object"),
    ],
)
def test_bad_content_is_one_line(tmp_path: Path, content: bytes, fragment: str) -> None:
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(TraceError) as err:
        _read(p)
    msg = str(err.value)
    assert fragment in msg
    assert "\n" not in msg and str(p) in msg


def test_truncated_and_corrupt_gzip(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps({"traceEvents": TRICKY_EVENTS * 200}).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="truncated gzip"):
        _read(cut)
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(data[:20] + b"\x00" * 50 + data[70:])
    with pytest.raises(TraceError, match=r"corrupt gzip|truncated|not valid JSON"):
        _read(bad)


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="not found"):
        TraceReader(tmp_path / "nope.json")
    with pytest.raises(TraceError, match="not a file"):
        TraceReader(tmp_path)
