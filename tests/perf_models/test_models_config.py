"""AttentionConfig validates itself: every bad field raises one ConfigError naming the field, the value and
what is allowed; the registry refuses K/V shapes that disagree, with a reason."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models import AttentionConfig, ConfigError, Mask, PagedInfo, VarlenInfo
from sdpa_analyzer.perf_models.errors import UnknownArchError
from sdpa_analyzer.perf_models.hardware import get_gpu
from sdpa_analyzer.perf_models.registry import parse_op

GOOD = {"batch": 2, "heads_q": 32, "heads_kv": 8, "seq_q": 128, "seq_kv": 128, "head_dim_qk": 64, "head_dim_v": 64}


def bad(**kw: object) -> str:
    with pytest.raises(ConfigError) as err:
        AttentionConfig(**{**GOOD, **kw})  # type: ignore[arg-type]
    msg = str(err.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("field", sorted(GOOD))
@pytest.mark.parametrize("value", [0, -4])
def test_non_positive_dims(field: str, value: int) -> None:
    assert bad(**{field: value}) == f"{field}={value!r} is invalid: expected a positive integer"


def test_non_integer_dims() -> None:
    assert "batch=2.5" in bad(batch=2.5)
    assert "seq_q=True" in bad(seq_q=True)  # a bool is not a length


def test_heads_q_not_divisible_by_heads_kv() -> None:
    msg = bad(heads_kv=7)
    assert msg.startswith("heads_kv=7 is invalid") and "heads_q=32" in msg


def test_unknown_dtype_names_the_allowed_ones() -> None:
    msg = bad(dtype_q="fp7")
    assert msg.startswith("dtype_q='fp7' is invalid") and "bf16" in msg and "fp8_e4m3" in msg
    assert bad(dtype_kv_cache="int4").startswith("dtype_kv_cache='int4' is invalid")


def test_dtype_spellings_from_traces() -> None:
    cfg = AttentionConfig(**GOOD, dtype_q="c10::BFloat16", dtype_kv_cache="c10::Float8_e4m3fn")
    assert (cfg.dtype_q, cfg.dtype_k, cfg.kv_dtype) == ("bf16", "bf16", "fp8_e4m3")


def test_other_fields() -> None:
    assert bad(dropout_p=1.0).startswith("dropout_p=1.0 is invalid")
    assert bad(direction="sideways").startswith("direction='sideways' is invalid")
    with pytest.raises(ConfigError, match=r"mask.window_left=-2"):
        Mask("sliding_window", window_left=-2)
    with pytest.raises(ConfigError, match=r"varlen.max_seqlen_q=600 is invalid: expected <= total_q \(500\)"):
        VarlenInfo(total_q=500, total_kv=500, num_seqs=4, max_seqlen_q=600, max_seqlen_kv=200)
    with pytest.raises(ConfigError, match=r"paged.context_lens"):
        PagedInfo(num_requests=2, sum_context_tokens=10, context_lens=(3, 4))


def test_unknown_arch_lists_known_names() -> None:
    with pytest.raises(UnknownArchError) as err:
        get_gpu("rtx-9999")
    assert "arch='rtx-9999' is unknown" in str(err.value) and "rtx-4090" in str(err.value)  # the nearest keys


def test_kv_shape_mismatch_is_a_reason_not_a_config() -> None:
    # aten flash SDPA, BHND: K has 8 heads but V has 4 -> K/V disagree
    p = parse_op(
        "aten::_scaled_dot_product_flash_attention",
        "((2, 32, 128, 64), (2, 8, 128, 64), (2, 4, 128, 64), (), (), (), ())",
        "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar', 'Scalar')",
        "('', '', '', '0.', 'False', 'False', '0.125')",
    )
    assert p.config is None and p.reason and "disagree" in p.reason and "\n" not in p.reason
