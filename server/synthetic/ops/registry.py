"""Which emitter writes each flavour's forward and backward op tree, and which serving-engine step range
a flavour's trace records.

Adding a flavour: its name (and validation) in ``server.synthetic.calls.FLAVOURS``, a forward (and, unless
it is inference-only, a backward) function in its family's module, and one entry in ``EMITTERS``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sdpa_analyzer.server.synthetic.builder import TraceBuilder
from sdpa_analyzer.server.synthetic.calls import FLAVOURS, SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.ops import aiter, flash_attn, mla, sage, sdpa, sglang, unfused, vllm
from sdpa_analyzer.server.synthetic.ops.common import ForwardPass

ForwardEmitter = Callable[[TraceBuilder, SyntheticAttentionCall, ForwardPass], None]
BackwardEmitter = Callable[[TraceBuilder, ForwardPass], None]
StepAnnotation = Callable[[SyntheticAttentionCall], str]


@dataclass(frozen=True)
class FlavourEmitters:
    """How one flavour is written: its forward and backward op trees, and its engine step range if any."""

    forward: ForwardEmitter
    backward: BackwardEmitter | None  # None: inference only (the spec rejects with_backward=True)
    # the name of the record_function range a serving engine opens around each step (vLLM's execute_...)
    step_annotation: StepAnnotation | None = None


EMITTERS: dict[str, FlavourEmitters] = {
    "aten_flash": FlavourEmitters(sdpa.forward, sdpa.backward),
    "aten_efficient": FlavourEmitters(sdpa.forward, sdpa.backward),
    "aten_cudnn": FlavourEmitters(sdpa.forward, sdpa.backward),
    "flash_attn": FlavourEmitters(flash_attn.forward, flash_attn.backward),
    "flash_attn_varlen": FlavourEmitters(flash_attn.forward, flash_attn.backward),
    "unfused": FlavourEmitters(unfused.forward, unfused.backward),
    "vllm_paged": FlavourEmitters(vllm.forward, None, vllm.batch_annotation),
    "vllm_unified": FlavourEmitters(vllm.forward_unified, None, vllm.sums_batch_annotation),
    "sglang_prefill": FlavourEmitters(sglang.prefill, None, sglang.step_annotation),
    "sglang_decode": FlavourEmitters(sglang.decode, None, sglang.step_annotation),
    "sage": FlavourEmitters(sage.forward, None),
    "aiter_flash": FlavourEmitters(aiter.forward, None),
    "flashmla": FlavourEmitters(mla.forward, None, sglang.step_annotation),
}

# A flavour the spec accepts but nothing emits would only fail when a trace is built: fail at import instead.
if set(EMITTERS) != set(FLAVOURS):
    raise RuntimeError(f"flavours without emitters or emitters without a flavour: {set(EMITTERS) ^ set(FLAVOURS)}")


def emit_forward(b: TraceBuilder, c: SyntheticAttentionCall, ci: int, ri: int) -> ForwardPass:
    """Emit one forward instance (call ``ci``, repeat ``ri``); return what its backward needs."""
    fwd = ForwardPass(ci, ri, c, [])
    EMITTERS[c.flavour].forward(b, c, fwd)
    return fwd


def emit_backward(b: TraceBuilder, fwd: ForwardPass) -> None:
    """Emit the backward of one forward instance (on the autograd thread the caller selected)."""
    backward = EMITTERS[fwd.call.flavour].backward
    if backward is None:
        raise RuntimeError(f"flavour {fwd.call.flavour!r} has no backward: the spec should have rejected it")
    backward(b, fwd)


def step_annotation(calls: Sequence[SyntheticAttentionCall]) -> str | None:
    """The engine step range of the first call whose flavour records one (one range per trace step)."""
    for c in calls:
        name = EMITTERS[c.flavour].step_annotation
        if name is not None:
            return name(c)
    return None
