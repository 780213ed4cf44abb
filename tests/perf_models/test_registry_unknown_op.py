"""An op name the registry does not know, modeled from perf_params that hold a full config (the trace reader writes
its linked forward's config and the row's own direction there for a backward launched under a model's own autograd
node). The mechanism is the name's absence from the registry, never a list: the names below are made up, and the
expected configs are written by hand from the perf_params, not taken from the code.

tests/perf_models/conftest.py checks every parse_op call of this module against the batch parser too.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdpa_analyzer.perf_models.config import Alignment, AttentionConfig, Direction, Mask, MaskKind
from sdpa_analyzer.perf_models.ops.batch import parse_ops_table
from sdpa_analyzer.perf_models.ops.types import AttentionType, Source
from sdpa_analyzer.perf_models.registry import parse_op

# the linked forward's config as the trace reader writes it (server/ingest/op_config.perf_params_from_config):
# B2 H8 N128 d64, causal from the bottom right, bf16; plus the row's direction
FWD_PARAMS: dict[str, Any] = {
    "B": 2, "N_Q": 128, "H_Q": 8, "N_KV": 128, "H_KV": 8, "d_h_qk": 64, "d_h_v": 64, "dropout": 0.0,
    "causal": True, "flash_impl": True, "dtype_A_B": ("c10::BFloat16", "c10::BFloat16"),
    "causal_alignment": "bottom_right", "attention_type": "flash",
}
BWD_PARAMS = {**FWD_PARAMS, "direction": "bwd"}


def _expected(direction: Direction, **kw: Any) -> AttentionConfig:
    fields: dict[str, Any] = dict(batch=2, heads_q=8, heads_kv=8, seq_q=128, seq_kv=128, head_dim_qk=64,
                                  head_dim_v=64, dtype_q="bf16", dtype_k="bf16", dtype_v="bf16", direction=direction,
                                  mask=Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT))
    fields.update(kw)
    return AttentionConfig(**fields)


@pytest.mark.parametrize("name", ["MyAttnBackward", "MLAAttentionFnBackward", "model::attn_bwd_v7",
                                  "CompiledFunctionBackward", "autograd::engine::evaluate_function: XBackward"])
def test_unknown_backward_is_modeled_from_its_perf_params(name: str) -> None:
    p = parse_op(name, None, None, None, BWD_PARAMS)
    assert p.ok and p.reason is None
    assert p.config == _expected(Direction.BWD)
    assert p.direction is Direction.BWD and p.source is Source.PERF_PARAMS
    assert p.attention_type is AttentionType.FLASH and p.family is None  # not a library the registry knows
    assert any(name in w and "not in the registry" in w for w in p.warnings)


def test_the_row_states_the_direction_a_forward_too() -> None:
    p = parse_op("model::my_attention", None, None, None, {**FWD_PARAMS, "direction": "fwd"})
    assert p.config == _expected(Direction.FWD) and p.direction is Direction.FWD


def test_a_repr_string_cell_reads_the_same() -> None:
    # a CSV's perf_params cell is the dict's repr
    assert parse_op("MyAttnBackward", None, None, None, repr(BWD_PARAMS)).config == _expected(Direction.BWD)


def test_the_autograd_spec_of_the_type_gives_the_causal_rule() -> None:
    # perf_params with no causal_alignment (the upstream tool's cells): memory_efficient's autograd node reads causal
    # from the top left, flash's from the bottom right; N_Q 64 < N_KV 128 makes the two different masks
    base = {k: v for k, v in BWD_PARAMS.items() if k != "causal_alignment"} | {"N_Q": 64}
    flash = parse_op("X", None, None, None, base)
    eff = parse_op("X", None, None, None, {**base, "attention_type": "memory_efficient"})
    assert flash.config is not None and eff.config is not None
    assert flash.config.mask == Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)
    assert eff.config.mask == Mask(MaskKind.CAUSAL, Alignment.TOP_LEFT)


def test_no_config_in_perf_params_keeps_the_unknown_op_reason() -> None:
    # annotations and hints (no shape key) are no config to fall back on: the reason stays the registry's
    for params in (None, "", {}, {"direction": "bwd"}, {"layer_type": "full_attention", "attention_type": "flash"}):
        p = parse_op("MyAttnBackward", None, None, None, params)
        assert p.reason == "unknown op 'MyAttnBackward': not an attention op in the registry"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"B": 0}, "B=0 is not a positive integer"),
        ({"H_Q": -8}, "H_Q=-8 is not a positive integer"),
        ({"N_Q": "128"}, "N_Q='128' is not a positive integer"),
        ({"d_h_qk": True}, "d_h_qk=True is not a positive integer"),
        ({"d_h_v": 63.5}, "d_h_v=63.5 is not a positive integer"),
        ({"N_KV": None}, "has no N_KV"),
        ({"dtype_A_B": ("c10::Banana", "c10::Banana")}, "does not name a tensor dtype"),
        ({"dtype_A_B": None}, "has no dtype"),
        ({"causal": 0.125}, "causal=0.125 is not True/False"),
        ({"direction": "backward"}, "direction='backward' is not 'fwd' or 'bwd'"),
        ({"direction": None}, "has no direction"),
        ({"attention_type": "paged"}, "attention_type='paged' has no autograd spec"),
        ({"attention_type": "banana"}, "attention_type='banana' is not one of"),
        ({"attention_type": None}, "has no attention_type"),
        ({"window_size": ("a", 3)}, "is not a pair of integers"),
        ({"window_size": (-7, 0)}, "is not a pair of integers"),
        ({"dropout": "0.1"}, "dropout='0.1' is not a number"),
        ({"dropout": 1.5}, "dropout"),
        ({"H_KV": 3}, "inconsistent attention config"),  # 8 query heads over 3 KV heads
        ({"B": "x" * 100_000}, "B='xxxxxxxx"),  # a huge value is quoted short
    ],
)
def test_malformed_perf_params_are_a_one_line_reason(change: dict[str, Any], said: str) -> None:
    p = parse_op("MyAttnBackward", None, None, None, {**BWD_PARAMS, **change})
    assert p.config is None and p.reason is not None
    assert p.reason.startswith("unknown op 'MyAttnBackward': not an attention op in the registry, and its perf_params "
                               "give no config: ")
    assert said in p.reason and "\n" not in p.reason and len(p.reason) < 400


def test_unparseable_perf_params_cell_is_a_one_line_reason() -> None:
    p = parse_op("MyAttnBackward", None, None, None, "{'B': 2, 'N_Q': __import__('os')}")
    assert p.config is None and p.reason is not None
    assert p.reason.startswith("unknown op 'MyAttnBackward'") and "perf_params" in p.reason and "\n" not in p.reason


def test_batch_parser_reads_each_rows_perf_params() -> None:
    """Rows of one unknown op name with other perf_params are other configs (the batch parser groups rows by name:
    a group's first row must not speak for the others)."""
    names = ["MyAttnBackward"] * 4
    params = [None, BWD_PARAMS, {**BWD_PARAMS, "B": 4}, {**BWD_PARAMS, "B": 0}]
    pt = parse_ops_table(names, [None] * 4, [None] * 4, [None] * 4, params)
    assert pt.modeled.tolist() == [False, True, True, False]
    assert pt.config(1) == _expected(Direction.BWD) and pt.config(2) == _expected(Direction.BWD, batch=4)
    assert pt.reason[0] == "unknown op 'MyAttnBackward': not an attention op in the registry"
    assert "B=0 is not a positive integer" in str(pt.reason[3])
