"""Throughput of the vectorized perf models: N random configs (built as arrays) → estimate_work, then the verdicts
(assess: roofs, roofline, utilizations, regime, bands) and every catalogue output (row_outputs: what-ifs included),
on an H100 SXM.

Run: .venv/bin/python bench/bench_perf_models.py [N]   (default 1,000,000; target < 1 s on 2 cores)

The mix is roughly what traces hold: all four mask kinds, forward and backward, MHA/GQA/MQA, head dims
64–256 (MLA 192/128 included), bf16/fp16/fp8/fp32, 10 % varlen rows and 5 % paged decode rows.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from sdpa_analyzer.perf_models.assess import assess
from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.hardware import get_gpu
from sdpa_analyzer.perf_models.roofline import roofline
from sdpa_analyzer.perf_models.row_outputs import row_outputs
from sdpa_analyzer.perf_models.table import ConfigTable


def random_table(n: int, seed: int = 0) -> ConfigTable:
    rng = np.random.default_rng(seed)
    heads_kv = rng.choice([1, 2, 4, 8, 16, 32], n)
    group = rng.choice([1, 1, 2, 4, 8], n)
    dims = np.array([[64, 64], [96, 96], [128, 128], [192, 128], [256, 256]])[rng.integers(0, 5, n)]
    seq_q = rng.integers(1, 32768, n)
    seq_kv = np.where(rng.random(n) < 0.7, seq_q, rng.integers(1, 65536, n))
    mask_code = rng.integers(0, 4, n)
    window = mask_code == 3
    elem = rng.choice([1.0, 2.0, 2.0, 2.0, 4.0], n)
    spec = np.where(elem == 1.0, "matrix_fp8", np.where(elem == 4.0, "matrix_fp32", "matrix_bf16"))
    spec = spec.astype(object)

    varlen = rng.random(n) < 0.10
    paged = ~varlen & (rng.random(n) < 0.05)
    num_seqs = np.where(varlen, rng.integers(1, 64, n), 0)
    max_len = rng.integers(1, 8192, n)
    total = num_seqs * np.maximum(1, (max_len * rng.uniform(0.3, 1.0, n)).astype(np.int64))
    total = np.maximum(total, max_len)
    num_requests = np.where(paged, rng.integers(1, 256, n), 0)
    sum_ctx = np.where(paged, num_requests * rng.integers(1, 8192, n), 0)
    return ConfigTable.from_arrays(
        batch=rng.integers(1, 16, n),
        heads_q=heads_kv * group,
        heads_kv=heads_kv,
        seq_q=seq_q,
        seq_kv=seq_kv,
        head_dim_qk=dims[:, 0],
        head_dim_v=dims[:, 1],
        elem_q=elem, elem_k=elem, elem_v=elem, elem_o=elem, elem_kv_cache=elem,
        compute_spec=spec,
        is_bwd=~paged & (rng.random(n) < 0.5),
        mask_code=np.where(paged, 0, mask_code),
        window_left=np.where(window & ~paged, rng.integers(-1, 4096, n), -1),
        window_right=np.where(window & ~paged, rng.integers(-1, 64, n), -1),
        num_seqs=num_seqs,
        total_q=np.where(varlen, total, 0),
        total_kv=np.where(varlen, total, 0),
        max_q=np.where(varlen, max_len, 0),
        max_kv=np.where(varlen, max_len, 0),
        sum_ctx=sum_ctx,
        num_requests=num_requests,
        sum_query_tokens=0,
    )


GPU = get_gpu("h100-sxm")


def run_once(table: ConfigTable) -> tuple[float, float, float, float]:
    """(estimate_work s, roofline s, CPU s of both, median efficiency %)."""
    c0, t0 = time.process_time(), time.perf_counter()
    work = estimate_work(table)  # as before the split-KV term: comparable with the earlier runs
    t1 = time.perf_counter()
    measured = work.bytes_compulsory / 3e6 + work.flops_useful / 5e8  # a plausible kernel time in µs
    rf = roofline(work.flops_useful, work.bytes_compulsory, 989.4, 3.35, measured)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, time.process_time() - c0, float(np.nanmedian(rf.efficiency_pct))


def run_verdicts(table: ConfigTable) -> float:
    """Seconds of the rest of a records pass: the verdicts (assess) and every catalogue output (row_outputs)."""
    work = estimate_work(table, num_sms=GPU.sm_count)
    measured = work.bytes_compulsory / 3e6 + work.flops_useful / 5e8
    t0 = time.perf_counter()
    a = assess(table, work, GPU, measured)
    row_outputs(table, work, a, GPU, "compulsory")
    return time.perf_counter() - t0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    t0 = time.perf_counter()
    table = random_table(n)
    print(f"rows: {n:,}; build table (from_arrays, incl. validation): {time.perf_counter() - t0:.3f} s")
    totals = []
    for i in range(runs):
        est, roof, cpu, eff = run_once(table)
        totals.append(est + roof)
        print(f"run {i + 1}: estimate_work {est:.3f} s + roofline {roof:.3f} s = {est + roof:.3f} s "
              f"wall ({cpu:.3f} s CPU); median efficiency {eff:.1f} %")
    print(f"estimate_work + roofline, 1M-row target < 1 s: first {totals[0]:.3f} s, best {min(totals):.3f} s")
    verdicts = [run_verdicts(table) for _ in range(runs)]
    print(f"then assess + row_outputs (bands, utilizations, what-ifs): best {min(verdicts):.3f} s (no target: "
          "reported so a slower verdict path shows)")


if __name__ == "__main__":
    main()
