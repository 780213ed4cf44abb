"""A lower-bound config from what a call's kernel says of it: its name (head dim, dtype, causal flag, tiles:
perf_models.kernel_shapes) and its launch grid (batch, heads, and the sequence length as a range: ceil(N / tile)
tiles put N in ((tiles - 1) · tile, tiles · tile], perf_models.kernel_grids).

A call whose kernel gives batch, query heads, head dim, dtype and causal flag but the sequence length only as that
range is modeled at the range's low end, by the same models as any other call: the forward's and the backward's
FLOPs, bytes and tiles grow with the lengths, so the work is a lower bound (work_bound 'lower', and the efficiency
"at least"). What the bound assumes, and where it does not hold:

* keys as many as queries: a causal call has at least as many keys as queries (self-attention; a KV cache only adds
  keys before them, and PyTorch's flash path refuses a causal call of fewer keys), so it keeps at least the
  N(N + 1) / 2 pairs per head of N_KV = N_Q = N. A non-causal call may be cross-attention, whose keys (a text
  prompt's 77 tokens beside 4096 image queries) are fewer than its queries: the query range bounds nothing, and the
  row stays unmodeled, with the reason;
* one length for every sequence: a grid over variable lengths counts the longest sequence's tiles, which bounds
  nothing from below once the batch is counted (`lengths_may_vary`: the kernel's name does not say whether its
  call was varlen, and only a known fixed-length op around it rules it out);
* one KV head where the grid gives no count (the fewest bytes K and V can take);
* V's head dim as the name gives it (a family whose name holds one head dim for Q·K only, as FlashAttention-3's
  backward, is not bounded: V's may be smaller);
* the kernel's name holds the model's dtype, or a quantized kernel's (SageAttention's int8 Q·Kᵀ, fp8 / fp16 P·V:
  `qk_dtype`, `pv_dtype`), read with the GEMM specs its registered ops are read with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdpa_analyzer.perf_models.kernel_grids import LENGTHS_MAY_VARY
from sdpa_analyzer.perf_models.ops.types import RowError

__all__ = ["BOUND_KEYS", "RANGE_KEY", "assumed_fields", "bounded_params", "describe_bound", "read_range"]

# the perf_params key of the range (lo, hi) the row's N_Q and N_KV (= lo) were taken from
RANGE_KEY = "N_range"
KV_HEADS_KEY = "H_KV_unknown"
# what a bound config's perf_params carry beyond the keys a config is written back with (server.ingest.op_config)
BOUND_KEYS = (RANGE_KEY, KV_HEADS_KEY, "dtype_V", "dtype_O", "compute_specs")

_C10 = {"bf16": "c10::BFloat16", "fp16": "c10::Half", "fp32": "float"}
# (Q·Kᵀ, P·V) dtypes of a quantized kernel's hints -> the dtypes of Q and K, and of V, as perf_params spell them
_QUANTIZED = {("int8", "fp8_e4m3"): ("signed char", "c10::Float8_e4m3fn"),
              ("int8", "fp16"): ("signed char", "c10::Half")}


def bounded_params(hints: Mapping[str, Any], direction: str, attention_type: str,
                   fixed_length_caller: bool) -> tuple[dict[str, Any] | None, str]:  # fmt: skip
    """(perf_params of a lower-bound config, what it assumes) from a call's kernel hints, or (None, why not).
    `fixed_length_caller`: the op around the call is known to pass one length for every sequence (no cu_seqlens,
    no KV cache)."""
    if direction not in ("fwd", "bwd"):
        return None, f"direction {direction!r} is not fwd or bwd"
    if hints.get("causal") is False:
        return None, ("a non-causal call: the launch grid does not give the keys' length, and a cross-attention call "
                      "passes keys of another length (fewer than its queries), so the query range bounds nothing")
    if LENGTHS_MAY_VARY in hints and not fixed_length_caller:
        return None, f"{hints[LENGTHS_MAY_VARY]}, and no known fixed-length op around the call rules that out"
    # the backward's grid tiles the keys, the forward's the queries: either way one length (self-attention)
    rng = hints.get("seq_kv_range" if direction == "bwd" else "seq_q_range") or hints.get("seq_q_range")
    if rng is None:
        return None, "the kernel gives no range of the sequence length (no tiles of a known size in its grid)"
    batch, heads = hints.get("batch"), hints.get("heads_q")
    if heads is None and isinstance(batch, int) and isinstance(hints.get("heads_x_batch"), int) and batch > 0:
        heads = hints["heads_x_batch"] // batch
    missing = [name for name, v in (("batch", batch), ("query heads", heads), ("head dim", hints.get("head_dim")),
                                    ("V's head dim", hints.get("head_dim_v")),
                                    ("dtype", hints.get("dtype")), ("causal flag", hints.get("causal"))) if v is None]
    if missing:
        return None, f"the kernel's name and grid do not give its {', '.join(missing)}"
    dtype = str(hints["dtype"])
    quantized = "qk_dtype" in hints  # SageAttention: int8 Q and K, V on its P·V dtype, O the model's
    if dtype not in _C10 or (quantized and (hints["qk_dtype"], hints.get("pv_dtype")) not in _QUANTIZED):
        return None, f"dtypes {dtype}, {hints.get('qk_dtype')}, {hints.get('pv_dtype')}: no bound config for them"
    lo, hi = int(rng[0]), int(rng[1])
    heads_kv = hints.get("heads_kv")
    params: dict[str, Any] = {
        "B": int(batch), "N_Q": lo, "H_Q": int(heads), "N_KV": lo,  # type: ignore[arg-type]
        "H_KV": int(heads_kv) if isinstance(heads_kv, int) else 1,
        "d_h_qk": int(hints["head_dim"]), "d_h_v": int(hints["head_dim_v"]),
        "dropout": 0.0, "causal": bool(hints["causal"]), "direction": direction,
        "dtype_A_B": (_C10[dtype], _C10[dtype]), "attention_type": attention_type, RANGE_KEY: (lo, hi),
    }
    if not isinstance(heads_kv, int):
        params[KV_HEADS_KEY] = True
    if quantized:  # the GEMMs on int8 and V's dtype, as SageAttention's registered ops are read (ops/specs/sage.py)
        qk, pv = _QUANTIZED[(hints["qk_dtype"], hints["pv_dtype"])]
        params.update(dtype_A_B=(qk, qk), dtype_V=pv, dtype_O=_C10[dtype], compute_specs=("matrix_int8", "v"))
    return params, describe_bound(params)


def assumed_fields(params: Mapping[str, Any] | None) -> list[str]:
    """The config fields a lower-bound config assumed rather than read (perf_params keys); [] for any other."""
    if not params or RANGE_KEY not in params:
        return []
    return ["H_KV", "N_Q", "N_KV"] if params.get(KV_HEADS_KEY) else ["N_Q", "N_KV"]


def describe_bound(params: Mapping[str, Any]) -> str:
    lo, hi = params[RANGE_KEY]
    kv = "; one KV head (the grid gives no count)" if params.get(KV_HEADS_KEY) else ""
    return (f"N_Q in [{lo}, {hi}] from the launch grid's tiles × the kernel name's tile, modeled at {lo} with "
            f"N_KV = N_Q{kv}: FLOPs and bytes are lower bounds (work_bound 'lower')")


def read_range(params: Mapping[str, Any], seq_q: int, seq_kv: int) -> bool:
    """Whether perf_params state a sequence-length range (RANGE_KEY) the config sits at the low end of; a range
    that does not hold the config's lengths at its low end is a RowError."""
    rng = params.get(RANGE_KEY)
    if rng is None:
        return False
    ok = isinstance(rng, list | tuple) and len(rng) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                               for v in rng)  # fmt: skip
    if not ok or not (0 < rng[0] <= rng[1]) or rng[0] != seq_q or seq_kv != seq_q:
        raise RowError(f"perf_params {RANGE_KEY}={rng!r:.40} is not (low, high) with N_Q = N_KV = low")
    return True
