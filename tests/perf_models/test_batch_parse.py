"""parse_ops_table gives, row for row, exactly the ParsedOp that parse_op gives.

parse_op is the independent reference: every test builds a table and compares every field of every row
(config, reason, warnings, family, layout, attention_type, direction, source) plus the table columns
against ConfigTable.from_configs of parse_op's configs. Rows come from /work/shared (CSV cells and trace
cpu_op args) and from a seeded generator that mixes the op families, cell forms (tuples, JSON lists, raw
strings) and malformed rows; tests/perf_models/conftest.py checks every call the registry tests make the same way.
"""

from __future__ import annotations

import gzip
import json
import random
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sdpa_analyzer.perf_models.config import Alignment, AttentionConfig, Mask, MaskKind
from sdpa_analyzer.perf_models.ops.batch import parse_ops_table
from sdpa_analyzer.perf_models.registry import lookup, parse_op
from tests.support import check_table

BF16, FP16, FP32 = "c10::BFloat16", "c10::Half", "float"

Row = tuple[Any, Any, Any, Any, Any]  # name, Input Dims, Input type, Concrete Inputs, perf_params


def T(*shape: int, dtype: str = BF16) -> tuple[list[int], str, str]:
    """A tensor argument: its shape, its dtype, no value."""
    return list(shape), dtype, ""


def S(value: str, dtype: str = "Scalar") -> tuple[list[int], str, str]:
    """A scalar argument with its recorded value."""
    return [], dtype, value


NA = ([], "", "")  # an optional argument passed as None


def make_row(name: str, slots: list[tuple[Any, str, Any]], pp: Any = None) -> Row:
    return name, [s[0] for s in slots], [s[1] for s in slots], [s[2] for s in slots], pp


# --- worked by hand ------------------------------------------------------------------------------------


def _flash_fwd(b: int, n: int, hq: int, nkv: int, hkv: int, d: int, left: str, right: str) -> Row:
    # flash_attn::_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left,
    #   window_size_right, softcap, alibi_slopes, return_softmax)
    return make_row(
        "flash_attn::_flash_attn_forward",
        [T(b, n, hq, d), T(b, nkv, hkv, d), T(b, nkv, hkv, d), S("0.0"), S("0.125"), S("False"), S(left),
         S(right), S("0.0"), NA, S("False")],
    )  # fmt: skip


def test_hand_worked_table():
    sdpa = make_row(
        "aten::_scaled_dot_product_flash_attention",
        [T(2, 8, 128, 64), T(2, 2, 256, 64), T(2, 2, 256, 64), S("0."), S("True"), S("False"), S("0.125")],
    )
    rows = [
        sdpa,
        # window (100, 0): with Nkv = 64 the left bound covers every key, mask_from clips it to -1, and
        # (-1, 0) is causal bottom-right; with Nkv = 512 it stays a sliding window. Same structural group.
        _flash_fwd(1, 64, 4, 64, 4, 128, "100", "0"),
        _flash_fwd(1, 512, 4, 512, 1, 128, "100", "0"),
        make_row("aten::mm", [T(4, 4), T(4, 4)]),
    ]
    pt = check_table(rows)
    assert pt.modeled.tolist() == [True, True, True, False]
    assert not pt.per_row.any()
    assert pt.reason[3].startswith("unknown op 'aten::mm'")
    t = pt.table
    # SDPA flash is BHND: (2, 8, 128, 64) -> B=2, Hq=8, Nq=128; k (2, 2, 256, 64) -> Hkv=2, Nkv=256.
    # flash_attn is BNHD: (1, 64, 4, 128) -> B=1, Nq=64, Hq=4, d=128.
    assert t.batch.tolist() == [2, 1, 1]
    assert t.heads_q.tolist() == [8, 4, 4] and t.heads_kv.tolist() == [2, 4, 1]
    assert t.seq_q.tolist() == [128, 64, 512] and t.seq_kv.tolist() == [256, 64, 512]
    assert t.mask_code.tolist() == [2, 2, 3]  # causal BR, causal BR, window
    assert t.window_left.tolist() == [-1, -1, 100] and t.window_right.tolist() == [-1, -1, 0]
    assert t.elem_q.tolist() == [2.0, 2.0, 2.0] and t.is_bwd.tolist() == [False] * 3
    assert list(pt.mask_label) == ["causal (bottom-right)", "causal (bottom-right)",
                                   "sliding window (left=100, right=0)", None]  # fmt: skip
    assert pt.config(2) == AttentionConfig(
        batch=1, heads_q=4, heads_kv=1, seq_q=512, seq_kv=512, head_dim_qk=128, head_dim_v=128,
        mask=Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT, 100, 0),
    )  # fmt: skip
    assert pt.config(3) is None
    assert list(pt.family) == ["aten_sdpa_flash", "flash_attn", "flash_attn", None]


def test_with_rows_replaces_rows_and_rebuilds_the_table():
    rows = [_flash_fwd(1, 64 * (i + 1), 4, 64 * (i + 1), 4, 64, "-1", "-1") for i in range(4)]
    rows.append(make_row("aten::mm", [T(4, 4), T(4, 4)]))
    pt = parse_ops_table(*(list(c) for c in zip(*rows, strict=True)))
    new_last = parse_op(*_flash_fwd(3, 100, 8, 100, 8, 128, "-1", "-1"))
    gone = parse_op("aten::mm", None, None, None)
    swapped = pt.with_rows({4: new_last, 1: gone})
    assert swapped.modeled.tolist() == [True, False, True, True, True]
    assert swapped.per_row.tolist() == [False, True, False, False, True]
    # table rows follow the modeled rows in order: seq lengths 64, 192, 256, then the new row's 100
    assert swapped.table.seq_q.tolist() == [64, 192, 256, 100]
    assert swapped.table.batch.tolist() == [1, 1, 1, 3]
    assert swapped.op(4) == new_last and swapped.op(1) == gone
    assert swapped.config(2) == pt.config(2)
    assert pt.table.seq_q.tolist() == [64, 128, 192, 256]  # the original is unchanged


def test_lengths_must_match():
    with pytest.raises(ValueError, match="input_types has 1 rows, names has 2"):
        parse_ops_table(["a", "b"], [None, None], [None], [None, None])


def test_empty_table():
    pt = parse_ops_table([], [], [], [], [])
    assert pt.n == 0 and len(pt.table) == 0 and pt.warnings == []


# --- real rows -----------------------------------------------------------------------------------------


def test_every_analysis_folder_row(analysis_folders_dir):
    rows: list[Row] = []
    for csv in sorted(analysis_folders_dir.glob("*/category_data/*_ops.csv")):
        df = pd.read_csv(csv)
        for _, r in df.iterrows():
            if lookup(str(r["name"])) is None:
                continue
            cells = [r.get(c) for c in ("Input Dims", "Input type", "Concrete Inputs", "perf_params")]
            rows.append((r["name"], *cells))
    assert rows
    check_table(rows)
    # the same rows repeated, as the parsed cells a category reader passes (one object per distinct cell)
    from sdpa_analyzer.perf_models.literals import parse_literal

    cache: dict[str, Any] = {}

    def cell(x: Any) -> Any:
        if not isinstance(x, str):
            return x
        if x not in cache:
            cache[x] = parse_literal(x)
        return cache[x]

    check_table([(r[0], cell(r[1]), cell(r[2]), cell(r[3]), r[4]) for r in rows * 5])


def test_every_trace_cpu_op(traces_dir):
    rows: list[Row] = []
    for path in sorted(traces_dir.rglob("*.json.gz")):
        with gzip.open(path, "rt") as fh:
            events = json.load(fh)
        events = events["traceEvents"] if isinstance(events, dict) else events
        for e in events:
            if e.get("cat") == "cpu_op" and lookup(str(e.get("name", ""))) is not None:
                a = e.get("args", {})
                rows.append((e["name"], a.get("Input Dims"), a.get("Input type"), a.get("Concrete Inputs"), None))
    assert len(rows) > 100
    pt = check_table(rows)
    assert pt.modeled.sum() > 100


# --- generated rows ------------------------------------------------------------------------------------

SCALES = ["0.125", "0.088388347648318433", "", "0.1"]


class Gen:
    """Seeded rows of many op families; `clean` rows must be built from their group's plan."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.rows: list[Row] = []
        self.clean: list[bool] = []

    # shapes
    def heads(self) -> tuple[int, int]:
        hq = self.r.choice([4, 8, 12, 16, 32])
        return hq, self.r.choice([h for h in (1, 2, 4, 8, 16, 32) if hq % h == 0])

    def seq(self) -> int:
        return self.r.choice([self.r.randint(1, 300), self.r.randint(64, 9000)])

    def causal(self) -> str:
        return self.r.choice(["True", "False"])

    def window(self, nkv: int) -> tuple[str, str]:
        return self.r.choice([("-1", "-1"), ("-1", "-1"), ("128", "0"), (str(nkv), "0"), ("64", "64"),
                              (str(max(nkv - 1, 0)), "-1"), ("-1", "0")])  # fmt: skip

    def add(self, name: str, slots: list[tuple[Any, str, Any]], clean: bool = True, pp: Any = None) -> None:
        self.rows.append(make_row(name, slots, pp))
        self.clean.append(clean)

    # families
    def sdpa_flash_fwd(self, scale: str) -> None:
        b, (hq, hkv), nq, d = self.r.randint(1, 16), self.heads(), self.seq(), self.r.choice([64, 128])
        nkv = self.r.choice([nq, self.seq()])
        self.add("aten::_scaled_dot_product_flash_attention",
                 [T(b, hq, nq, d), T(b, hkv, nkv, d), T(b, hkv, nkv, d), S("0."), S(self.causal()), S("False"),
                  S(scale)])  # fmt: skip

    def sdpa_flash_bwd(self, scale: str) -> None:
        b, (hq, hkv), nq, d = self.r.randint(1, 16), self.heads(), self.seq(), self.r.choice([64, 128])
        q, kv = T(b, hq, nq, d), T(b, hkv, nq, d)
        self.add("aten::_scaled_dot_product_flash_attention_backward",
                 [q, q, kv, kv, q, T(b, hq, nq, dtype=FP32), NA, NA, S(str(nq)), S(str(nq)), S("0."),
                  S(self.causal()), T(dtype="long int"), T(dtype="long int"), S(scale)])  # fmt: skip

    def sdpa_efficient_fwd(self, with_bias: bool) -> None:
        b, (hq, hkv), nq, d = self.r.randint(1, 8), self.heads(), self.seq(), 64
        nkv = self.r.choice([nq, self.seq()])
        bias = T(b, hq, nq, nkv) if with_bias else NA
        self.add("aten::_scaled_dot_product_efficient_attention",
                 [T(b, hq, nq, d, dtype=FP16), T(b, hkv, nkv, d, dtype=FP16), T(b, hkv, nkv, d, dtype=FP16), bias,
                  S("True"), S("0."), S(self.causal()), S("0.125")])  # fmt: skip

    def sdpa_dispatcher(self, rank: int) -> None:
        lead = [self.r.randint(1, 4) for _ in range(rank - 3)]
        hq, nq, nkv, d = self.r.choice([4, 8]), self.seq(), self.seq(), 64
        self.add("aten::scaled_dot_product_attention",
                 [T(*lead, hq, nq, d), T(*lead, hq, nkv, d), T(*lead, hq, nkv, d), NA, S("0."),
                  S(self.causal()), NA, S("False")])  # fmt: skip

    def unfused(self) -> None:
        # server/ingest writes matmul -> softmax -> matmul scopes as rows with the SDPA dispatcher's slots
        hq, nq, nkv, d = self.r.choice([4, 8]), self.seq(), self.seq(), 64
        self.add("unfused_attention (aten::bmm+aten::softmax+aten::bmm)",
                 [T(2, hq, nq, d), T(2, hq, nkv, d), T(2, hq, nkv, d), NA, S("0."), S(self.causal()), NA,
                  S("False")])  # fmt: skip

    def sdpa_cudnn_fwd(self) -> None:
        b, hq, n, d = self.r.randint(1, 8), 16, self.seq(), 128
        q = T(b, hq, n, d)
        self.add("aten::_scaled_dot_product_cudnn_attention",
                 [q, q, q, NA, S("True"), S("0.0"), S(self.causal()), S("False"), S("0.088")])  # fmt: skip

    def aten_flash_fwd(self, windowed: bool) -> None:
        b, (hq, hkv), nq, d = self.r.randint(1, 8), self.heads(), self.seq(), 128
        nkv = self.r.choice([nq, self.seq()])
        wl, wr = self.window(nkv) if windowed else ("", "")
        self.add("aten::_flash_attention_forward",
                 [T(b, nq, hq, d), T(b, nkv, hkv, d), T(b, nkv, hkv, d), NA, NA, S(str(nq)), S(str(nkv)), S("0."),
                  S(self.causal()), S("False"), S("0.088"), S(wl), S(wr), NA, NA])  # fmt: skip

    def aten_flash_varlen(self, max_kind: str) -> None:
        ns, (hq, hkv), d = self.r.randint(1, 8), self.heads(), 64
        tq, tk = self.r.randint(ns, 5000), self.r.randint(ns, 5000)
        mq, mk = self.r.randint(1, tq), self.r.randint(1, tk)
        clean = max_kind == "valid"
        if max_kind == "too_big":
            mq = tq + 1
        max_q = {"blank": "", "nan": "nan", "junk": "x1"}.get(max_kind, str(mq))
        self.add("aten::_flash_attention_forward",
                 [T(tq, hq, d), T(tk, hkv, d), T(tk, hkv, d), T(ns + 1, dtype="int"), T(ns + 1, dtype="int"),
                  S(max_q), S(str(mk)), S("0."), S(self.causal()), S("False"), S("0.125"), NA, NA, NA, NA]
                 , clean=clean)  # fmt: skip

    def aten_flash_bwd(self) -> None:
        b, (hq, hkv), n, d = self.r.randint(1, 8), self.heads(), self.seq(), 128
        q, kv = T(b, n, hq, d), T(b, n, hkv, d)
        wl, wr = self.window(n)
        self.add("aten::_flash_attention_backward",
                 [q, q, kv, kv, q, T(b, hq, n, dtype=FP32), NA, NA, S(str(n)), S(str(n)), S("0."), S(self.causal()),
                  T(2, dtype="long int"), T(dtype="long int"), S("0.088"), S(wl), S(wr)])  # fmt: skip

    def efficient_fwd(self, code: str, window: str) -> None:
        b, (hq, hkv), nq, d = self.r.randint(1, 8), self.heads(), self.seq(), 64
        nkv = self.r.choice([nq, self.seq()])
        self.add("aten::_efficient_attention_forward",
                 [T(b, nq, hq, d), T(b, nkv, hkv, d), T(b, nkv, hkv, d), NA, NA, NA, S(str(nq)), S(str(nkv)),
                  S("0.0"), S(code), S("True"), S("0.125"), NA, S(window)])  # fmt: skip

    def flash_attn(self, bwd: bool, form: str) -> None:
        b, (hq, hkv), nq, d = self.r.randint(1, 8), self.heads(), self.seq(), self.r.choice([64, 128, 256])
        nkv = self.r.choice([nq, self.seq()])
        wl, wr = self.window(nkv)
        q, kv = T(b, nq, hq, d), T(b, nkv, hkv, d)
        if not bwd:
            slots = [q, kv, kv, S("0.0"), S("0.0883"), S(self.causal()), S(wl), S(wr), S("0.0"), NA, S("False")]
            self.add("flash_attn::_flash_attn_forward", _form(slots, form))
            return
        dout_ok = self.r.random() > 0.05
        dout = q if dout_ok else T(b, nq + 1, hq, d)
        slots = [dout, q, kv, kv, q, T(b, hq, nq, dtype=FP32), q, kv, kv, S("0.0"), S("0.0883"), S(self.causal()),
                 S(wl), S(wr), S("0.0"), NA, S("False"), NA]  # fmt: skip
        self.add("flash_attn::_flash_attn_backward", _form(slots, form), clean=dout_ok)

    def flash_attn_varlen(self, paged: bool) -> None:
        ns, (hq, hkv), d = self.r.randint(1, 8), self.heads(), 128
        tq, tk = self.r.randint(ns, 9000), self.r.randint(ns, 9000)
        mq, mk = self.r.randint(1, tq), self.r.randint(1, tk)
        wl, wr = self.window(mk)
        cu = T(ns + 1, dtype="int")
        table = T(ns, 16, dtype="int") if paged else NA
        self.add("flash_attn::_flash_attn_varlen_forward",
                 [T(tq, hq, d), T(tk, hkv, d), T(tk, hkv, d), cu, cu, S(str(mq)), S(str(mk)), S("0.0"), S("0.088"),
                  S(self.causal()), S(wl), S(wr), S("0.0"), NA, S("False"), table, NA, NA, S("False")])  # fmt: skip

    def flash_attn_func(self, window: str) -> None:
        b, (hq, hkv), n, d = self.r.randint(1, 8), self.heads(), self.seq(), 128
        self.add("FlashAttnFunc",
                 [T(b, n, hq, d), T(b, n, hkv, d), T(b, n, hkv, d), S("0.0"), S("0.088"), S(self.causal()),
                  S(window, "ScalarList"), S("0.0"), NA, S("False"), S("False"), NA])  # fmt: skip

    def te(self, layout: str, mask: str) -> None:
        s, b, (hq, hkv), d = self.seq(), self.r.randint(1, 4), self.heads(), 128
        if layout.startswith("sbhd"):
            q, kv = T(s, b, hq, d), T(s, b, hkv, d)
        elif layout.startswith("bshd"):
            q, kv = T(1, s, hq, d), T(1, s, hkv, d)  # TE passes cu_seqlens: read as packed tokens
        else:
            q, kv = T(s, hq, d), T(s, hkv, d)
        self.add("FusedAttnFunc",
                 [S("True"), S(str(s)), S(str(s)), T(2, dtype="int"), T(2, dtype="int"), NA, NA, NA, NA, q, kv, kv,
                  NA, S("0.088"), S("0.0"), S("True"), S(layout, ""), S("no_bias", ""), S(mask, ""),
                  S("[-1, 0]", "ScalarList"), NA, S("1", ""), S("False"), S("False"), NA, NA, S("False"), S("False"),
                  S("1")])  # fmt: skip

    def vllm(self) -> None:
        tokens = self.r.randint(1, 2000)
        pp = {"H_Q": 8, "H_KV": 1, "d_h_qk": 64, "d_h_v": 64, "c_sq": tokens, "c_sk": tokens, "num_ctx_requests": 1,
              "g_sq": 0, "g_sk": 0, "dtype_Q": "c10::BFloat16"}  # fmt: skip
        self.add("vllm::unified_attention_with_output",
                 [T(tokens, 8, 64), T(tokens, 1, 64), T(tokens, 1, 64), T(tokens, 8, 64), NA, NA, NA], False,
                 self.r.choice([pp, None]))  # fmt: skip

    def autograd_node(self) -> None:
        pp = {"B": self.r.randint(1, 8), "N_Q": self.seq(), "H_Q": 16, "N_KV": self.seq(), "H_KV": 4,
              "d_h_qk": 128, "d_h_v": 128, "dropout": 0.0, "causal": self.r.choice([True, False, 0.088]),
              "dtype_A_B": ("c10::BFloat16", "c10::BFloat16")}  # fmt: skip
        name = self.r.choice(["FlashAttnFuncBackward", "ScaledDotProductEfficientAttentionBackward0",
                              "unfused_attention_backward (aten::bmm+aten::softmax+aten::bmm)"])  # fmt: skip
        self.rows.append((name, None, None, None, self.r.choice([pp, None, None, repr(pp), float("nan")])))
        self.clean.append(False)


def _form(slots: list[tuple[Any, str, Any]], form: str) -> list[tuple[Any, str, Any]]:
    """Shapes as JSON-style lists (as given) or tuples."""
    if form == "tuple":
        return [(tuple(d), t, c) for d, t, c in slots]
    return slots


BAD_KINDS = (
    "zero", "negative", "bool_dim", "float_dim", "none_entry", "tensor_list", "gqa", "batch_mismatch",
    "no_concrete", "blank_concrete", "scale_in_causal", "no_types", "bad_dims_str", "huge", "no_dims",
    "perf_params", "junk_scale", "str_entry",
)  # fmt: skip


def corrupt(row: Row, kind: str, rng: random.Random) -> Row:
    """A malformed variant of a generated row (its name and form kept)."""
    name, dims, types, conc, pp = row
    dims = [list(d) for d in dims] if isinstance(dims, list) else dims
    conc = list(conc) if isinstance(conc, list) else conc
    first = next((i for i, d in enumerate(dims) if len(d) >= 3), None)
    if first is None:
        return row
    empty = next((i for i, d in enumerate(dims) if not d), None)
    if kind == "zero":
        dims[first][rng.randrange(len(dims[first]))] = 0
    elif kind == "negative":
        dims[rng.randrange(len(dims))] = [2, -1]
    elif kind == "bool_dim":
        dims[first][0] = True
    elif kind == "float_dim":
        dims[first][-1] = 64.0
    elif kind == "none_entry" and empty is not None:
        dims[empty] = None
    elif kind == "tensor_list" and empty is not None:
        dims[empty] = [[1, 2], [3, 4]]
    elif kind == "str_entry" and empty is not None:
        dims[empty] = ""
    elif kind == "gqa":
        dims[first + 1] = [*dims[first + 1][:-2], 3, dims[first + 1][-1]]
        dims[first + 2] = list(dims[first + 1])
    elif kind == "batch_mismatch":
        dims[first + 1][0] += 1
    elif kind == "no_concrete":
        conc = None
    elif kind == "blank_concrete":
        conc = [""] * len(conc)
    elif kind == "scale_in_causal":
        conc = ["0.125" if c in ("True", "False") else c for c in conc]
    elif kind == "no_types":
        types = rng.choice([None, float("nan")])
    elif kind == "bad_dims_str":
        dims = "((1, 2), (3"
    elif kind == "huge":
        dims[first][0] = 2**70
    elif kind == "no_dims":
        dims = rng.choice([None, float("nan"), ""])
    elif kind == "perf_params":
        conc = None
        pp = {"B": 2, "N_Q": 64, "H_Q": 8, "N_KV": 64, "H_KV": 8, "d_h_qk": 64, "d_h_v": 64, "causal": True,
              "dropout": 0.0, "dtype_A_B": ("c10::BFloat16", "c10::BFloat16")}  # fmt: skip
    elif kind == "junk_scale":
        conc = ["abc" if c in SCALES[:2] or c in ("0.088", "0.0883") else c for c in conc]
    return name, dims, types, conc, pp


def as_strings(row: Row) -> Row:
    """The row as raw CSV cells (Python literal strings)."""
    name, dims, types, conc, pp = row

    def lit(x: Any) -> Any:
        if isinstance(x, list):
            return repr(tuple(lit(v) for v in x)) if x and isinstance(x[0], list) else repr(tuple(x))
        return x

    dims_s = repr(tuple(tuple(d) if isinstance(d, list) else d for d in dims)) if isinstance(dims, list) else dims
    return name, dims_s, lit(types), lit(conc), pp


def generated_rows(seed: int, n: int) -> tuple[list[Row], list[bool]]:
    g = Gen(seed)
    r = g.r
    makers = [
        lambda: g.sdpa_flash_fwd(r.choice(SCALES[:2])),
        lambda: g.sdpa_flash_fwd(r.choice(SCALES[:2])),
        lambda: g.sdpa_flash_bwd("0.125"),
        lambda: g.sdpa_efficient_fwd(r.random() < 0.3),
        lambda: g.sdpa_dispatcher(r.choice([3, 4, 5, 6])),
        lambda: g.sdpa_cudnn_fwd(),
        lambda: g.unfused(),
        lambda: g.aten_flash_fwd(windowed=r.random() < 0.5),
        lambda: g.aten_flash_varlen(r.choice(["valid"] * 6 + ["too_big", "blank", "nan", "junk"])),
        lambda: g.aten_flash_bwd(),
        lambda: g.efficient_fwd(r.choice("012"), r.choice(["", "", "256", "0"])),
        lambda: g.flash_attn(False, r.choice(["list", "tuple"])),
        lambda: g.flash_attn(True, "list"),
        lambda: g.flash_attn_varlen(paged=r.random() < 0.1),
        lambda: g.flash_attn_func(r.choice(["[-1, -1]", "[-1, -1]", "[256, 0]", "(64, 64)"])),
        lambda: g.te(r.choice(["sbhd_sbhd_sbhd", "bshd_bshd_bshd", "thd_thd_thd", "sbhd_bs2hd"]),
                     r.choice(["causal", "no_mask", "padding_causal_bottom_right", "arbitrary", "bogus"])),
        lambda: g.vllm(),
        lambda: g.autograd_node(),
        lambda: g.add("aten::mm", [T(64, 64), T(64, 64)], clean=False),
    ]
    while len(g.rows) < n:
        r.choice(makers)()
    rows, clean = g.rows, g.clean
    for i in range(len(rows)):
        if rows[i][1] is not None and r.random() < 0.08:
            rows[i] = corrupt(rows[i], r.choice(BAD_KINDS), r)
            clean[i] = False
        if r.random() < 0.1:
            rows[i] = as_strings(rows[i]) if rows[i][1] is not None and not isinstance(rows[i][1], str) else rows[i]
    return rows, clean


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_rows_equal_parse_op(seed):
    rows, clean = generated_rows(seed, 3000)
    pt = check_table(rows)
    clean_rows = np.flatnonzero(clean)
    assert len(clean_rows) > 1500
    # clean rows are built from their group's plan, not one by one (the fast path really ran)
    one_by_one = [rows[i] for i in clean_rows if pt.per_row[i]]
    assert not one_by_one, one_by_one[:3]
    assert pt.modeled.sum() > 1500 and pt.per_row.sum() < 0.2 * len(rows)


def test_generated_rows_as_parsed_cells():
    """Rows whose cells are the shared objects a category reader passes (one object per distinct cell)."""
    rows, _ = generated_rows(3, 2000)
    shared: dict[str, Any] = {}
    out = []
    for name, dims, types, conc, pp in rows:
        types = shared.setdefault(repr(types), types)
        conc = shared.setdefault(repr(conc), conc)
        out.append((name, dims, types, conc, pp))
    check_table(out)


def test_same_structure_with_varying_numbers_stays_one_plan():
    # aten::_flash_attention_forward records max_q / max_k (slots 5, 6) as Concrete Inputs: they differ
    # from row to row, but only their kind matters, so all 500 rows are built from one plan
    g = Gen(7)
    for _ in range(500):
        g.aten_flash_fwd(windowed=False)
    pt = check_table(g.rows)
    assert pt.modeled.all() and not pt.per_row.any()
    assert len(pt._plans) <= 2  # causal True / False


# --- raw CSV strings -----------------------------------------------------------------------------------

_SDPA_TYPES = "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar', 'Scalar')"


def _sdpa_raw(dims: str, conc: str = "('', '', '', '0.', 'True', 'False', '0.125')") -> Row:
    return "aten::_scaled_dot_product_flash_attention", dims, _SDPA_TYPES, conc, None


def test_raw_dims_strings_of_every_shape_of_text():
    good = "(({b}, 8, {n}, 64), ({b}, 2, {n}, 64), ({b}, 2, {n}, 64), (), (), (), ())"
    rows = [_sdpa_raw(good.format(b=b, n=n)) for b in (1, 3, 17) for n in (5, 128, 4097)]
    rows += [
        _sdpa_raw("[[2, 8, 64, 64], [2, 8, 64, 64], [2, 8, 64, 64], [], [], [], []]"),  # list brackets
        _sdpa_raw("((2,8,64,64),(2,8,64,64),(2,8,64,64),(),(),(),())"),  # no spaces: another template
        _sdpa_raw("((002, 8, 064, 64), (2, 8, 64, 64), (2, 8, 64, 64), (), (), (), ())"),  # leading zeros
        _sdpa_raw("((2, 8, 64, 64,), (2, 8, 64, 64), (2, 8, 64, 64), (), (), (), (),)"),  # trailing commas
        _sdpa_raw(good.format(b=10**19, n=64)),  # 20 digits: beyond int64, parse_op keeps Python ints
        _sdpa_raw(good.format(b=999999999999999999, n=64)),  # 18 digits: still an int64
        _sdpa_raw(good.format(b=-2, n=64)),  # a sign
        _sdpa_raw(good.format(b=2, n=0)),  # an empty dimension
        _sdpa_raw("((2, 8, 64, 64), (2, 8, 64, 64), (2, 8, 64, 64), ((1, 2), (3,)), (), (), ())"),  # Tensor[]
        _sdpa_raw("(2, 8, 64, 64)"),  # not a list of shapes
        _sdpa_raw("((2, 8, 64, 64), (2, 8, 64, 64)\n, (2, 8, 64, 64), (), (), (), ())"),  # a line break
        _sdpa_raw("((2, 8, 64, 64), (2, 8, 64, 64), (2, 8, 64, 64), (), (), (), ())  "),  # trailing space
        _sdpa_raw("((2, 8, 64, 64), (2, 8, 64, 64), (2, 8, 64, 64), (), (), (), (\u0661,))"),  # Arabic digit
        _sdpa_raw("((2, 8, 64, 64), (2, 8, 64, 64), (2, 8, 64, 64), (), (), (), ()"),  # unbalanced
        _sdpa_raw("nan"),
        _sdpa_raw(""),
        _sdpa_raw("(5)"),
        _sdpa_raw("((2, 8, 64, 64), (2, 8, 64, 64), (2, 8, 64, 64), (), (), (), ())", conc="nan"),
    ]
    pt = check_table(rows)
    assert not pt.per_row[:9].any()  # the plain rows are read in bulk
    # (002, 8, 064, 64) reads as (2, 8, 64, 64), like parse_literal's int nest reader
    assert pt.config(11).batch == 2 and pt.config(11).seq_q == 64


def test_quoted_concrete_inputs_fast_reader_agrees_with_parse_literal():
    from sdpa_analyzer.perf_models.literals import parse_literal
    from sdpa_analyzer.perf_models.ops.batch import cells as batch_parse

    rng = random.Random(5)
    alphabet = "ab0.e-+ \t\u2003é()[],{}\"#'\\\n"
    seen = 0
    for _ in range(20000):
        items = ["'" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))) + "'"
                 for _ in range(rng.randint(0, 4))]  # fmt: skip
        text = "(" + rng.choice(["", " "]) + rng.choice([",", ", ", " , "]).join(items) + rng.choice(["", ","]) + ")"
        if batch_parse._QUOTED_TUPLE.fullmatch(text) is None:
            continue
        seen += 1
        try:
            want = parse_literal(text)
        except Exception as exc:  # the fast reader must never accept what literal_eval refuses
            want = exc
        assert tuple(batch_parse._QUOTED.findall(text)) == want, text
    assert seen > 3000


def test_equal_values_of_different_types_are_not_one_structure():
    # 1 == True == 1.0 in Python, but parse_op reads a causal flag True and refuses 1 / 1.0 as is_causal: those rows
    # fit no known signature and are read off their roles, with no causal flag recognized (a warning says so)
    q = T(2, 8, 64, 64)
    rows = [
        make_row("aten::_scaled_dot_product_flash_attention", [q, q, q, S("0."), S(flag), S("False"), S("0.125")])
        for flag in (True, 1, 1.0, "True", True, 1)
    ]
    pt = check_table(rows)
    inferred = [any("no known signature fits" in w for w in ws) for ws in pt.warnings]
    assert inferred == [False, True, True, False, False, True]
    causal = "causal (bottom-right)"
    assert pt.mask_label.tolist() == [causal, "none", "none", causal, causal, "none"]


def _drifted_varlen(n_seqs: int, total: int, longest: int, hq: int, hkv: int) -> Row:
    # aiter::mha_varlen_fwd of a release with one inserted tensor (slot 5): no known signature fits, the slots are
    # read off their roles (ops.infer); max_seqlen (slots 6, 7) changes from call to call
    return make_row(
        "aiter::mha_varlen_fwd",
        [T(total, hq, 128), T(total, hkv, 128), T(total, hkv, 128), T(n_seqs + 1, dtype="int"),
         T(n_seqs + 1, dtype="int"), T(n_seqs + 1, dtype="int"), S(str(longest)), S(str(longest)), S("0"), S("0.0"),
         S("0.088388347648318447"), S("0.0"), S("False"), S("True"), S("-1"), S("-1"), S("False"), S("False")],
    )  # fmt: skip


def test_inferred_signatures_are_one_plan_per_group():
    # 300 calls of one drifted structure (different batch, lengths, heads): one inference, read with numpy
    rng = random.Random(7)
    rows = []
    for _ in range(300):
        n, longest = rng.randint(1, 16), rng.randint(1, 4096)
        rows.append(_drifted_varlen(n, n * longest, longest, rng.choice([32, 64]), rng.choice([8, 32])))
    pt = check_table(rows)
    assert pt.modeled.all() and not pt.per_row.any()
    assert all("no known signature fits" in w[0] for w in pt.warnings)


def test_rows_whose_dims_infer_other_slots_are_parsed_by_parse_op():
    # a forward with an output tensor before q (out, q, k, v, ...): with MHA shapes the first window (out, q, k)
    # agrees, with GQA shapes it does not (k and v differ in heads) and (q, k, v) is taken. One structure, two
    # inferences: the rows that differ from the group's first row are parsed one by one, and every row equals parse_op.
    def row(hkv: int) -> Row:
        q, kv = T(2, 512, 32, 128), T(2, 512, hkv, 128)
        return make_row("aiter::mha_fwd", [q, q, kv, kv, S("0.0"), S("0.088388347648318447"), S("True"), S("-1"),
                                           S("0"), S("False"), S("False")])  # fmt: skip

    rows = [row(32), row(8), row(32), row(8), row(32)]
    pt = check_table(rows)
    assert pt.modeled.all()
    assert pt.per_row.tolist() == [False, True, False, True, False]
