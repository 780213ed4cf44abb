"""``build_trace`` / ``build_trace_with_truth``: one profiled step holding the given attention calls, and
``write_trace``: the Kineto JSON written atomically, plain or gzip.

Conventions of every synthetic trace: the event phases, categories, argument names and slot layouts of the
real H100 / MI300X / B200 traces; ``python_function`` frames with ``nn.Module`` frames, a ``ProfilerStep#N``
annotation, runtime launches linked to kernels by ``correlation`` and ``ac2g`` flows, autograd backward nodes
on the autograd thread linked to the forward through ``Sequence number`` (and ``fwdbwd`` flows), and
``deviceProperties``. Time is kept as integer nanoseconds and written as microseconds (``ns / 1000``). Every
time the writer picks itself is a multiple of 125 ns, so those values are exact binary floats; kernel
durations are the spec's values (``kernel_us`` etc.), exact when they are multiples of 0.125 µs and always
recoverable as ``round(value * 1000)`` ns.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Sequence
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Any

import orjson

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.synthetic.builder import PTR, TraceBuilder
from sdpa_analyzer.server.synthetic.calls import AMD_ONLY, NVIDIA_ONLY, SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.envelope import metadata_events, span_events, to_us, trace_header
from sdpa_analyzer.server.synthetic.gpus import DEFAULT_GPU, Gpu, lookup_gpu
from sdpa_analyzer.server.synthetic.ops.common import ForwardPass, empty, fill_zero_int
from sdpa_analyzer.server.synthetic.ops.fillers import filler
from sdpa_analyzer.server.synthetic.ops.registry import emit_backward, emit_forward, step_annotation
from sdpa_analyzer.server.synthetic.slots import N, S, T
from sdpa_analyzer.server.synthetic.truth import SyntheticTrace
from sdpa_analyzer.server.writers.atomic import write_bytes_atomic


def resolve_gpu(gpu_name: str | None, calls: Sequence[SyntheticAttentionCall]) -> Gpu:
    """The one GPU of a trace: ``gpu_name``, else the calls' common ``gpu``, else DEFAULT_GPU."""
    named = {c.gpu for c in calls if c.gpu is not None}
    if gpu_name is None:
        if len(named) > 1:
            raise InputError(f"calls name several GPUs ({', '.join(sorted(named))}): one trace holds one GPU; "
                             "pass gpu_name or make the calls agree")
        gpu_name = named.pop() if named else DEFAULT_GPU
    elif named - {gpu_name}:
        raise InputError(f"gpu_name={gpu_name!r} disagrees with the calls' gpu {sorted(named)}: make them agree")
    gpu = lookup_gpu(gpu_name)
    for i, c in enumerate(calls):
        if c.flavour == "aten_cudnn" and gpu.amd:
            raise InputError(f"calls[{i}].flavour='aten_cudnn' needs an NVIDIA GPU, not {gpu.name!r}")
        if c.flavour in AMD_ONLY and not gpu.amd:
            raise InputError(f"calls[{i}].flavour={c.flavour!r} runs aiter's ROCm kernels: it needs an AMD GPU, "
                             f"not {gpu.name!r}")
        if c.flavour in NVIDIA_ONLY and gpu.amd:
            raise InputError(f"calls[{i}].flavour={c.flavour!r} runs CUDA kernels: it needs an NVIDIA GPU, "
                             f"not {gpu.name!r}")
    return gpu


def _distribute(n: int, slots: int) -> list[int]:
    """n items spread as evenly as possible over slots (earlier slots get the remainder last)."""
    return [(n * (i + 1)) // slots - (n * i) // slots for i in range(slots)]


GRAPH_MODES = (None, "capture", "replay", "capture+replay")


def build_trace_with_truth(
    calls: Sequence[SyntheticAttentionCall],
    *,
    gpu_name: str | None = None,
    extra_filler_kernels: int = 0,
    seed: int = 0,
    with_profiler_step: bool = True,
    step: int = 1,
    with_memcpy: bool = True,
    distributed_info: dict | None = None,
    graph: str | None = None,
    replays: int = 1,
    capture_label: str | None = None,
) -> SyntheticTrace:
    """Build one profiled step; return the Kineto dict and what each attention instance contains.

    ``graph``: None, the calls run eagerly; "capture", they are recorded into a CUDA/HIP graph (a serving profiler's
    capture trace: launches, no kernels; the range is named ``capture_label``, e.g. ``capture_32_DECODE``); "replay",
    the step replays that graph ``replays`` times (kernels only, no CPU op per call); "capture+replay", both in one
    trace (a compiled model capturing and replaying in the profiled window). Graph modes are inference only."""
    if graph not in GRAPH_MODES:
        raise InputError(f"graph={graph!r} is invalid: expected one of {', '.join(map(str, GRAPH_MODES))}")
    if graph is not None and any(c.with_backward for c in calls):
        raise InputError(f"graph={graph!r} with a backward call: graphs are modeled for inference only")
    if isinstance(replays, bool) or not isinstance(replays, int) or replays < 1:
        raise InputError(f"replays={replays!r} is invalid: expected an integer >= 1")
    calls = list(calls)
    for i, c in enumerate(calls):
        if not isinstance(c, SyntheticAttentionCall):
            raise InputError(f"calls[{i}] is a {type(c).__name__}: expected SyntheticAttentionCall")
    if isinstance(extra_filler_kernels, bool) or not isinstance(extra_filler_kernels, int) or extra_filler_kernels < 0:
        raise InputError(f"extra_filler_kernels={extra_filler_kernels!r} is invalid: expected an integer >= 0")
    gpu = resolve_gpu(gpu_name, calls)
    b = TraceBuilder(gpu, random.Random(seed))
    slots = [(ci, ri) for ci, c in enumerate(calls) for ri in range(c.repeat)]
    fillers = _distribute(extra_filler_kernels, len(slots) + 1)
    forwards: list[ForwardPass] = []
    with b.py("train.py(112): <module>"), b.py("train.py(97): main"):
        step_scope = b.annotation(f"ProfilerStep#{step}") if with_profiler_step else nullcontext()
        engine_step = step_annotation(calls)
        batch_scope = b.annotation(engine_step) if engine_step is not None else nullcontext()
        if graph in ("capture", "capture+replay"):
            label = capture_label or "capture_graph"
            with b.annotation(label):
                fill_zero_int(b, 4_000)  # the real capture traces zero a buffer before capturing: their one kernel
                with b.capture():
                    _emit_calls(b, calls, [0] * (sum(c.repeat for c in calls) + 1), [])
        if graph == "capture":
            step_scope, batch_scope = nullcontext(), nullcontext()
        with step_scope, b.py("train.py(64): run_step"), batch_scope:
            if with_memcpy:
                with b.py(f"<built-in method to of Tensor object at {PTR}>"), \
                        b.op("aten::to", [T([8, 2048], "long int"), N(), N(), N(), S(False), S(False), N()]), \
                        b.op("aten::_to_copy", [T([8, 2048], "long int"), S(4), N(), N(), N(), S(False), N()]):
                    empty(b, [8, 2048], 4)
                    with b.op("aten::copy_", [T([8, 2048], "long int"), T([8, 2048], "long int"), S(False)]):
                        b.memcpy_h2d(8 * 2048 * 8)
            if graph in ("replay", "capture+replay"):
                for _ in range(replays):
                    with b.replay():
                        _emit_calls(b, calls, fillers, forwards)
            elif graph is None:
                _emit_calls(b, calls, fillers, forwards)
            with_bwd = [f for f in forwards if f.call.with_backward]
            if with_bwd:
                with b.py("torch/_tensor.py(648): backward"), b.py("torch/autograd/__init__.py(353): backward"), \
                        b.py("torch/autograd/graph.py(824): _engine_run_backward"), \
                        b.py(f"<built-in method run_backward of torch._C._EngineBase object at {PTR}>"), \
                        b.thread(b.autograd_tid):
                    for fwd in reversed(with_bwd):
                        emit_backward(b, fwd)
                        b.idle(2_000, 12_000)
            with b.py("torch/cuda/__init__.py(1040): synchronize"), b.py("<built-in function _cuda_synchronize>"):
                b.synchronize()
    events = b.ordered_events()
    start, end = b.span()
    span, instants = span_events(start - 150_000, end + 50_000)
    events += metadata_events(b, start - 125_000, bool(with_bwd)) + span + instants
    to_us(events)
    trace = trace_header(gpu, seed, "synthetic", distributed_info)
    trace["traceEvents"] = events
    trace["traceName"] = f"synthetic_seed{seed}.json"
    return SyntheticTrace(trace, b.instances)


def _emit_calls(b: TraceBuilder, calls: Sequence[SyntheticAttentionCall], fillers: list[int],
                forwards: list[ForwardPass]) -> None:
    """Every call's repeats inside their model frames, with the filler kernels spread between them."""
    filler_kind = 0
    slot = 0
    for ci, c in enumerate(calls):
        top, leaf = c.module_names[:-2], c.module_names[-2:]
        with ExitStack() as model_frames:
            for m in top:
                model_frames.enter_context(b.module(m))
            for ri in range(c.repeat):
                for _ in range(fillers[slot]):
                    filler(b, filler_kind, c.dtype, c.seq_q * c.batch, c.heads_q * c.head_dim_qk)
                    filler_kind += 1
                slot += 1
                with ExitStack() as layer_frames:
                    for m in leaf:
                        layer_frames.enter_context(b.module(m))
                    forwards.append(emit_forward(b, c, ci, ri))
    for _ in range(fillers[-1]):
        filler(b, filler_kind, calls[0].dtype if calls else "bf16", 2048, 4096)
        filler_kind += 1


def build_trace(
    calls: Sequence[SyntheticAttentionCall],
    *,
    gpu_name: str | None = None,
    extra_filler_kernels: int = 0,
    seed: int = 0,
    with_profiler_step: bool = True,
    step: int = 1,
    with_memcpy: bool = True,
    distributed_info: dict | None = None,
) -> dict[str, Any]:
    """A realistic Kineto trace dict holding ``calls`` (see the module docstring for the conventions)."""
    return build_trace_with_truth(
        calls, gpu_name=gpu_name, extra_filler_kernels=extra_filler_kernels, seed=seed,
        with_profiler_step=with_profiler_step, step=step, with_memcpy=with_memcpy,
        distributed_info=distributed_info,
    ).trace


def write_trace(trace: dict[str, Any], path: Path, gz: bool | None = None) -> Path:
    """Write atomically; gzip when ``gz`` is True, or when it is None and the name ends in ``.gz``."""
    path = Path(path)
    data = orjson.dumps(trace)
    if gz if gz is not None else path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    return write_bytes_atomic(path, data)


def write_serving_run(
    folder: Path,
    calls: Sequence[SyntheticAttentionCall],
    *,
    gpu_name: str | None = None,
    seed: int = 0,
    mode: str = "FULL",
    replays: int = 1,
) -> tuple[Path, Path, SyntheticTrace, SyntheticTrace]:
    """A serving profiler's run folder: ``graph_execution.json.gz`` (the step replaying the graph) and
    ``capture_traces/`` (``execution_details.json`` and the capture trace, ``bs_<batch>_rank0.json.gz``). Returns the
    replay path, the capture folder and both traces' ground truth."""
    calls = list(calls)
    if not calls:
        raise InputError("write_serving_run needs at least one call")
    batch = calls[0].graph_batch or sum(calls[0].q_lens)
    replay = build_trace_with_truth(calls, gpu_name=gpu_name, seed=seed, graph="replay", replays=replays)
    capture = build_trace_with_truth(calls, gpu_name=gpu_name, seed=seed + 1, graph="capture",
                                     capture_label=f"capture_{batch}_{mode}", with_profiler_step=True)
    folder = Path(folder)
    cap_dir = folder / "capture_traces"
    name = f"bs_{batch}_rank0.json.gz"
    write_trace(capture.trace, cap_dir / name)
    write_bytes_atomic(cap_dir / "execution_details.json",
                       orjson.dumps([{"file": name, "batch_size": batch, "mode": mode}], option=orjson.OPT_INDENT_2))
    replay_path = write_trace(replay.trace, folder / "graph_execution.json.gz")
    return replay_path, cap_dir, replay, capture
