"""Benchmark: parse_ops_table over 100,000 op rows vs parse_op row by row.

Two category CSVs, every shape different:
- sdpa_fwd: SDPA flash forward (82%, causal / scale variants), flash_attn forward with GQA (8%),
  aten _efficient_attention_forward and flash_attn varlen forward, whose max_seqlen Concrete Inputs differ
  per row (4% + 4%), and unknown ops (2%);
- sdpa_bwd: SDPA flash backward (75%, max_q / max_k differ per row), flash_attn backward (15%), autograd
  backward nodes without Input Dims (7%), unknown ops (3%);
- drifted: aiter varlen forward rows of a release with one inserted argument, read off their roles (ops.infer);
  max_seqlen differs per row and sits where a known signature reads dropout_p, so rows group by its value.
Cells are given two ways: as server/category_io.py passes them today (Input type / Concrete Inputs parsed
once per distinct string, so shared objects; Input Dims as one list per row, orjson-style) and as the raw
CSV strings. Every timed call gets freshly built cells; no perf_params (the server retries unmodeled rows).

Target (2-core machine): parse_ops_table on the 100,000-row sdpa_fwd table < 0.3 s.
Run: .venv/bin/python bench/bench_batch_parse.py [--rows 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from sdpa_analyzer.perf_models.literals import parse_literal
from sdpa_analyzer.perf_models.ops.batch import parse_ops_table
from sdpa_analyzer.perf_models.registry import parse_op

BF16 = "c10::BFloat16"
Cells = tuple[str, list[Any], str, str]  # name, Input Dims (lists), Input type, Concrete Inputs (strings)


def _sdpa_fwd(rng: np.random.Generator) -> Cells:
    b, h, n, d = int(rng.integers(1, 33)), int(rng.choice([8, 16, 32])), int(rng.integers(64, 8193)), 128
    hkv = h // int(rng.choice([1, 2, 4]))
    causal = rng.choice(["True", "False"])
    scale = rng.choice(["0.125", "0.088388347648318433"])
    return (
        "aten::_scaled_dot_product_flash_attention",
        [[b, h, n, d], [b, hkv, n, d], [b, hkv, n, d], [], [], [], []],
        f"('{BF16}', '{BF16}', '{BF16}', 'Scalar', 'Scalar', 'Scalar', 'Scalar')",
        f"('', '', '', '0.', '{causal}', 'False', '{scale}')",
    )


def _sdpa_bwd(rng: np.random.Generator) -> Cells:
    b, h, n, d = int(rng.integers(1, 33)), int(rng.choice([8, 16, 32])), int(rng.integers(64, 8193)), 128
    q = [b, h, n, d]
    types = (f"('{BF16}', '{BF16}', '{BF16}', '{BF16}', '{BF16}', 'float', '', '', 'Scalar', 'Scalar', 'Scalar', "
             "'Scalar', 'long int', 'long int', 'Scalar')")  # fmt: skip
    conc = f"('', '', '', '', '', '', '', '', '{n}', '{n}', '0.', 'True', '', '', '0.125')"
    return (
        "aten::_scaled_dot_product_flash_attention_backward",
        [q, q, q, q, q, [b, h, n], [], [], [], [], [], [], [], [], []],
        types,
        conc,
    )


def _flash_attn_fwd(rng: np.random.Generator) -> Cells:
    b, n, d = int(rng.integers(1, 17)), int(rng.integers(64, 16385)), 128
    types = f"('{BF16}', '{BF16}', '{BF16}', 'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar', '', 'Scalar')"
    return (
        "flash_attn::_flash_attn_forward",
        [[b, n, 32, d], [b, n, 8, d], [b, n, 8, d], [], [], [], [], [], [], [], []],
        types,
        "('', '', '', '0.0', '0.088388347648318433', 'True', '-1', '-1', '0.0', '', 'False')",
    )


def _efficient_fwd(rng: np.random.Generator) -> Cells:
    b, nq, nkv = int(rng.integers(1, 9)), int(rng.integers(64, 4097)), int(rng.integers(64, 4097))
    types = (f"('{BF16}', '{BF16}', '{BF16}', '', '', '', 'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar', "
             "'Scalar', '', 'Scalar')")  # fmt: skip
    return (
        "aten::_efficient_attention_forward",
        [[b, nq, 16, 64], [b, nkv, 16, 64], [b, nkv, 16, 64], [], [], [], [], [], [], [], [], [], [], []],
        types,
        f"('', '', '', '', '', '', '{nq}', '{nkv}', '0.0', '1', 'True', '0.125', '', '')",
    )


def _varlen_fwd(rng: np.random.Generator) -> Cells:
    seqs = int(rng.integers(1, 9))
    total = int(rng.integers(seqs * 64, seqs * 4096))
    longest = int(rng.integers(total // seqs, total + 1))
    types = (f"('{BF16}', '{BF16}', '{BF16}', 'int', 'int', 'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar', "
             "'Scalar', 'Scalar', 'Scalar', '', 'Scalar', '', '', '', 'Scalar')")  # fmt: skip
    conc = (f"('', '', '', '', '', '{longest}', '{longest}', '0.0', '0.088', 'True', '-1', '-1', '0.0', '', "
            "'False', '', '', '', 'False')")  # fmt: skip
    dims = [[total, 32, 128], [total, 8, 128], [total, 8, 128], [seqs + 1], [seqs + 1]] + [[]] * 14
    return "flash_attn::_flash_attn_varlen_forward", dims, types, conc


def _autograd_node(rng: np.random.Generator) -> Cells:
    return "FlashAttnFuncBackward", [], "()", "()"


def _unknown(rng: np.random.Generator) -> Cells:
    n = int(rng.integers(1, 4097))
    return "aten::bmm", [[16, n, 64], [16, 64, n]], f"('{BF16}', '{BF16}')", "('', '')"


def _flash_attn_bwd(rng: np.random.Generator) -> Cells:
    b, n, d = int(rng.integers(1, 17)), int(rng.integers(64, 16385)), 128
    q, kv = [b, n, 32, d], [b, n, 8, d]
    types = (f"('{BF16}', '{BF16}', '{BF16}', '{BF16}', '{BF16}', 'float', '{BF16}', '{BF16}', '{BF16}', 'Scalar', "
             "'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar', '', 'Scalar', 'long int')")  # fmt: skip
    conc = ("('', '', '', '', '', '', '', '', '', '0.0', '0.088388347648318433', 'True', '-1', '-1', '0.0', '', "
            "'False', '')")
    dims = [q, q, kv, kv, q, [b, 32, n], q, kv, kv, [], [], [], [], [], [], [], [], [2]]
    return "flash_attn::_flash_attn_backward", dims, types, conc


def _drifted_varlen(rng: np.random.Generator) -> Cells:
    # aiter::mha_varlen_fwd as a release that inserts a tensor after cu_seqlens_k would record it: no known signature
    # fits, the slots are read off their roles (ops.infer); max_seqlen differs per row
    seqs = int(rng.integers(1, 9))
    longest = int(rng.integers(64, 4097))
    types = (f"('{BF16}', '{BF16}', '{BF16}', 'int', 'int', 'int', 'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar', "
             "'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar', 'Scalar')")  # fmt: skip
    conc = (f"('', '', '', '', '', '', '{longest}', '{longest}', '0', '0.0', '0.088388347648318433', '0.0', 'False', "
            "'True', '-1', '-1', 'False', 'False')")  # fmt: skip
    total = seqs * longest
    dims = [[total, 32, 128], [total, 8, 128], [total, 8, 128], [seqs + 1], [seqs + 1], [seqs + 1]] + [[]] * 12
    return "aiter::mha_varlen_fwd", dims, types, conc


# A category CSV holds one op category: forward rows or backward rows.
MIXES: dict[str, list[tuple[float, Callable[[np.random.Generator], Cells]]]] = {
    "sdpa_fwd": [
        (0.82, _sdpa_fwd),
        (0.08, _flash_attn_fwd),
        (0.04, _efficient_fwd),
        (0.04, _varlen_fwd),
        (0.02, _unknown),
    ],
    "sdpa_bwd": [
        (0.75, _sdpa_bwd),
        (0.15, _flash_attn_bwd),
        (0.07, _autograd_node),
        (0.03, _unknown),
    ],
    # a library release no signature knows (ops.infer): one inference per structure, not per row
    "drifted": [(1.0, _drifted_varlen)],
}


def make_rows(n: int, mix: str = "sdpa_fwd", seed: int = 0) -> tuple[list[str], list[Any], list[Any], list[Any]]:
    rng = np.random.default_rng(seed)
    makers = MIXES[mix]
    weights = np.array([w for w, _ in makers])
    kinds = rng.choice(len(makers), size=n, p=weights / weights.sum())
    rows = [makers[k][1](rng) for k in kinds]
    parsed: dict[str, Any] = {}  # one object per distinct cell string, as the category reader does

    def cell(text: str) -> Any:
        if text not in parsed:
            parsed[text] = parse_literal(text)
        return parsed[text]

    names = [r[0] for r in rows]
    dims = [None if r[0] == "FlashAttnFuncBackward" else r[1] for r in rows]  # autograd nodes have none
    types = [None if r[0] == "FlashAttnFuncBackward" else cell(r[2]) for r in rows]
    conc = [None if r[0] == "FlashAttnFuncBackward" else cell(r[3]) for r in rows]
    return names, dims, types, conc


def as_strings(dims: list[Any], types: list[Any], conc: list[Any]) -> tuple[list[Any], ...]:
    def lit(x: Any) -> Any:
        if x is None:
            return None
        return repr(tuple(tuple(e) if isinstance(e, list) else e for e in x))

    return [lit(d) for d in dims], [lit(t) for t in types], [lit(c) for c in conc]


def timed(make: Callable[[], tuple[list[Any], ...]], repeats: int) -> tuple[float, Any]:
    """Best of `repeats` calls, each on freshly built cells (new objects, as a CSV reader would hand over:
    no cached string hashes, nothing in the CPU cache from the previous call)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        cells = make()
        gc.collect()
        t0 = time.perf_counter()
        out = parse_ops_table(*cells, None)
        best = min(best, time.perf_counter() - t0)
        del cells
    return best, out


def run_mix(mix: str, n: int, repeats: int) -> None:
    secs, pt = timed(lambda: make_rows(n, mix), repeats)
    target = " (target < 0.3 s)" if mix == "sdpa_fwd" else ""
    print(f"{mix}: parse_ops_table on {n:,} rows: {secs:.3f} s{target}, {secs / n * 1e6:.2f} µs/row; "
          f"{int(pt.modeled.sum()):,} modeled, {int(pt.per_row.sum()):,} parsed one by one, "
          f"{len(pt._plans)} group plans")  # fmt: skip

    def raw() -> tuple[list[Any], ...]:
        names, dims, types, conc = make_rows(n, mix)
        return (names, *as_strings(dims, types, conc))

    secs_raw, _ = timed(raw, repeats)
    print(f"{mix}: the same rows as raw CSV strings: {secs_raw:.3f} s, {secs_raw / n * 1e6:.2f} µs/row")
    names, dims, types, conc = make_rows(n, mix)
    sample = range(0, n, max(1, n // 1000))
    t0 = time.perf_counter()
    for i in sample:
        parse_op(names[i], dims[i], types[i], conc[i], None)
    per_row = (time.perf_counter() - t0) / len(sample)
    print(f"{mix}: parse_op row by row: {per_row * 1e6:.0f} µs/row = {per_row * n:.1f} s for {n:,} rows "
          f"({per_row * n / secs:.0f}x slower)")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    for mix in MIXES:
        run_mix(mix, args.rows, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
