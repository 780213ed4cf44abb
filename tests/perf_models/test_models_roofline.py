"""Roofline arrays, anomaly flags, missing data and the one-config model_attention wrapper."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdpa_analyzer.perf_models.config import CAUSAL_BOTTOM_RIGHT, AttentionConfig, PagedInfo, VarlenInfo
from sdpa_analyzer.perf_models.errors import ConfigError, PerfModelError
from sdpa_analyzer.perf_models.hardware import Roof
from sdpa_analyzer.perf_models.model_attention import model_attention
from sdpa_analyzer.perf_models.roofline import roofline


class StubGpu:
    """What model_attention needs from hardware.GpuSpec: the roofs (and a vendor/arch with no bands)."""

    key, vendor, arch = "stub", "unknown", None

    def __init__(self, tflops: float = 1000.0, tbs: float = 2.0, kind: str = "achievable") -> None:
        self.tflops, self.tbs, self.kind = tflops, tbs, kind
        self.asked: list[str] = []

    def specs(self) -> list[str]:
        return ["matrix_bf16"]

    def compute_roof(self, spec: str) -> Roof:
        self.asked.append(spec)
        return Roof(self.tflops, self.kind, "stub", self.tflops)

    def bandwidth_roof(self) -> Roof:
        return Roof(self.tbs, "datasheet", "stub", self.tbs)


def test_roofline_hand_worked() -> None:
    # 1e12 FLOP at 1000 TFLOP/s = 1000 µs; 1e9 B at 2 TB/s = 500 µs → compute-bound, ideal 1000 µs.
    # intensity 1e12/1e9 = 1000 FLOP/B; ridge 1000e12/2e12 = 500 FLOP/B.
    # measured 2000 µs → efficiency 50 %, achieved 1e12/2000e-6 = 500 TFLOP/s and 0.5 TB/s.
    r = roofline([1e12], [1e9], 1000.0, 2.0, [2000.0])
    assert r.compute_time_us[0] == 1000.0 and r.memory_time_us[0] == 500.0 and r.ideal_time_us[0] == 1000.0
    assert r.intensity[0] == 1000.0 and r.ridge[0] == 500.0
    assert r.bound[0] == "compute"
    assert r.efficiency_pct[0] == 50.0
    assert r.achieved_tflops[0] == 500.0 and r.achieved_tbs[0] == 0.5
    assert not r.is_anomaly[0] and not r.anomaly_flag[0]
    assert r.has_measurement[0] and r.measurement_status[0] == "measured"


def test_memory_bound_and_per_row_peaks() -> None:
    # 1e9 FLOP / 100 TFLOP/s = 10 µs; 1e8 B / 1 TB/s = 100 µs → memory-bound, ideal 100 µs.
    r = roofline([1e9, 1e9], [1e8, 1e8], [100.0, 1e6], [1.0, 1.0], [200.0, 200.0])
    assert r.bound.tolist() == ["memory", "memory"]
    assert r.ideal_time_us.tolist() == [100.0, 100.0]
    assert r.efficiency_pct.tolist() == [50.0, 50.0]


def test_anomaly_thresholds() -> None:
    # ideal 1000 µs: measured 1000 → 100 % (not an anomaly), 950 → 105.3 % (anomaly), 900 → 111.1 % (flag)
    r = roofline([1e12] * 3, [1e9] * 3, 1000.0, 2.0, [1000.0, 950.0, 900.0])
    assert r.is_anomaly.tolist() == [False, True, True]
    assert r.anomaly_flag.tolist() == [False, False, True]


def test_missing_measurements_are_marked_not_silent() -> None:
    r = roofline([1e12] * 4, [1e9] * 4, 1000.0, 2.0, [np.nan, 0.0, 2000.0, np.nan])
    assert r.measurement_status.tolist() == ["missing", "zero", "measured", "missing"]
    assert r.has_measurement.tolist() == [False, False, True, False]
    assert np.isnan(r.efficiency_pct[[0, 1, 3]]).all() and r.efficiency_pct[2] == 50.0
    assert not r.is_anomaly.any() and not r.anomaly_flag.any()
    # the model side is still computed
    assert r.ideal_time_us.tolist() == [1000.0] * 4
    none = roofline([1e12], [1e9], 1000.0, 2.0)
    assert none.measurement_status[0] == "missing" and math.isnan(none.efficiency_pct[0])


def test_missing_peak_is_marked() -> None:
    r = roofline([1e12, 1e12], [1e9, 1e9], [np.nan, 1000.0], 2.0, [2000.0, 2000.0])
    assert r.peak_missing.tolist() == [True, False]
    assert r.bound.tolist() == ["unknown", "compute"]
    assert math.isnan(r.efficiency_pct[0]) and r.efficiency_pct[1] == 50.0


def test_zero_bytes_intensity() -> None:
    r = roofline([1e9, 0.0], [0.0, 0.0], 1000.0, 2.0)
    assert r.intensity.tolist() == [math.inf, 0.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"flops": [-1.0]}, "flops"),
        ({"bytes_": [np.nan]}, "bytes"),
        ({"peak_tflops": 0.0}, "peak_tflops"),
        ({"peak_tbs": -2.0}, "peak_tbs"),
        ({"measured_us": [-5.0]}, "measured_us"),
    ],
)
def test_bad_inputs_raise(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {"flops": [1.0], "bytes_": [1.0], "peak_tflops": 1.0, "peak_tbs": 1.0,
                               "measured_us": [1.0]}
    args.update(kwargs)
    with pytest.raises(PerfModelError, match=match):
        roofline(**args)  # type: ignore[arg-type]


def test_model_attention_seed_backward() -> None:
    # seed config bwd: 21,495,808,000 FLOP, 101,056,512 B compulsory.
    # compute 21,495,808,000 FLOP / 1000e12 FLOP/s = 21.495808 µs;
    # memory 101,056,512 B / 2e12 B/s = 50.528256 µs → memory-bound at these stub peaks.
    # measured 101.056512 µs → efficiency 50 %.
    cfg = AttentionConfig(1, 32, 32, 1024, 1024, 128, 128, direction="bwd", mask=CAUSAL_BOTTOM_RIGHT)
    gpu = StubGpu()
    est = model_attention(cfg, gpu, measured_us=101.056512)
    assert set(gpu.asked) == {"matrix_bf16"}
    assert est.flops_useful == 21_495_808_000 and est.bytes_used == est.bytes_compulsory == 101_056_512
    assert est.compute_time_us == pytest.approx(21.495808)
    assert est.memory_time_us == pytest.approx(50.528256)
    assert est.bound == "memory"
    assert est.efficiency_pct == pytest.approx(50.0)
    assert (est.peak_tflops_kind, est.peak_tbs_kind) == ("achievable", "datasheet")
    assert est.band is None and est.band_status == "none"  # a GPU without published bands
    assert est.bwd_convention == "5gemm" and est.tile_family == "fa2" and est.bytes_model == "compulsory"
    assert est.notes == ()


def test_model_attention_tiled_and_missing_time() -> None:
    cfg = AttentionConfig(1, 32, 32, 1024, 1024, 128, 128, direction="bwd", mask=CAUSAL_BOTTOM_RIGHT)
    est = model_attention(cfg, StubGpu(), bytes_model="tiled", block_q=64, block_kv=64,
                          skip_masked_tiles=False, bwd_convention="recompute_fwd")
    assert est.bytes_used == est.bytes_tiled == 721_420_288
    assert est.flops_useful == 25_794_969_600 and est.bwd_convention == "recompute_fwd"
    assert est.measured_us is None and est.efficiency_pct is None and est.achieved_tflops is None
    assert est.measurement_status == "missing"
    assert any("tiled bytes" in n for n in est.notes) and any("missing" in n for n in est.notes)
    assert not est.skip_masked_tiles and (est.block_q, est.block_kv) == (64, 64)


def test_model_attention_anomaly_and_bad_bytes_model() -> None:
    cfg = AttentionConfig(1, 32, 32, 1024, 1024, 128, 128)
    gpu = StubGpu()
    ideal = model_attention(cfg, gpu).ideal_us
    est = model_attention(cfg, gpu, measured_us=ideal / 1.2)
    assert est.is_anomaly and est.anomaly_flag and est.efficiency_pct == pytest.approx(120.0)
    assert any("anomaly" in n for n in est.notes)
    with pytest.raises(ConfigError, match="bytes_model"):
        model_attention(cfg, gpu, bytes_model="l2")


def test_model_attention_varlen_and_paged_notes() -> None:
    v = VarlenInfo(total_q=1000, total_kv=1000, num_seqs=3, max_seqlen_q=600, max_seqlen_kv=600)
    est = model_attention(AttentionConfig(1, 4, 4, 600, 600, 64, 64, varlen=v), StubGpu())
    assert est.kept_pairs == 440_000 and est.kept_pairs_upper == 520_000
    assert any("lower bound" in n for n in est.notes)
    p = PagedInfo(num_requests=4, sum_context_tokens=4000)
    est = model_attention(AttentionConfig(4, 32, 8, 1, 1000, 128, 128, paged=p), StubGpu())
    # decode is memory-bound: 2·4000·8·256 + Q/O bytes vs 2·4000·32·256 FLOP
    assert est.bound == "memory" and est.regime == "memory" and est.flops_useful == 2 * 4000 * 32 * 256
    assert est.kind == "decode"
