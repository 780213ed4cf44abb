"""perf_models.ops.hinted: which kernel hints make a lower-bound config, and why the others do not (each case built
by hand from a real kernel name and the grid its launch code gives)."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.kernel_grids import grid_shape_hints
from sdpa_analyzer.perf_models.kernel_shapes import kernel_shape_hints
from sdpa_analyzer.perf_models.ops.hinted import bounded_params
from sdpa_analyzer.perf_models.registry import parse_op

# PyTorch's vendored FA2 forward (the ../shared h100 Qwen trace's kernel), d 64, causal, kBlockM 128
FA2_FWD = ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
           "false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, "
           "false, true, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)")
# FA3's 2024 backward (deepseek-ai/profile-data train.json): TileShape <64, 128, 192>, causal; one head dim in the name
FA3_BWD = (
    "void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2, cute::tuple<cute::C<1>, "
    "cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<128>, cute::C<192> >, cutlass::bfloat16_t, float, "
    "cutlass::arch::Sm90, true, false, false, false, false, true, false, 2, 2, 1, false>, flash::CollectiveEpilogueBwd<"
    "cute::tuple<cute::C<64>, cute::C<128>, cute::C<192> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, false>, "
    "flash::SingleTileScheduler<> > >(flash::FlashAttnBwd<...>::Params)"
)


def _hints(name: str, grid: tuple[int, int, int]) -> dict[str, object]:
    return {**kernel_shape_hints(name), **grid_shape_hints(name, grid)}


def test_fa2_under_a_fixed_length_op_is_bounded_at_the_low_end() -> None:
    # grid (5, 16, 16): 5 tiles of 128 rows -> N in [513, 640]; B 16, H 16
    params, said = bounded_params(_hints(FA2_FWD, (5, 16, 16)), "fwd", "flash", fixed_length_caller=True)
    assert params is not None, said
    assert (params["B"], params["H_Q"], params["H_KV"], params["N_Q"], params["N_KV"]) == (16, 16, 1, 513, 513)
    assert (params["d_h_qk"], params["d_h_v"], params["causal"], params["N_range"]) == (64, 64, True, (513, 640))
    assert "513" in said and "lower bounds" in said
    # read back by the registry as the op's perf_params: a config at the low end, marked a lower bound
    p = parse_op("aten::_scaled_dot_product_flash_attention", None, None, None, params)
    assert p.config is not None and p.config.seq_lower_bound and p.config.seq_q == 513


@pytest.mark.parametrize(("hints", "fixed", "why"), [
    (_hints(FA2_FWD, (5, 16, 16)), False, "variable lengths"),  # FA2 under an op not known to pass fixed lengths
    ({**_hints(FA2_FWD, (5, 16, 16)), "causal": False}, True, "non-causal"),
    (_hints(FA3_BWD, (32, 16, 2)), True, "V's head dim"),  # one head dim in the name: V's may be smaller
    ({**_hints(FA2_FWD, (5, 16, 16)), "qk_dtype": "int8"}, True, "no bound config"),  # P·V's dtype unknown
    ({k: v for k, v in _hints(FA2_FWD, (5, 16, 16)).items() if k != "seq_q_range"}, True, "no range"),
])
def test_no_bound_says_why(hints: dict[str, object], fixed: bool, why: str) -> None:
    direction = "bwd" if "seq_kv_range" in hints else "fwd"  # a backward's grid tiles the keys
    params, said = bounded_params(hints, direction, "flash", fixed_length_caller=fixed)
    assert params is None and why in said, said


@pytest.mark.parametrize("rng", [(600, 700), (640, 513), "513"])
def test_a_range_that_does_not_hold_the_config_is_refused_in_one_line(rng: object) -> None:
    params, _ = bounded_params(_hints(FA2_FWD, (5, 16, 16)), "fwd", "flash", fixed_length_caller=True)
    assert params is not None
    p = parse_op("aten::_scaled_dot_product_flash_attention", None, None, None, {**params, "N_range": rng})
    assert p.config is None and "N_range" in str(p.reason) and "\n" not in str(p.reason)
