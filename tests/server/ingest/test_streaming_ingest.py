"""The streamed ingest against the whole-document parse: the same analysis folder, byte for byte, on every shared trace
and on hand-made layouts; the typed fast decoder against the lenient builder on random events; the size limit."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdpa_analyzer.server.ingest import load as L
from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest import reader as R
from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.ingest.events import EventTablesBuilder, TraceEvents
from tests.support import FLASH_OP, SDPA_ARGS, TRACES, folder_bytes, kernel_trace, need


def _analyze(tmp: Path, name: str, streaming: bool, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[Any, Any]:
    """(folder bytes, result) of one analysis, or ('error', message) when it fails with a TraceError."""
    monkeypatch.setattr(L, "STREAMING", streaming)
    out = tmp / ("stream" if streaming else "whole") / name
    try:
        res = analyze_trace(output_dir=out, **kw)
    except TraceError as exc:
        return "error", str(exc)
    dump = res.model_dump(exclude={"seconds", "output_dir", "files_written"})
    return folder_bytes(out), dump


def _same_both_ways(tmp: Path, name: str, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Any:
    streamed = _analyze(tmp, name, True, monkeypatch, **kw)
    whole = _analyze(tmp, name, False, monkeypatch, **kw)
    assert streamed[0] == whole[0], f"{name}: the folders differ"
    assert streamed[1] == whole[1], f"{name}: the results differ"
    return streamed


# ---- every trace in ../shared ------------------------------------------------------------------------------------

_BIG = 400_000  # compressed bytes: the larger shared traces run in the slow suite


def _shared_cases() -> list[Any]:
    if not TRACES.exists():
        return [pytest.param(None, id="shared-absent")]
    cases: list[Any] = []
    for p in sorted(TRACES.rglob("*.json.gz")):
        marks = [pytest.mark.slow] if p.stat().st_size > _BIG else []
        cases.append(pytest.param({"trace_path": p}, id=str(p.relative_to(TRACES)), marks=marks))
    for run, trace in (("sglang_decode", "sglang_Qwen3-8B_decode.json.gz"),
                       ("vllm_prefilldecode_piecewise", "graph_execution.json.gz")):  # fmt: skip
        folder = TRACES / "inference" / run
        kw = {"trace_path": folder / trace, "capture_dir": folder / "capture_traces"}
        cases.append(pytest.param(kw, id=f"{run}+capture", marks=[pytest.mark.slow]))
    for pair in ("test02_attention_both_unfused", "test03_attention_fused_vs_unfused"):
        m = TRACES / "mi300x-microbench"
        kw = {"trace_path": m / f"{pair}_trace1.json.gz", "trace2_path": m / f"{pair}_trace2.json.gz"}
        cases.append(pytest.param(kw, id=f"{pair} (comparative)"))
    return cases


@pytest.mark.parametrize("case", _shared_cases())
def test_shared_traces_stream_to_the_whole_parse_folder(
    case: dict[str, Path] | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need(TRACES)
    assert case is not None
    folder, _ = _same_both_ways(tmp_path, "t", monkeypatch, **case)
    assert folder != "error" and any(k.endswith("category_manifest.json") for k in folder)


# ---- hand-made layouts -------------------------------------------------------------------------------------------


def _rich_trace() -> dict[str, Any]:
    """Attention calls with kernels, an unfused matmul/softmax/matmul, Python frames, metadata, flows, events without a
    time, categories we ignore, instant events, unicode names, a ROCm-style launch naming its kernel."""
    doc = kernel_trace([{}, {"kernel": {"dur": 45.0}}, {"op": {"name": "aten::_efficient_attention_forward"}}])
    ev = doc["traceEvents"]
    mm = {"Input Dims": [[2, 8, 64, 32], [2, 8, 32, 64]], "Input type": ["float", "float"]}
    sm = {"Input Dims": [[2, 8, 64, 64], [], []], "Input type": ["float", "Scalar", "Scalar"]}
    pv = {"Input Dims": [[2, 8, 64, 64], [2, 8, 64, 32]], "Input type": ["float", "float"]}
    t = 1000.0
    ev.append({"ph": "X", "cat": "python_function", "name": "model.py(12): forward é✓", "pid": 1, "tid": 1,
               "ts": t, "dur": 300.0, "args": {"Python id": 9}})  # fmt: skip
    for k, (name, args) in enumerate((("aten::bmm", mm), ("aten::softmax", sm), ("aten::bmm", pv))):
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t + 10 + 90 * k, "dur": 60.0,
                   "args": {"External id": 50 + k, **args}})  # fmt: skip
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1,
                   "ts": t + 20 + 90 * k, "dur": 4.0, "args": {"correlation": 500 + k, "kernel": f"k{k}_kernel"}})
        ev.append({"ph": "X", "cat": "Kernel", "name": f"k{k}_kernel", "pid": 0, "tid": 7, "ts": t + 30 + 90 * k,
                   "dur": 20.0, "args": {"correlation": 500 + k, "stream": 7, "device": 0}})  # fmt: skip
    ev += [
        {"ph": "s", "id": 500, "pid": 1, "tid": 1, "ts": t + 20, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 500, "pid": 0, "tid": 7, "ts": t + 30, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 2000.0, "dur": 5.0,
         "args": {"correlation": 9999}},
        {"ph": "X", "cat": "cpu_op", "name": "no time"},
        {"ph": "X", "cat": "Trace", "name": "ignored", "ts": 1.0, "dur": 1.0},
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5.0, "s": "t"},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python 漢字"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main \"thread\" \\ },{"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "args": {"labels": "GPU 0"}},
    ]  # fmt: skip
    return doc


def _kineto(doc: dict[str, Any], per_line: int = 1, pad: str = "") -> bytes:
    """Kineto's own layout: the header keys, then `"traceEvents": [`, `per_line` events a line; `pad` (whitespace)
    before the key, after `[`, between two events and after `]`."""
    head = {k: v for k, v in doc.items() if k != "traceEvents"}
    ev = [json.dumps(e, ensure_ascii=False) for e in doc["traceEvents"]]
    lines = [", ".join(ev[i : i + per_line]) for i in range(0, len(ev), per_line)]
    mid = len(lines) // 2
    body = ",\n".join(lines[:mid]) + "," + pad + "\n" + ",\n".join(lines[mid:])
    text = "{\n" + json.dumps(head)[1:-1] + "," + pad + '\n  "traceEvents": [' + pad + "\n" + body + "\n]" + pad + "}"
    return text.encode()


def _layouts() -> dict[str, bytes]:
    doc = _rich_trace()
    events_first = {"traceEvents": doc["traceEvents"], **{k: v for k, v in doc.items() if k != "traceEvents"}}
    nested = {"metadata": {"traceEvents": [1, {"traceEvents": []}], "s": '"traceEvents": [{"ph": "X"}]',
                           "q": 'a\\"traceEvents": ['}, **doc}  # fmt: skip
    huge = json.loads(json.dumps(doc))
    huge["traceEvents"][3]["args"]["blob"] = "}, {" * (R.CHUNK_BYTES // 2)  # one event over two pieces
    return {
        "one event a line": _kineto(doc),
        "three events a line": _kineto(doc, per_line=3),
        "no newlines at all": json.dumps(doc, separators=(",", ":")).encode(),
        "events spanning lines": json.dumps(doc, indent=2).encode(),
        "traceEvents first": json.dumps(events_first).encode(),
        "nested traceEvents keys and strings": json.dumps(nested).encode(),
        "unicode escapes": json.dumps(doc, ensure_ascii=True).encode(),
        "huge single event": json.dumps(huge).encode(),
        "padding around the array": _kineto(doc, pad=" \n\t" * 100_000),
    }


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("layout", list(_layouts()))
def test_layouts_stream_to_the_whole_parse_folder(
    layout: str, gz: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _layouts()[layout]
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(data, 1) if gz else data)
    folder, res = _same_both_ways(tmp_path, "t", monkeypatch, trace_path=path)
    assert folder != "error", res
    assert res["status"] == "OK" and res["events"] == len(_rich_trace()["traceEvents"])
    assert {c["name"] for c in res["categories"]} == {"sdpa_fwd"}


@pytest.mark.parametrize("layout", ["one event a line", "nested traceEvents keys and strings", "unicode escapes"])
def test_block_and_piece_boundaries_anywhere(layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of ~60 bytes read in 97- and 7-byte blocks: every cut lands inside a key, a string, an escape."""
    path = tmp_path / "t.json"
    path.write_bytes(_layouts()[layout])
    for read in (97, 7):
        monkeypatch.setattr(R, "CHUNK_BYTES", 60)
        monkeypatch.setattr(R, "READ_BYTES", read)
        monkeypatch.setattr(R, "_MAX_OUT", read)
        _same_both_ways(tmp_path, f"t{read}", monkeypatch, trace_path=path)


def test_values_the_typed_decoder_refuses_read_as_the_lenient_builder_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = _rich_trace()
    ev = doc["traceEvents"]
    ev[2]["ts"] = str(ev[2]["ts"])  # a time as a string (numpy reads "20.0" as 20.0)
    ev[3]["args"]["External id"] = 3.0  # a float id
    ev[4]["pid"] = 0.0
    ev.append({"ph": "X", "cat": "cpu_op", "name": 7, "pid": 1, "tid": 1, "ts": 3.0, "dur": True})
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps(doc).encode())
    folder, res = _same_both_ways(tmp_path, "t", monkeypatch, trace_path=path)
    assert folder != "error" and res["status"] == "OK"


def test_bad_traces_fail_both_ways_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(The streamed read may say more, e.g. which event is not valid UTF-8.)"""
    data = gzip.compress(_kineto(_rich_trace()))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    doc = _rich_trace()
    doc["traceEvents"][5]["name"] = {"a": 1}
    wrong = tmp_path / "wrong.json"
    wrong.write_bytes(json.dumps(doc).encode())
    utf = tmp_path / "utf.json"
    utf.write_bytes(json.dumps(_rich_trace()).encode().replace(b"Python id", b"Python \xff id"))
    for path, fragment in ((cut, "truncated gzip"), (wrong, "traceEvents[5].name is an object"), (utf, "UTF-8")):
        for streaming in (True, False):
            got = _analyze(tmp_path, path.name, streaming, monkeypatch, trace_path=path)
            assert got[0] == "error" and fragment in got[1] and "\n" not in got[1], got[1]


# ---- the size limit ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_uncompressed_size_limit(gz: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _kineto(_rich_trace(), pad=" " * 20_000)
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(data) if gz else data)
    monkeypatch.setenv(R.MAX_BYTES_ENV, "16K")
    with pytest.raises(TraceError) as err:
        analyze_trace(path, tmp_path / "out")
    msg = str(err.value)
    assert "16 KiB" in msg and R.MAX_BYTES_ENV in msg and str(path) in msg and "\n" not in msg
    assert not (tmp_path / "out").exists()
    monkeypatch.setenv(R.MAX_BYTES_ENV, str(len(data)))  # exactly the size: allowed
    assert analyze_trace(path, tmp_path / "out").status == "OK"


@pytest.mark.parametrize("value", ["0", "-5", "lots", "12X"])
def test_bad_limit_setting_is_one_line(value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps(_rich_trace()).encode())
    monkeypatch.setenv(R.MAX_BYTES_ENV, value)
    with pytest.raises(TraceError, match=f"{R.MAX_BYTES_ENV}=.* is invalid"):
        analyze_trace(path, tmp_path / "out")


@pytest.mark.parametrize(("value", "size"), [("1024", 1024), ("64G", 64 << 30), ("2 MiB", 2 << 20), ("3t", 3 << 40)])
def test_limit_spellings(value: str, size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(R.MAX_BYTES_ENV, value)
    assert R.max_trace_bytes() == size
    monkeypatch.delenv(R.MAX_BYTES_ENV)
    assert R.max_trace_bytes() == R.DEFAULT_MAX_BYTES == 16 << 30


def test_padding_before_the_key_is_not_kept(tmp_path: Path) -> None:
    """Megabytes of whitespace before the key and after the array: dropped as they stream by (never parsed whole),
    and the header around them still read."""
    doc = _rich_trace()
    pad = b" " * (3 << 20)
    text = b"{" + pad + b'"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],' + pad
    events = json.dumps(doc["traceEvents"]).encode()[1:]  # from the first event through the closing ']'
    text += b'"traceEvents": ' + pad + b"[" + events + pad + b', "x": 1' + pad + b"}"
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text, 1))
    rd = R.TraceReader(path)
    events = [e for chunk in rd.chunks() for e in chunk]
    assert len(events) == len(doc["traceEvents"])
    assert rd.header == {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "x": 1}


# ---- the typed decoder against the lenient builder, on random events ---------------------------------------------

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6), st.sampled_from(["1.5", "0x10", ""]),
)  # fmt: skip
_SHAPES = st.recursive(st.one_of(st.integers(0, 4096), st.text(max_size=3)), lambda x: st.lists(x, max_size=4),
                       max_leaves=12)  # fmt: skip
_NAMES = st.one_of(st.sampled_from([FLASH_OP, "aten::mm", "aten::softmax", "cudaLaunchKernel", "k", "process_name",
                                    "thread_name", "process_labels", ""]), _SCALARS)  # fmt: skip


@st.composite
def _event(draw: st.DrawFn) -> dict[str, Any]:
    typical = draw(st.booleans())  # half of them well-formed Kineto events: the fast path's own ground
    e: dict[str, Any] = {
        "ph": draw(st.sampled_from(["X", "X", "s", "f", "M", "i"]) if typical else st.one_of(_SCALARS, st.just("X"))),
        "cat": draw(st.sampled_from(["cpu_op", "cuda_runtime", "kernel", "Kernel", "gpu_memset", "python_function",
                                     "user_annotation", "gpu_user_annotation", "ac2g", "other"])),
        "name": draw(st.sampled_from([FLASH_OP, "aten::mm", "k", "process_name"]) if typical else _NAMES),
        "pid": draw(st.integers(0, 3) if typical else _SCALARS),
        "tid": draw(st.integers(0, 3) if typical else _SCALARS),
        "ts": draw(st.floats(0, 1e4) if typical else _SCALARS),
        "dur": draw(st.floats(0, 100) if typical else _SCALARS),
    }  # fmt: skip
    for key in draw(st.sets(st.sampled_from(list(e)))):
        if not typical:
            del e[key]
    if draw(st.booleans()):
        e["id"] = draw(st.integers(0, 5) if typical else _SCALARS)
    if draw(st.booleans()):
        args: dict[str, Any] = {}
        for key in draw(st.sets(st.sampled_from(["External id", "correlation", "Sequence number", "Fwd thread id",
                                                 "stream", "device", "kernel", "name", "labels", "extra"]))):
            args[key] = draw(st.integers(0, 9) if typical and key not in ("kernel", "name", "labels") else _SCALARS)
        if draw(st.booleans()):
            args.update({k: draw(_SHAPES) for k in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")})
        if draw(st.integers(0, 9)) == 0:
            args["Input Dims"] = json.loads("[" * 40 + "]" * 40)  # deeper than the shapes are kept
        e["args"] = args if typical or draw(st.booleans()) else draw(_SCALARS)
    return e


def _build(pieces: list[bytes], fast: bool) -> TraceEvents | str:
    b = EventTablesBuilder(keep_args=N.keep_args)
    decode = b.decoder()
    try:
        for piece in pieces:
            b.add(decode(piece) if fast else orjson.loads(piece))
        return b.finish()
    except TraceError as exc:
        return str(exc)


def _same_tables(a: TraceEvents | str, b: TraceEvents | str) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.names == b.names and a.threads == b.threads
    for fam in ("cpu", "rt", "py", "ann", "gpu", "flow"):
        ta, tb = getattr(a, fam), getattr(b, fam)
        assert ta.cols.keys() == tb.cols.keys()
        for k in ta.cols:
            x, y = ta.cols[k], tb.cols[k]
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), (fam, k, x, y)
    for field in ("cpu_sig", "signatures", "process_names", "process_labels", "thread_names", "n_events", "excluded",
                  "excluded_example", "bad_ids", "deep_args"):  # fmt: skip
        assert getattr(a, field) == getattr(b, field), field


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_event(), max_size=12), min_size=1, max_size=3))
def test_fast_decoder_reads_what_the_lenient_builder_reads(pieces: list[list[dict[str, Any]]]) -> None:
    texts = [json.dumps(p).encode() for p in pieces]
    fast = _build(texts, fast=True)
    lenient = _build(texts, fast=False)
    _same_tables(fast, lenient)


def test_fast_decoder_handles_a_real_mix_without_falling_back() -> None:
    """On Kineto-shaped events the typed decode is what runs (no piece handed to orjson)."""
    events = _rich_trace()["traceEvents"]
    b = EventTablesBuilder(keep_args=N.keep_args)
    piece = b.decoder()(json.dumps(events).encode())
    assert type(piece).__name__ == "FastPiece" and len(piece) == len(events)
    b.add(piece)
    ev = b.finish()
    assert len(ev.cpu) == 6 and len(ev.gpu) == 7 and len(ev.flow) == 2 and ev.process_names == {1: "python 漢字"}
    assert ev.signatures[ev.cpu_sig[0]][0] == tuple(tuple(d) for d in SDPA_ARGS["Input Dims"])
    assert math.isclose(float(ev.gpu["dur"][1]), 45.0) and np.all(ev.rt["kernel"][:3] == -1)
