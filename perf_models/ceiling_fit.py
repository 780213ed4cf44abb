"""Fitting the ceiling model (perf_models.ceiling) to the published points, and leave-one-GPU-out.

Deterministic grid search in log space (squared log error of the predicted over the published efficiency):
σ ∈ [0, 3] by 0.05, k0 ∈ [0, 512] key columns by 16, η ∈ [0.30, 1.00] by 0.005; for a given (σ, k0) the forward
and backward errors depend on their own η only, so each is minimized on its own. Decode: η_mem ∈ [0.50, 1.00] by
0.005, t0 ∈ [0, 40] µs by 0.25, over every memory-bound decode point (all parts: the few decode anchors).

A class fits (σ, k0, η_fwd, η_bwd) when its forward points span two head dims and number at least six; else it
fits only the η of the directions it has points for and takes the rest from the pooled fit over every class
(`ClassParams.pooled` names what was taken); a class without points takes the pooled set whole.

`leave_one_gpu_out` refits without each part's points and predicts them: the error a part with no published kernel
would see. `fit_params_json` is the checked-in file's content (perf_models/data/ceiling_params.json).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.ceiling import (
    KERNEL_CLASSES,
    CalibrationData,
    CallPhysics,
    CeilingParams,
    ClassParams,
    DecodeParams,
    calibration_data,
    predicted_pct,
)

SIGMAS = np.round(np.arange(0.0, 3.0001, 0.05), 4)
K0S = np.arange(0.0, 512.0001, 16.0)
ETAS = np.round(np.arange(0.30, 1.00001, 0.005), 4)
ETA_MEM = np.round(np.arange(0.50, 1.00001, 0.005), 4)
T0S = np.round(np.arange(0.0, 40.0001, 0.25), 4)
MIN_POINTS_FULL = 6


def _sub(ph: CallPhysics, sel: NDArray[np.bool_]) -> CallPhysics:
    return CallPhysics(**{k: getattr(ph, k)[sel] for k in ("useful_us", "executed_us", "per_k0_us", "exp_us",
                                                         "hbm_us", "waves", "is_bwd", "is_decode")})


def _eta_losses(ph: CallPhysics, target: NDArray[np.float64], sigma: float) -> NDArray[np.float64]:
    """Loss over (k0, η) for the rows of one direction."""
    tensor = ph.executed_us[None, :] + K0S[:, None] * ph.per_k0_us[None, :]  # (k0, pts)
    t = tensor[:, None, :] / ETAS[None, :, None] + sigma * ph.exp_us  # (k0, η, pts)
    t = np.maximum(np.maximum(t, tensor[:, None, :]), ph.exp_us)
    t = np.maximum(t, ph.hbm_us) / ph.waves
    pred = np.log(100.0 * ph.useful_us / t)
    return ((pred - target) ** 2).sum(axis=2)


def _fit_compute(ph: CallPhysics, pct: NDArray[np.float64], fixed: ClassParams | None) -> tuple[float, ...]:
    """(η_fwd, η_bwd, σ, k0) minimizing the log error; with `fixed`, σ and k0 are its and only the η are fitted.
    A direction without points keeps `fixed`'s η (NaN without `fixed`)."""
    target = np.log(pct)
    fwd, bwd = ~ph.is_bwd, ph.is_bwd
    sigmas = SIGMAS if fixed is None else np.array([fixed.sigma])
    best = (np.inf, np.nan, np.nan, np.nan, np.nan)
    for s in sigmas:
        total = np.zeros((len(K0S), 1))
        etas = []
        for sel in (fwd, bwd):
            if sel.any():
                loss = _eta_losses(_sub(ph, sel), target[sel], float(s))
                total = total + loss.min(axis=1, keepdims=True)
                etas.append(ETAS[loss.argmin(axis=1)])
            else:
                etas.append(np.full(len(K0S), np.nan))
        if fixed is not None:
            i = int(np.argmin(np.abs(K0S - fixed.k0)))
        else:
            i = int(np.argmin(total[:, 0]))
        if total[i, 0] < best[0]:
            best = (float(total[i, 0]), float(etas[0][i]), float(etas[1][i]), float(s), float(K0S[i]))
    _, ef, eb, s, k = best
    if fixed is not None:
        ef = fixed.eta_fwd if np.isnan(ef) else ef
        eb = fixed.eta_bwd if np.isnan(eb) else eb
        s, k = fixed.sigma, fixed.k0
    return ef, eb, s, k


def _fit_decode(ph: CallPhysics, pct: NDArray[np.float64]) -> tuple[float, float]:
    target = np.log(pct)
    t = ph.hbm_us[None, None, :] / ETA_MEM[:, None, None] + T0S[None, :, None]
    loss = ((np.log(100.0 * ph.hbm_us / t) - target) ** 2).sum(axis=2)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return float(ETA_MEM[i]), float(T0S[j])


def _parts(data: CalibrationData, sel: NDArray[np.bool_]) -> tuple[str, ...]:
    return tuple(sorted(set(data.part[sel].tolist())))


def fit(data: CalibrationData | None = None, exclude_part: str | None = None) -> CeilingParams:
    """Fit every class (and the pool and decode) on the calibration points, leaving out one part's points."""
    data = data or calibration_data()
    keep = np.ones(len(data.pct), dtype=bool) if exclude_part is None else data.part != exclude_part
    ph = data.physics
    comp = keep & ~ph.is_decode
    ef, eb, s, k = _fit_compute(_sub(ph, comp), data.pct[comp], None)
    pooled = ClassParams(ef, eb, s, k, int(comp.sum()), _parts(data, comp), ())
    classes = {}
    for name in KERNEL_CLASSES:
        sel = comp & (data.kernel_class == name)
        if not sel.any():
            classes[name] = ClassParams(ef, eb, s, k, 0, (), ("eta_fwd", "eta_bwd", "sigma", "k0"))
            continue
        fwd_dims = {p.head_dim for p, f in zip(data.points, sel & ~ph.is_bwd, strict=True) if f}
        full = len(fwd_dims) >= 2 and int((sel & ~ph.is_bwd).sum()) >= MIN_POINTS_FULL
        cef, ceb, cs, ck = _fit_compute(_sub(ph, sel), data.pct[sel], None if full else pooled)
        missing = [name for name, has in (("eta_fwd", (sel & ~ph.is_bwd).any()), ("eta_bwd", (sel & ph.is_bwd).any()))
                   if not has]
        taken = () if full else ("sigma", "k0", *missing)
        classes[name] = ClassParams(cef, ceb, cs, ck, int(sel.sum()), _parts(data, sel), taken)
    dec = keep & ph.is_decode
    em, t0 = _fit_decode(_sub(ph, dec), data.pct[dec])
    return CeilingParams(classes, pooled, DecodeParams(em, t0, int(dec.sum()), _parts(data, dec)))


def predict_points(params: CeilingParams, data: CalibrationData | None = None) -> NDArray[np.float64]:
    """The model's efficiency at every calibration point, % of the datasheet roof of its metric."""
    data = data or calibration_data()
    ph = data.physics
    n = len(data.pct)
    eta, sigma, k0 = np.empty(n), np.empty(n), np.empty(n)
    for i, (cls, bwd) in enumerate(zip(data.kernel_class.tolist(), ph.is_bwd.tolist(), strict=True)):
        p = params.classes[cls]
        eta[i], sigma[i], k0[i] = (p.eta_bwd if bwd else p.eta_fwd), p.sigma, p.k0
    return predicted_pct(ph, eta, sigma, k0, params.decode.eta_mem, params.decode.t0_us)


@dataclass(frozen=True)
class PartError:
    part: str
    points: int
    in_sample_median: float  # |predicted / published − 1|, %
    in_sample_max: float
    held_out_median: float
    held_out_max: float
    held_out_bias: float  # median of predicted / published − 1, %


def leave_one_gpu_out(data: CalibrationData | None = None) -> list[PartError]:
    """Per part with published points: the in-sample error (fit on everything) and the held-out error (fit
    without the part, predict its points)."""
    data = data or calibration_data()
    full = predict_points(fit(data), data)
    out = []
    for part in sorted(set(data.part.tolist())):
        sel = data.part == part
        held = predict_points(fit(data, exclude_part=part), data)
        e_in = 100.0 * (full[sel] / data.pct[sel] - 1)
        e_out = 100.0 * (held[sel] / data.pct[sel] - 1)
        out.append(PartError(part, int(sel.sum()), float(np.median(np.abs(e_in))), float(np.abs(e_in).max()),
                             float(np.median(np.abs(e_out))), float(np.abs(e_out).max()), float(np.median(e_out))))
    return out


def logo_markdown(rows: list[PartError]) -> str:
    """The leave-one-GPU-out table of docs/verdicts.md."""
    lines = ["| part | points | in-sample median / max error | held-out median / max error | held-out bias |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.part} | {r.points} | {r.in_sample_median:.1f} / {r.in_sample_max:.1f} % | "
                     f"{r.held_out_median:.1f} / {r.held_out_max:.1f} % | {r.held_out_bias:+.1f} % |")
    return "\n".join(lines)


def fit_params_json(params: CeilingParams | None = None) -> str:
    """The content of perf_models/data/ceiling_params.json for these parameters (default: a fresh fit)."""
    params = params or fit()
    data = calibration_data()
    raw = {
        "about": "Fitted parameters of the ceiling model (perf_models/ceiling.py), written by scripts/fit_ceiling.py "
                 "from the published anchors of perf_models/data/bands.json (perf_models.ceiling_fit; a test refits "
                 "and compares). eta_*: the class's efficiency ceiling of the tensor pipe; sigma: exposed softmax "
                 "time per unit of exp-roof time; k0: per-query-row overhead in key columns; eta_mem, t0_us: decode.",
        "inputs": sorted({f"{p.family}: {p.part}" for p in data.points}),
        "classes": {k: asdict(v) for k, v in params.classes.items()},
        "pooled": asdict(params.pooled),
        "decode": asdict(params.decode),
    }
    return json.dumps(raw, indent=1, ensure_ascii=False) + "\n"


__all__ = ["PartError", "fit", "fit_params_json", "leave_one_gpu_out", "logo_markdown", "predict_points"]
