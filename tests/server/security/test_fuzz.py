"""Fuzzing the three parsers that take outside input: the trace reader (analyze_trace), the ops-CSV loader
(load_category_data, compute_roofline) and the findings validator (with its metrics JSON).

Hypothesis mutates valid seeds (below): values replaced by hostile ones, bytes cut, spliced and
repeated. Every call must end in an accepted result (checked against its schema, no NaN or infinity in any
number: server.tools.base.checked_result) or one of our one-line errors, within CALL_SECONDS. Derandomized,
so CI runs the same cases every time (about a minute in all); SDPA_FUZZ_SCALE=50 runs a longer campaign,
and `-s` prints the tallies.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdpa_analyzer.server.folder.cache import clear as clear_load_cache
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.cache import clear as clear_score_cache
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import FINDINGS_CORPUS, FLASH_ROW, OPS_HEADER

# Scale for a long campaign (SDPA_FUZZ_SCALE=50 runs 50x the examples); CI runs the default, about a minute.
SCALE = float(os.environ.get("SDPA_FUZZ_SCALE", "1"))
CALL_SECONDS = 10.0  # any one call on these small inputs; the former quadratic paths took 46-163 s


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        derandomize=True,  # the same cases on every run: a failure in CI reproduces locally
        deadline=None,  # time is bounded per call below, not by hypothesis' per-example deadline
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@dataclass
class Tally:
    """What a fuzz target met: cases, accepted results, our errors, crashes (internal errors) and hangs."""

    cases: int = 0
    accepted: int = 0
    refused: int = 0
    crashes: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    slowest: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)  # refusals by their first words

    def line(self, name: str) -> str:
        return (
            f"{name}: {self.cases} cases, {self.accepted} accepted, {self.refused} refused with our error, "
            f"{len(self.crashes)} crashes, {len(self.hangs)} hangs, slowest {self.slowest:.2f} s"
        )


TALLIES: dict[str, Tally] = {}


def checked_call(target: str, roots: DataRoots, tool: str, **args: Any) -> Any:
    """Run one tool call: its result, or None when it failed with one of our one-line errors. A crash (an
    internal error), a message that is not one line of at most 300 characters, or a call over CALL_SECONDS
    fails the test."""
    tally = TALLIES.setdefault(target, Tally())
    tally.cases += 1
    start = time.process_time()  # CPU time: other processes on a loaded machine do not make a hang
    try:
        result = call(tool, roots, **args)
    except ToolFailure as exc:
        elapsed = time.process_time() - start
        tally.slowest = max(tally.slowest, elapsed)
        text = str(exc)
        if exc.internal:
            tally.crashes.append(text)
            raise AssertionError(f"{tool} crashed: {text}") from None
        assert "\n" not in text and 0 < len(text) <= 300, f"{tool} error is not one short line: {text!r}"
        assert elapsed < CALL_SECONDS, f"{tool} took {elapsed:.1f} s to refuse its input"
        tally.refused += 1
        key = " ".join(text.split(": ", 1)[-1].split()[:6])
        tally.reasons[key] = tally.reasons.get(key, 0) + 1
        return None
    elapsed = time.process_time() - start
    tally.slowest = max(tally.slowest, elapsed)
    if elapsed >= CALL_SECONDS:
        tally.hangs.append(f"{tool} {elapsed:.1f} s")
        raise AssertionError(f"{tool} took {elapsed:.1f} s")
    tally.accepted += 1
    return result


# ---- values -----------------------------------------------------------------------------------------
HOSTILE_TEXT = [
    "}]", "},{", '"', "\\", "[[[[[[", "]]]]", "nan", "NaN", "inf", "-inf", "None", "null", "True", "1e400",
    "9" * 400, str(2**64), str(-(2**63) - 1), "np.float64(", "np.float64(1.5)", "__import__('os')", "()",
    "((", "{'a': ", "'", "<!--", "-->", "|", "\n", "\x00", "é", "\u2028", "\ud7ff", "" ,
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e30, -900.0, 1e300, 5e-324, -0.0]),
    st.text(max_size=12),
    st.sampled_from(HOSTILE_TEXT),
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


def deep(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def dumps(value: Any) -> str:
    """JSON text, NaN/Infinity written as Python's json writes them (tokens orjson refuses), never failing on
    a non-string key or a deep nest."""
    try:
        return json.dumps(value, allow_nan=True, default=repr)
    except (ValueError, RecursionError):
        return repr(value)


@st.composite
def byte_mutations(draw: Any, data: bytes) -> bytes:
    """Cut, splice, repeat or overwrite pieces of serialized bytes."""
    out = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["cut", "insert", "repeat", "overwrite", "deep"]))
        pos = draw(st.integers(0, max(0, len(out) - 1)))
        if op == "cut":
            del out[pos:]
        elif op == "insert":
            out[pos:pos] = draw(st.sampled_from(HOSTILE_TEXT)).encode("utf-8", "surrogatepass")
        elif op == "repeat":
            piece = draw(st.sampled_from(["}]", "},{", '"', "[", "{", "<!--", ",", "9"])).encode()
            out[pos:pos] = piece * draw(st.integers(1, 20000))
        elif op == "overwrite":
            out[pos : pos + 1] = bytes([draw(st.integers(0, 255))])
        else:
            out[pos:pos] = deep(draw(st.integers(30, 3000))).encode()
    return bytes(out)


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path


CORPUS = FINDINGS_CORPUS
CATEGORIES = ("sdpa_fwd", "sdpa_bwd", "inferenceattention")


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def fresh(box: Path, name: str) -> Path:
    """An empty folder for one case (the caches forget the previous case's files)."""
    clear_load_cache()
    clear_score_cache()
    path = box / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# ---- trace reader and analyze -----------------------------------------------------------------------
def _seed_trace() -> dict[str, Any]:
    calls = [
        SyntheticAttentionCall(flavour="aten_flash", batch=2, heads_q=8, seq_q=128, head_dim_qk=64, causal=True,
                               kernel_us=40.0, with_backward=True),
        SyntheticAttentionCall(flavour="flash_attn", batch=1, heads_q=8, heads_kv=2, seq_q=64, head_dim_qk=64,
                               kernel_us=20.0),
    ]  # fmt: skip
    return build_trace(calls, gpu_name="NVIDIA H100 80GB HBM3")


SEED_TRACE = _seed_trace()
HOSTILE_NUMBERS = [2**63, 2**64, -(2**63) - 1, 10**30, 1e30, 1e300, -1e300, -900.0, 0.0, "bad", "oops", None,
                   [], {}, True, "1e400", 1.5, -1]  # fmt: skip
EVENT_KEYS = ["ts", "dur", "ph", "cat", "name", "pid", "tid", "id", "args"]
ARG_KEYS = ["External id", "correlation", "Sequence number", "Fwd thread id", "Input Dims", "Input type",
            "Concrete Inputs", "Input Strides", "stream", "device"]  # fmt: skip


@st.composite
def mutated_traces(draw: Any) -> bytes:
    doc = json.loads(json.dumps(SEED_TRACE))
    events = doc["traceEvents"]
    for _ in range(draw(st.integers(1, 6))):
        e = events[draw(st.integers(0, len(events) - 1))]
        if draw(st.booleans()) and isinstance(e.get("args"), dict):
            e["args"][draw(st.sampled_from(ARG_KEYS))] = draw(json_values)
        else:
            e[draw(st.sampled_from(EVENT_KEYS))] = draw(json_values)
    for _ in range(draw(st.integers(0, 3))):  # times and ids, the fields every step computes with
        e = events[draw(st.integers(0, len(events) - 1))]
        key = draw(st.sampled_from(["ts", "dur", "External id", "correlation", "Sequence number", "id"]))
        target = e if key in ("ts", "dur", "id") or not isinstance(e.get("args"), dict) else e["args"]
        target[key] = draw(st.sampled_from(HOSTILE_NUMBERS))
    if draw(st.integers(0, 9)) == 0:  # a shape argument nested far deeper than any real one
        e = next(x for x in events if isinstance(x.get("args"), dict) and "Input Dims" in x["args"])
        e["args"]["Input Dims"] = "DEEP"
    if draw(st.integers(0, 9)) == 0:
        doc[draw(st.sampled_from(["deviceProperties", "traceName", "zzz"]))] = draw(json_values)
    data = dumps(doc).replace('"DEEP"', deep(draw(st.integers(33, 1500)))).encode("utf-8", "surrogatepass")
    return draw(byte_mutations(data)) if draw(st.integers(0, 2)) == 0 else data


@pytest.mark.slow
@given(data=mutated_traces(), gz=st.booleans())
@fuzz_settings(200)
def test_fuzz_trace_reader_and_analyze(box: Path, data: bytes, gz: bool) -> None:
    import gzip

    case = fresh(box, "trace")
    trace = write(case / ("t.json.gz" if gz else "t.json"), gzip.compress(data, mtime=0) if gz else data)
    roots = DataRoots([case])
    res = checked_call("trace", roots, "analyze_trace", trace_path=str(trace), output_dir="out")
    if res is None:
        assert not (case / "out").exists(), "a refused trace wrote something"
        return
    for cat in CATEGORIES:  # what analyze wrote, its own loader must read
        loaded = checked_call("trace", roots, "load_category_data", output_dir="out", category=cat)
        assert loaded is not None, f"analyze wrote a {cat} folder its loader refuses"
        assert loaded.status == ("OK" if cat in {c.name for c in res.categories} else "NO_DATA")


# ---- ops CSV loader and the roofline ----------------------------------------------------------------
SEED_ROWS = [
    FLASH_ROW,
    FLASH_ROW.replace("'0.', 'True'", "'0.', 'False'").replace("1024, 64", "333, 128"),
]
HEADER = next(csv.reader([OPS_HEADER]))
_DIMS = "(({b}, {h}, {n}, {d}), ({b}, {h}, {n}, {d}), ({b}, {h}, {n}, {d}), (), (), (), ())"
NEAR_VALID = {
    "Input Dims": [_DIMS.format(b=b, h=h, n=n, d=d) for b, h, n, d in (
        (2**40, 8, 1024, 64), (2, 8, 2**33, 64), (1, 2**31, 128, 64), (2, 8, 1, 64), (0, 8, 16, 64),
        (-2, 8, 16, 64), (10**19, 1, 1, 1), (3, 7, 5, 3),
    )] + ["((2, 8, 64, 64), (2, 2, 64, 64), (2, 2, 64, 64), (), (), (), ())", "((1, 2), (3,))", "()"],
    "Concrete Inputs": ["('', '', '', '0.', 'None', 'False', '0.125')", "('', '', '', '0.', 'nan', 'False', '0.125')",
                        "('', '', '', '0.9', 'True', 'False', 'inf')", "('', '', '', '1.5', 'True', 'False', '')",
                        "('', '', '', '0.', 'True', 'True', '0.125')", "()"],
    "Input type": ["('c10::Half', 'c10::Half', 'c10::Half', 'Scalar', 'Scalar', 'Scalar', 'Scalar')",
                   "('float', 'float', 'float')", "('c10::Float8_e4m3fn',) * 3", "('x',)"],
    "operation_count": ["1", "0", "-3", "1e30", "2.5", str(2**63), "nan"],
    "Kernel Time (µs)_sum": ["0", "1e-300", "1e300", "-1", "inf", "nan", "5"],
    "Kernel Time (µs)_mean": ["0", "1e300", "-1", "nan", ""],
}  # fmt: skip


@st.composite
def mutated_csvs(draw: Any) -> bytes:
    rows = [next(csv.reader([r])) for r in SEED_ROWS]
    for _ in range(draw(st.integers(1, 3))):
        row = rows[draw(st.integers(0, len(rows) - 1))]
        col = draw(st.integers(0, len(HEADER) - 1))
        kind = draw(st.integers(0, 5))
        if kind == 0:  # a plausible cell with one number or slot changed: the roofline then runs on it
            row[col] = draw(st.sampled_from(NEAR_VALID.get(HEADER[col], ["0", "-1", "nan", ""])))
        elif kind == 1:
            row[col] = deep(draw(st.integers(10, 2000)), "(", ")")
        elif kind == 2:
            value = draw(json_values)
            row[col] = repr(value) if not isinstance(value, str) else value  # a Python-literal cell
        else:
            row[col] = dumps(draw(json_values))
    if draw(st.integers(0, 11)) == 0:
        rows[0] += ["x"] * draw(st.integers(1, 5000))  # more fields than the header
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(HEADER)
    writer.writerows(rows)
    data = buf.getvalue().encode("utf-8", "surrogatepass")
    return draw(byte_mutations(data)) if draw(st.integers(0, 2)) == 0 else data


META_KEYS = ["platform", "platform", "gpu_utilization", "trace_path", "trace_path", "max_achievable_tflops",
             "peak_hbm_bw_tbs", "sdpa_analyzer_run_id"]  # fmt: skip


@st.composite
def mutated_metadata(draw: Any) -> bytes:
    meta: dict[str, Any] = {"platform": "H100", "category": "SDPA_fwd", "category_name": "sdpa_fwd",
                            "gpu_utilization": {"total_time_ms": 10.0}}  # fmt: skip
    if draw(st.integers(0, 2)) == 0:
        for _ in range(draw(st.integers(1, 3))):
            key = draw(st.sampled_from(META_KEYS))
            meta[key] = draw(json_values)
    if draw(st.integers(0, 3)) == 0:
        meta["gpu_utilization"] = {"total_time_ms": draw(json_values)}
    return dumps(meta).encode("utf-8", "surrogatepass")


@pytest.mark.slow
@given(ops=mutated_csvs(), meta=mutated_metadata(), arch=st.sampled_from([None, "h100-sxm"]))
@fuzz_settings(250)
def test_fuzz_csv_loader_and_roofline(box: Path, ops: bytes, meta: bytes, arch: str | None) -> None:
    case = fresh(box, "csv")
    write(case / "f" / "category_data" / "sdpa_fwd_ops.csv", ops)
    write(case / "f" / "metadata" / "sdpa_fwd_metadata.json", meta)
    roots = DataRoots([case])
    loaded = checked_call("csv", roots, "load_category_data", output_dir="f", category="sdpa_fwd")
    roofline = checked_call("csv", roots, "compute_roofline", output_dir="f", category="sdpa_fwd", arch=arch)
    if loaded is None:
        assert roofline is None, "compute_roofline accepted a category load_category_data refuses"
    for row in roofline.rows if roofline is not None else []:  # numbers are numbers or absent, never NaN
        for name in ("flops_useful", "bytes_compulsory", "ideal_us", "efficiency_pct", "time_ms"):
            value = getattr(row, name)
            assert value is None or (value == value and abs(value) != float("inf")), (name, value)
        if row.flops_useful is not None:
            assert row.flops_useful > 0 and row.ideal_us is not None and row.ideal_us > 0


# ---- findings validator -----------------------------------------------------------------------------
FINDINGS_LINES = [
    "# SDPA findings", "## Recommendations", "## Detailed Analysis", "### P1: Low efficiency (PyTorch Native)",
    "### P2: x", "**Insight**: x", "**Action**: y", "**Impact**: impact_score: 1.23",
    "<!-- impact-begin kind=p_item low=1.0 mid=1.5 high=2.0 -->", "<!-- impact-end -->",
    "<!-- reasoning-candidate tier=compute rank=1 -->", "**Impact estimate:**",
    "<!-- impact-begin kind=detail_estimate low=1 high=2 -->", "- Low end impact_score: 1",
    "- High end impact_score: 2",
    "| Op | Args | Time (ms) |", "|---|---|---|", "| a | b | 1.0 |", "```", "> **Warning — estimated:** x",
    "{{FILL: prose}}", "No SDPA operations found in trace", "Status: ERROR", "",
]  # fmt: skip
CORPUS_FILES = sorted((CORPUS / "valid").glob("*.md")) + sorted((CORPUS / "broken").glob("*.md"))
METRICS = [None, *sorted((CORPUS / "metrics").glob("*.json"))]


@st.composite
def findings_texts(draw: Any) -> str:
    if draw(st.booleans()):
        lines = CORPUS_FILES[draw(st.integers(0, len(CORPUS_FILES) - 1))].read_text().splitlines()
    else:
        lines = []
    for _ in range(draw(st.integers(0, 12))):
        piece = draw(st.one_of(st.sampled_from(FINDINGS_LINES), st.text(max_size=40), st.sampled_from(
            ["<!--" * 3000, "# " + " " * 5000 + "x", "### P1: a" + " " * 5000 + "b", "a" * 20000 + "=",
             "{{FILL:" * 2000, "<!-- impact-begin " * 2000, "|" * 5000]
        )))  # fmt: skip
        lines.insert(draw(st.integers(0, len(lines))), piece)
    return "\n".join(lines)


@st.composite
def metrics_files(draw: Any) -> bytes | None:
    source = METRICS[draw(st.integers(0, len(METRICS) - 1))]
    if source is None:
        return None
    data = source.read_bytes()
    if draw(st.integers(0, 2)) == 0:
        doc = json.loads(data)
        for _ in range(draw(st.integers(1, 3))):
            target: Any = doc
            path = st.sampled_from(["category_findings", "operations", "members", 0, 1, "rank", "impact_score",
                                    "library", "efficiency", "args"])  # fmt: skip
            for key in draw(st.lists(path, max_size=3)):
                if isinstance(target, dict) and key in target and isinstance(target[key], dict | list):
                    target = target[key]
                elif isinstance(target, list) and isinstance(key, int) and key < len(target):
                    target = target[key]
            if isinstance(target, dict):
                target[draw(st.sampled_from(["rank", "status", "category_findings", "members", "operations",
                                             "impact_score", "name", "x"]))] = draw(json_values)  # fmt: skip
            elif isinstance(target, list) and target:
                target[0] = draw(json_values)
        data = dumps(doc).encode("utf-8", "surrogatepass")
    return draw(byte_mutations(data)) if draw(st.integers(0, 3)) == 0 else data


@pytest.mark.slow
@given(text=findings_texts(), metrics=metrics_files(), tier=st.sampled_from(["compute", "system"]))
@fuzz_settings(500)
def test_fuzz_findings_validator(box: Path, text: str, metrics: bytes | None, tier: str) -> None:
    case = fresh(box, "findings")
    findings = write(case / "out" / "category_findings" / "sdpa_fwd_findings.md", text)
    if metrics is not None:
        write(case / "out" / "category_data" / "sdpa_fwd_metrics.json", metrics)
    report = checked_call("findings", DataRoots([case]), "validate_findings", findings_path=str(findings), tier=tier)
    if report is not None:
        for item in report.errors + report.warnings:
            assert "\n" not in item.message and len(item.message) <= 300, item.message
            assert item.line is None or 1 <= item.line <= len(text.splitlines()) + 1  # +1: "add it at the end"


@pytest.mark.slow
def test_fuzz_tallies() -> None:
    """The campaign's figures (printed with -s): every target ran its cases, with no crash and no hang."""
    for name, tally in sorted(TALLIES.items()):
        print(tally.line(name))
        for reason, count in sorted(tally.reasons.items(), key=lambda kv: -kv[1])[:3]:
            print(f"    refused {count}x: {reason} ...")
        assert tally.cases and not tally.crashes and not tally.hangs

