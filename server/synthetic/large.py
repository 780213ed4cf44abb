"""``generate_large_trace``: a Llama-like serving trace of any size, for the ingestion benchmark.

One ProfilerStep is built once with the same builder as ``build_trace``, turned into a text template with
every per-step value (times, ids, step number) as a placeholder, and repeated with those values shifted per
step, so a million events take a few seconds.
"""

from __future__ import annotations

import gzip
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.synthetic.builder import FIRST_CORRELATION, FIRST_SEQUENCE, TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.envelope import metadata_events, span_events, to_us, trace_header
from sdpa_analyzer.server.synthetic.gpus import DEFAULT_GPU, Gpu
from sdpa_analyzer.server.synthetic.kernels import add_functor, mul_functor, silu_functor
from sdpa_analyzer.server.synthetic.ops.fillers import elementwise, linear, rmsnorm, rope
from sdpa_analyzer.server.synthetic.ops.registry import emit_forward
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE
from sdpa_analyzer.server.synthetic.units import QUANTUM_NS, cdiv
from sdpa_analyzer.server.synthetic.writer import resolve_gpu
from sdpa_analyzer.server.writers.atomic import write_bytes_atomic

_NUM = "\ue000"
_NUM_END = "\ue001"
_INS = "\ue002"
_INS_END = "\ue003"


@dataclass
class _FieldTable:
    kinds: list[str] = field(default_factory=list)
    bases: list[int] = field(default_factory=list)

    def num(self, kind: str, base: int) -> str:
        self.kinds.append(kind)
        self.bases.append(int(base))
        return f"{_NUM}{len(self.kinds) - 1}{_NUM_END}"

    def ins(self, kind: str, base: int) -> str:
        self.kinds.append(kind)
        self.bases.append(int(base))
        return f"{_INS}{len(self.kinds) - 1}{_INS_END}"


def _templatize(events: list[dict], table: _FieldTable, py_first: int) -> list[dict]:
    """Replace per-step values (times, ids, step number) with sentinels recorded in ``table``."""
    out = []
    for ev in events:
        e = dict(ev)
        e["ts"] = table.num("time", ev["ts"])
        if "dur" in ev:  # durations are the same in every step: written once, already in µs
            e["dur"] = ev["dur"] / 1000
        if e.get("cat") in ("user_annotation",) and e["name"].startswith("ProfilerStep#"):
            e["name"] = "ProfilerStep#" + table.ins("step", int(e["name"].split("#")[1]))
        if e.get("cat") == "gpu_user_annotation":
            e["name"] = "ProfilerStep#" + table.ins("step", int(e["name"].split("#")[1]))
        if e.get("ph") in ("s", "f"):
            e["id"] = table.num("corr" if e["cat"] == "ac2g" else "flow", ev["id"])
        if "args" in ev:
            args = dict(ev["args"])
            for key, kind in (("External id", "ext"), ("correlation", "corr"), ("Python id", "py"),
                              ("Ev Idx", "ev"), ("Sequence number", "seq")):
                if key in args:
                    args[key] = table.num(kind, args[key])
            parent = args.get("Python parent id")
            if parent is not None and parent >= py_first:
                args["Python parent id"] = table.num("py", parent)
            e["args"] = args
        out.append(e)
    return out


_SENTINEL = re.compile(f'"{_NUM}(\\d+){_NUM_END}"|{_INS}(\\d+){_INS_END}')


def _compile_template(events: list[dict], table: _FieldTable) -> tuple[str, list[int]]:
    """%-format string of the step's events and the field index of each placeholder, in text order."""
    text = ",".join(orjson.dumps(e).decode() for e in events).replace("%", "%%")
    order: list[int] = []

    def sub(m: re.Match[str]) -> str:
        idx = int(m.group(1) or m.group(2))
        order.append(idx)
        return "%d.%03d" if table.kinds[idx] == "time" else "%d"

    return _SENTINEL.sub(sub, text), order


def _large_step(b: TraceBuilder, gpu: Gpu, layers: int, step_no: int, attn: SyntheticAttentionCall) -> None:
    tokens, hidden = attn.batch * attn.seq_q, attn.heads_q * attn.head_dim_qk
    kv_hidden = attn.hkv * attn.head_dim_qk
    dt = attn.dtype
    with b.annotation(f"ProfilerStep#{step_no}"), b.py("serve.py(41): forward_step"), b.module("LlamaForCausalLM"), \
            b.module("LlamaModel"):
        for _ in range(layers):
            with b.module("LlamaDecoderLayer"):
                rmsnorm(b, tokens, hidden, dt)
                with b.module("LlamaAttention"):
                    linear(b, dt, tokens, hidden, hidden, b.rand_ns(20_000, 40_000))
                    linear(b, dt, tokens, hidden, kv_hidden, b.rand_ns(8_000, 14_000))
                    linear(b, dt, tokens, hidden, kv_hidden, b.rand_ns(8_000, 14_000))
                    rope(b, attn)
                    fwd = emit_forward(b, attn, 0, 0)
                    del fwd
                    linear(b, dt, tokens, hidden, hidden, b.rand_ns(20_000, 40_000))
                add = add_functor(ATEN_TYPE[dt])
                elementwise(b, "aten::add", add, 3, [1, tokens, hidden], dt, b.rand_ns(3_000, 5_000))
                rmsnorm(b, tokens, hidden, dt)
                with b.module("LlamaMLP"):
                    linear(b, dt, tokens, hidden, 4 * hidden, b.rand_ns(60_000, 90_000))
                    linear(b, dt, tokens, hidden, 4 * hidden, b.rand_ns(60_000, 90_000))
                    at = ATEN_TYPE[dt]
                    elementwise(b, "aten::silu", silu_functor(at), 2, [1, tokens, 4 * hidden], dt,
                                b.rand_ns(6_000, 9_000))
                    mul = mul_functor(at)
                    elementwise(b, "aten::mul", mul, 3, [1, tokens, 4 * hidden], dt, b.rand_ns(8_000, 12_000))
                    linear(b, dt, tokens, 4 * hidden, hidden, b.rand_ns(60_000, 90_000))
                elementwise(b, "aten::add", add, 3, [1, tokens, hidden], dt, b.rand_ns(3_000, 5_000))
        with b.py("torch/cuda/__init__.py(1040): synchronize"), b.py("<built-in function _cuda_synchronize>"):
            b.synchronize()
    b.idle(20_000, 40_000)


def generate_large_trace(
    n_events: int,
    path: Path,
    *,
    gpu_name: str = DEFAULT_GPU,
    seed: int = 0,
    layers_per_step: int = 32,
    attention: SyntheticAttentionCall | None = None,
) -> int:
    """Write a Llama-like serving trace of at least ``n_events`` events; return the number written.

    One ProfilerStep (``layers_per_step`` decoder layers: RMSNorm, QKV/O/MLP GEMMs, RoPE, one attention
    call, residual adds) is built with the same machinery as build_trace, then repeated as text with
    every time and id shifted per step, so a million events take a few seconds. ``.gz`` paths are
    gzip-compressed (level 1).
    """
    if isinstance(n_events, bool) or not isinstance(n_events, int) or n_events < 1:
        raise InputError(f"n_events={n_events!r} is invalid: expected an integer >= 1")
    if isinstance(layers_per_step, bool) or not isinstance(layers_per_step, int) or layers_per_step < 1:
        raise InputError(f"layers_per_step={layers_per_step!r} is invalid: expected an integer >= 1")
    attn = attention or SyntheticAttentionCall(flavour="aten_flash", batch=1, heads_q=32, heads_kv=8, seq_q=1024,
                                               head_dim_qk=128, causal=True, scale=128 ** -0.5, kernel_us=70.0)
    if attn.with_backward:
        raise InputError("attention.with_backward=True is invalid for generate_large_trace: expected an inference call")
    gpu = resolve_gpu(gpu_name, [attn])
    b = TraceBuilder(gpu, random.Random(seed))
    with b.py("serve.py(120): <module>") as root0, b.py("serve.py(88): main") as root1:
        py_first = b.next_py
        step_start = b.now()
        _large_step(b, gpu, layers_per_step, 1, attn)
        step_end = max(b.now(), b.gpu_free)
    roots = [root0, root1]
    b.pys = [p for p in b.pys if p["args"]["Python id"] >= py_first]
    step_events = b.ordered_events(first_ev_idx=len(roots))
    table = _FieldTable()
    template, order = _compile_template(_templatize(step_events, table, py_first), table)
    per_step = len(step_events)
    fixed = 20 + len(roots)  # root frames, metadata, span and instant events
    n_steps = max(1, cdiv(max(0, n_events - fixed), per_step))
    period = step_end - step_start + QUANTUM_NS * 200
    strides = {"time": period, "ext": b.next_ext - 1, "corr": b.next_corr - FIRST_CORRELATION,
               "py": b.next_py - py_first, "ev": _ev_count(step_events), "seq": b.next_seq - FIRST_SEQUENCE,
               "flow": b.next_flow - 1, "step": 1}
    bases = np.asarray(table.bases, dtype=np.int64)
    kinds = table.kinds
    stride_vec = np.asarray([strides[k] for k in kinds], dtype=np.int64)
    cols_field = np.asarray(order, dtype=np.int64)
    is_time = np.asarray([kinds[i] == "time" for i in order])
    values = bases[cols_field][None, :] + np.arange(n_steps, dtype=np.int64)[:, None] * stride_vec[cols_field][None, :]
    # time placeholders take two numbers (µs and the ns remainder); interleave them in text order
    width = len(order) + int(is_time.sum())
    flat = np.empty((n_steps, width), dtype=np.int64)
    pos = np.cumsum(np.where(is_time, 2, 1)) - np.where(is_time, 2, 1)
    flat[:, pos] = np.where(is_time[None, :], values // 1000, values)
    flat[:, pos[is_time] + 1] = values[:, is_time] % 1000
    template_bytes = template.encode()
    chunks = [template_bytes % tuple(row) for row in flat.tolist()]
    total_end = step_start + n_steps * period
    for r in roots:
        r["dur"] = total_end + QUANTUM_NS * 40 - r["ts"]
    head_events = [dict(r) for r in roots]
    for i, r in enumerate(head_events):
        r["args"] = {**r["args"], "Ev Idx": i}
    tail = metadata_events(b, step_start - 125_000, False)
    span, instants = span_events(min(r["ts"] for r in roots) - 150_000, total_end + 50_000)
    tail += span + instants
    to_us(head_events)
    to_us(tail)
    header = trace_header(gpu, seed, "large", None)
    header["traceEvents"] = []
    header["traceName"] = f"synthetic_large_{n_steps}steps.json"
    head_text = orjson.dumps(header).decode()
    cut = head_text.index('"traceEvents":[]') + len('"traceEvents":[')
    data = b"".join([head_text[:cut].encode(), b",".join(orjson.dumps(e) for e in head_events), b",",
                     b",".join(chunks), b",", b",".join(orjson.dumps(e) for e in tail), head_text[cut:].encode()])
    path = Path(path)
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=1, mtime=0)
    write_bytes_atomic(path, data)
    return len(head_events) + n_steps * per_step + len(tail)


def _ev_count(events: list[dict]) -> int:
    """Number of events carrying an ``Ev Idx`` (CPU ops and python frames)."""
    return sum(1 for e in events if "Ev Idx" in e.get("args", {}))
