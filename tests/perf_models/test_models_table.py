"""ConfigTable construction (from configs and from arrays), validation and the tile-size defaults."""

from __future__ import annotations

import numpy as np
import pytest

from sdpa_analyzer.perf_models.config import (
    CAUSAL_TOP_LEFT,
    AttentionConfig,
    Mask,
    MaskKind,
    PagedInfo,
    VarlenInfo,
)
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.masks import MASK_CAUSAL_TL, MASK_NONE, MASK_WINDOW
from sdpa_analyzer.perf_models.table import ConfigTable
from sdpa_analyzer.perf_models.tiles import default_blocks, normalize_family


def test_from_configs_columns() -> None:
    cfgs = [
        AttentionConfig(2, 32, 8, 512, 2048, 192, 128, dtype_q="bf16", dtype_k="fp8", direction="bwd",
                        mask=CAUSAL_TOP_LEFT),
        AttentionConfig(1, 8, 8, 1, 1, 64, 64, dtype_q="fp32",
                        mask=Mask(MaskKind.SLIDING_WINDOW, window_left=128, window_right=0),
                        varlen=VarlenInfo(100, 120, 3, 50, 60)),
        AttentionConfig(4, 16, 2, 1, 900, 128, 128, dtype_kv_cache="fp8_e5m2",
                        paged=PagedInfo(num_requests=4, sum_context_tokens=900, sum_query_tokens=6)),
    ]
    t = ConfigTable.from_configs(cfgs)
    assert len(t) == 3
    assert t.heads_q.tolist() == [32, 8, 16] and t.heads_kv.tolist() == [8, 8, 2]
    assert t.elem_q.tolist() == [2.0, 4.0, 2.0] and t.elem_k.tolist() == [1.0, 4.0, 2.0]
    assert t.elem_kv_cache.tolist() == [1.0, 4.0, 1.0]
    assert t.is_bwd.tolist() == [True, False, False]
    assert t.mask_code.tolist() == [MASK_CAUSAL_TL, MASK_WINDOW, MASK_NONE]
    assert t.window_left.tolist() == [-1, 128, -1] and t.window_right.tolist() == [-1, 0, -1]
    assert t.num_seqs.tolist() == [0, 3, 0] and t.total_kv.tolist() == [0, 120, 0]
    assert t.max_kv.tolist() == [0, 60, 0]
    assert t.sum_ctx.tolist() == [0, 0, 900] and t.sum_query_tokens.tolist() == [0, 0, 6]
    assert t.compute_spec.tolist() == ["matrix_bf16", "matrix_fp32", "matrix_bf16"]
    assert t.is_varlen.tolist() == [False, True, False] and t.paged_rows.tolist() == [2]
    sub = t.take([2])
    assert len(sub) == 1 and sub.sum_ctx.tolist() == [900]
    assert len(t.rows(slice(0, 2))) == 2
    assert len(ConfigTable.from_configs([])) == 0


def test_from_arrays_defaults_and_broadcast() -> None:
    t = ConfigTable.from_arrays(batch=1, heads_q=[8, 16], heads_kv=8, seq_q=128, seq_kv=[128, 256],
                                head_dim_qk=64, head_dim_v=64, dtype="fp16")
    assert len(t) == 2
    assert t.elem_o.tolist() == [2.0, 2.0] and t.compute_spec.tolist() == ["matrix_fp16"] * 2
    assert t.window_left.tolist() == [-1, -1] and not t.is_bwd.any() and not t.is_paged.any()


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"heads_kv": 5}, "heads_kv"),
        ({"seq_q": 0}, "seq_q"),
        ({"mask_code": 5}, "mask_code"),
        ({"window_left": 4}, "window_left"),  # windows only on window rows
        ({"elem_q": 0.0}, "elem_q"),
        ({"sum_ctx": 10, "num_requests": 0}, "num_requests"),
        ({"sum_ctx": 10, "num_requests": 2, "is_bwd": True}, "is_bwd"),
        ({"num_seqs": 2, "total_q": 10, "total_kv": 10, "max_q": 11, "max_kv": 5}, "max_q"),
        ({"bogus": 1}, "column"),
        ({"seq_q": [1, 2, 3]}, "length 3"),  # columns of different lengths
    ],
)
def test_from_arrays_validation(override: dict[str, object], field: str) -> None:
    cols: dict[str, object] = {"batch": [1, 1], "heads_q": 12, "heads_kv": 4, "seq_q": 64, "seq_kv": 64,
                               "head_dim_qk": 64, "head_dim_v": 64}
    cols.update(override)
    with pytest.raises(ConfigError, match=field):
        ConfigTable.from_arrays(**cols)  # type: ignore[arg-type]


def test_missing_shape_column() -> None:
    with pytest.raises(ConfigError, match="batch"):
        ConfigTable.from_arrays(heads_q=1, heads_kv=1, seq_q=1, seq_kv=1, head_dim_qk=8, head_dim_v=8)


class TestDefaultBlocks:
    def one(self, family: str | None, dqk: int, dv: int, bwd: bool, masked: bool = False,
            fp8: bool = False) -> tuple[int, int]:
        q, k = default_blocks(family, np.array([dqk]), np.array([dv]), np.array([bwd]), masked, fp8)
        return int(q[0]), int(k[0])

    def test_fa2(self) -> None:
        # flash_fwd_launch_template.h / flash_bwd_launch_template.h (attention-research §2.3)
        assert self.one("fa2", 64, 64, False) == (128, 128)
        assert self.one("fa2", 128, 128, False) == (128, 64)
        assert self.one("fa2", 128, 128, True) == (64, 128)
        assert self.one("fa2", 256, 256, True) == (64, 64)
        assert self.one(None, 128, 128, True) == (64, 128)  # unknown family → fa2

    def test_fa3(self) -> None:
        assert self.one("fa3", 128, 128, False) == (128, 176)
        assert self.one("fa3", 128, 128, False, masked=True) == (128, 128)
        assert self.one("fa3", 128, 128, False, fp8=True) == (128, 224)
        assert self.one("fa3", 128, 128, True) == (80, 128)
        assert self.one("fa3", 128, 128, True, masked=True) == (64, 128)
        assert self.one("fa3", 192, 128, False) == (128, 128)  # MLA prefill, d_v ≤ 128
        assert self.one("fa3", 192, 192, False) == (128, 112)
        assert self.one("fa3", 64, 64, False, masked=True) == (192, 128)

    def test_ck_triton_and_buckets(self) -> None:
        assert self.one("ck", 128, 128, False) == (128, 128)
        assert self.one("aiter", 128, 128, True) == (64, 128)
        assert self.one("ck", 32, 32, True) == (128, 128)
        assert self.one("triton", 128, 128, True) == (128, 128)
        assert self.one("triton", 64, 64, False) == (128, 64)
        # 80 → the 96 bucket; 512 → the 256 bucket
        assert self.one("fa2", 80, 80, True) == (64, 128)
        assert self.one("fa2", 512, 512, False) == (128, 64)

    def test_unknown_family(self) -> None:
        assert normalize_family("FA3") == "fa3"
        with pytest.raises(ConfigError, match="family"):
            normalize_family("xformers")
