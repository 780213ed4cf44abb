"""The attention op table: one OpSpec per op name, with the argument slots of every known signature.

Every slot index was checked against the library's real signature (quoted in the comment above each
entry, with where it came from). Libraries change signatures between versions, so an op may have
several `Signature`s; the row reader (`ops.choice`) picks the first whose argument count fits AND whose
known slots hold their roles (`ops.roles`: a causal slot holds True/False, a softmax_scale slot a positive
number, a window edge an integer >= -1, q/k/v attention tensors, ...). That check is what stops a
softmax_scale of 0.088 from ever being read as `causal` (reference-pitfalls #2). A row with more arguments
than a signature was seen with is read from its known slots when they still hold their roles (appended
optional arguments), and a row no signature fits is read off its roles (`ops.infer`); both say so in the
row's warnings. tests/perf_models/test_registry_corpus.py holds a row per real variant.

One module per library: `aten`, `flash_attn` (with the FlashAttnFunc autograd wrappers), `fa3`, `aiter`,
`te`, `vllm`, `sglang` (SGLang's profiler wrappers), `sage` (SageAttention), `mla` (FlashMLA);
`autograd` holds the backward nodes without arguments, `unfused` our own unfused rows
(matched by name prefix, not in SPEC_BY_NAME), `base` the OpSpec / Signature types. A new op is one
OpSpec in its library's module (and a test); a new library is a new module, added to `SPECS` below.
"""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs import aiter, aten, autograd, fa3, flash_attn, mla, sage, sglang, te, vllm
from sdpa_analyzer.perf_models.ops.specs.aiter import AITER
from sdpa_analyzer.perf_models.ops.specs.aten import (
    ATEN_EFFICIENT,
    ATEN_FLASH,
    SDPA,
    SDPA_CUDNN,
    SDPA_EFFICIENT,
    SDPA_FLASH,
    SDPA_MATH,
)
from sdpa_analyzer.perf_models.ops.specs.base import BWD, FWD, OpSpec, Signature
from sdpa_analyzer.perf_models.ops.specs.fa3 import FLASH_ATTN_3
from sdpa_analyzer.perf_models.ops.specs.flash_attn import FLASH_ATTN
from sdpa_analyzer.perf_models.ops.specs.mla import FLASH_MLA
from sdpa_analyzer.perf_models.ops.specs.sage import SAGE
from sdpa_analyzer.perf_models.ops.specs.sglang import SGLANG
from sdpa_analyzer.perf_models.ops.specs.te import TRANSFORMER_ENGINE
from sdpa_analyzer.perf_models.ops.specs.unfused import (
    UNFUSED,
    UNFUSED_BWD,
    UNFUSED_BWD_PREFIX,
    UNFUSED_FWD,
    UNFUSED_PREFIX,
)
from sdpa_analyzer.perf_models.ops.specs.vllm import VLLM

__all__ = [
    "AITER",
    "ATEN_EFFICIENT",
    "ATEN_FLASH",
    "BWD",
    "FLASH_ATTN",
    "FLASH_ATTN_3",
    "FLASH_MLA",
    "FWD",
    "SAGE",
    "SDPA",
    "SDPA_CUDNN",
    "SDPA_EFFICIENT",
    "SDPA_FLASH",
    "SDPA_MATH",
    "SGLANG",
    "SPECS",
    "SPEC_BY_NAME",
    "TRANSFORMER_ENGINE",
    "UNFUSED",
    "UNFUSED_BWD",
    "UNFUSED_BWD_PREFIX",
    "UNFUSED_FWD",
    "UNFUSED_PREFIX",
    "VLLM",
    "OpSpec",
    "Signature",
]

# every library's ops, in the order of the single table this package was split from
SPECS: list[OpSpec] = [
    *aten.SPECS,
    *flash_attn.SPECS,
    *fa3.SPECS,
    *aiter.SPECS,
    *te.SPECS,
    *vllm.SPECS,
    *sglang.SPECS,
    *sage.SPECS,
    *mla.SPECS,
    *autograd.SPECS,
]


def _index(specs: list[OpSpec]) -> dict[str, OpSpec]:
    table: dict[str, OpSpec] = {}
    for spec in specs:
        if spec.name in table:
            raise RuntimeError(f"op {spec.name!r} registered twice")
        table[spec.name] = spec
    return table


SPEC_BY_NAME: dict[str, OpSpec] = _index(SPECS)
