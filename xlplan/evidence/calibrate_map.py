"""The regularised fit behind calibration: the defaults are a prior, the runs move only what they identify.

Notes
-----
Each efficiency is fitted as its logarithm ``u = ln θ``. The objective is the sum of squares of

- each measured figure's ``ln(predicted ÷ measured) ÷ σ``, with σ its measurement spread (:data:`NOISE`), and
- each fitted field's ``(u − u₀) ÷ s``, with ``u₀`` the default's logarithm and ``s`` its stated spread (:data:`PRIOR_SPREAD`),

which is the maximum a-posteriori estimate under log-normal errors and priors. Before fitting, the fields are taken
one by one and a field enters only if the runs constrain it apart from the fields already in: the part
of its scaled sensitivity column (``∂r/∂u × s``) orthogonal to theirs must have a norm of at least
:data:`IDENTIFY_MIN` (the runs then at least halve its prior variance); the efficiency with the longest such column
goes first, the per-step overhead after all of them. A field that fails stays at its default and the
fit says so — one inter-token latency cannot tell bandwidth from the per-step overhead, nor decode MFU from bandwidth.
The uncertainty of each fitted field is the square root of the diagonal of ``(JᵀJ)⁻¹`` at the optimum, ``J`` the
Jacobian of the whole residual vector (figures and prior) in ``u``; a field left at its default keeps its prior spread.

References
----------
Tarantola, *Inverse Problem Theory* (SIAM 2005), §3.2: least squares with a Gaussian prior, and its posterior
covariance ``(GᵀC_d⁻¹G + C_m⁻¹)⁻¹``. Golub and Van Loan, *Matrix Computations* (4th ed.), §5.4.1: QR with column
pivoting for numerical rank, here with the pivot order fixed by :data:`PRIORITY`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xlplan.evidence.bench_conditions import Efficiencies

PRIOR_SPREAD = {"prefill_mfu": 0.35, "decode_mfu": 0.35, "bandwidth_efficiency": 0.25, "step_overhead_s": 0.7,
                "expert_efficiency": 0.5}
"""Spread of each default, as a standard deviation of its logarithm: 0.35 is ×/÷ 1.42 at one sd (MFUs seen on the
corpus run 0.15–0.6); bandwidth efficiency is known closer (STREAM-style kernels reach 0.6–0.92 of the datasheet);
the per-step overhead varies by a factor of two either way between engines and versions (1–12 ms on the corpus);
expert GEMMs by more. [ln units]"""
NOISE = {"output_tok_s": 0.05, "itl_s": 0.05, "ttft_s": 0.15}
"""Spread of a measured figure about the model, as a standard deviation of its logarithm: 5% for throughput and
inter-token latency (repeat runs of ``vllm bench serve`` differ by 1–3%, plus the model's own error); 15% for TTFT,
which mixes prefill with queueing the model takes in coarsely. [ln units]"""
PRIORITY = ("prefill_mfu", "bandwidth_efficiency", "decode_mfu", "expert_efficiency", "step_overhead_s")
"""The order fields are listed in; the overhead comes last because it is offered to the runs only after the
efficiencies, so one batch moves an efficiency and leaves the overhead at its default (the two are not separable
there)."""
IDENTIFY_MIN = 1.0
"""A field is identified when its sensitivity, scaled by its prior spread over the figures' spreads and orthogonal to
the fields already identified, has at least this norm: the runs then at least halve its prior variance. [1]"""
OVERHEAD_FLOOR_S = 0.0005
"""The least per-step overhead a fit may reach: launching a step's kernels, sampling and scheduling take at least
half a millisecond even with CUDA graphs (TensorRT-LLM's best published step overheads are 1–2 ms). [s]"""
MAX_MFU = 0.8
"""A fitted MFU above this is refused: dense BF16/FP8 GEMMs on H100/H200/MI300X reach 0.6–0.75 of peak at best. [fraction]"""
BOUNDS = {"prefill_mfu": (0.02, 1.0), "decode_mfu": (0.02, 1.0), "bandwidth_efficiency": (0.05, 0.92),
          "step_overhead_s": (OVERHEAD_FLOOR_S, 0.05), "expert_efficiency": (0.02, 1.0)}
"""Where a fitted field may go. Bandwidth: no kernel streams HBM faster than ~92% of its datasheet rate (nvbandwidth and
STREAM-style copies on H100/H200 reach 85–92%). [fraction], [s]"""
STEP = 0.02
"""The finite-difference step in ``ln θ`` for the sensitivities. [ln units]"""


class ImplausibleFit(ValueError):
    """A fit that reaches a physically implausible value: the runs need another term than an efficiency.

    ``runs`` names the runs (their sources), ``why`` says what is implausible; ``str()`` joins them.
    """

    def __init__(self, runs: str, why: str):
        super().__init__(f"{runs}: {why}")
        self.runs, self.why = runs, why


@dataclass(frozen=True)
class MapFit:
    """A regularised fit: the efficiencies, which fields the runs identified, and each field's spread."""

    efficiencies: Efficiencies
    identified: tuple[str, ...]  # fields the runs set; the rest stay at the prior
    sd: dict  # field -> standard deviation of ln θ after the fit (the prior's where not identified) [ln units]
    prior: Efficiencies


def _u(eff: Efficiencies, f: str) -> float:
    return math.log(max(getattr(eff, f), BOUNDS[f][0]))


def _with(eff: Efficiencies, fields: tuple[str, ...], u: list[float]) -> Efficiencies:
    return replace(eff, **{f: float(math.exp(x)) for f, x in zip(fields, u)})


def _columns(resid, eff: Efficiencies, fields: tuple[str, ...], r0: list[float]) -> dict[str, list[float]]:
    """Each field's sensitivity column ∂r/∂u (central where the bounds allow), scaled by its prior spread."""
    out = {}
    for f in fields:
        u0 = _u(eff, f)
        lo, hi = (math.log(b) for b in BOUNDS[f])
        up, dn = min(u0 + STEP, hi), max(u0 - STEP, lo)
        if up - dn <= 0:
            out[f] = [0.0] * len(r0)
            continue
        r_up, r_dn = resid(_with(eff, (f,), [up])), resid(_with(eff, (f,), [dn]))
        out[f] = [(a - b) / (up - dn) * PRIOR_SPREAD[f] for a, b in zip(r_up, r_dn)]
    return out


def _identified(resid, eff: Efficiencies, fields: tuple[str, ...]) -> tuple[str, ...]:
    """The fields the runs constrain apart from each other, offered in :data:`PRIORITY` order.

    Parameters
    ----------
    resid : callable
        Efficiencies to the figures' scaled residuals, ``ln(predicted ÷ measured) ÷ σ``. [1]
    eff : Efficiencies
        Where to take the sensitivities (the prior), every field filled.
    fields : tuple of str
        The fields that may be fitted.

    Returns
    -------
    tuple of str
        The identified fields, in :data:`PRIORITY` order. Column-pivoted Gram–Schmidt on the scaled sensitivity
        columns: the efficiency whose column, orthogonal to those already taken, is longest enters next while that
        length is at least :data:`IDENTIFY_MIN`; the per-step overhead is offered only after the efficiencies. [names]
    """
    order = [f for f in PRIORITY if f in fields]
    cols = _columns(resid, eff, tuple(order), resid(eff))
    basis: list[list[float]] = []
    out: list[str] = []
    while order:
        left = {}
        for f in order:
            v = list(cols[f])
            for q in basis:
                d = sum(a * b for a, b in zip(v, q))
                v = [a - d * b for a, b in zip(v, q)]
            left[f] = v
        norm = {f: math.sqrt(sum(a * a for a in v)) for f, v in left.items()}
        efficiencies = [f for f in order if f != "step_overhead_s" and norm[f] >= IDENTIFY_MIN]
        pick = max(efficiencies, key=lambda f: norm[f]) if efficiencies else order[-1]
        order.remove(pick)
        if norm[pick] < IDENTIFY_MIN:
            continue
        basis.append([a / norm[pick] for a in left[pick]])
        out.append(pick)
    out.sort(key=PRIORITY.index)
    return tuple(out)


def map_fit(resid, prior: Efficiencies, fields: tuple[str, ...]) -> MapFit:
    """The maximum a-posteriori efficiencies: the prior moved only in the fields the runs identify.

    Parameters
    ----------
    resid : callable
        Efficiencies to the figures' scaled residuals, ``ln(predicted ÷ measured) ÷ σ`` (σ from :data:`NOISE`). [1]
    prior : Efficiencies
        The defaults, every field filled: the prior's centre.
    fields : tuple of str
        The fields that may be fitted (a dense model's runs never fit the expert efficiency).

    Returns
    -------
    MapFit
        The fitted efficiencies, the fields identified and each field's posterior spread (its prior spread where the
        runs did not identify it). [fraction], [s], [ln units]
    """
    from scipy.optimize import least_squares

    free = _identified(resid, prior, fields)
    sd = {f: PRIOR_SPREAD[f] for f in fields}
    if not free:
        return MapFit(prior, (), sd, prior)
    u0 = [_u(prior, f) for f in free]
    lo = [math.log(BOUNDS[f][0]) for f in free]
    hi = [math.log(BOUNDS[f][1]) for f in free]
    start = [min(max(x, a + 1e-9), b - 1e-9) for x, a, b in zip(u0, lo, hi)]

    def total(u):
        return list(resid(_with(prior, free, list(u)))) + [(x - c) / PRIOR_SPREAD[f] for x, c, f in zip(u, u0, free)]

    sol = least_squares(total, start, bounds=(lo, hi), diff_step=1e-3, x_scale=[PRIOR_SPREAD[f] for f in free],
                        max_nfev=100 * len(free))
    eff = _with(prior, free, list(sol.x))
    sd.update(_posterior_sd(sol.jac, free))
    return MapFit(eff, free, sd, prior)


def _posterior_sd(jac, free: tuple[str, ...]) -> dict[str, float]:
    """√diag((JᵀJ)⁻¹): each fitted field's spread at the optimum (Tarantola §3.2). [ln units]"""
    import numpy as np

    h = np.asarray(jac, dtype=float)
    cov = np.linalg.pinv(h.T @ h)
    return {f: float(math.sqrt(max(cov[k, k], 0.0))) for k, f in enumerate(free)}


def implausible(eff: Efficiencies, free: tuple[str, ...]) -> list[str]:
    """What is implausible in a fit: an MFU above :data:`MAX_MFU`, bandwidth at its ceiling, the overhead at its floor.

    Parameters
    ----------
    eff : Efficiencies
        The fitted efficiencies.
    free : tuple of str
        The fields the fit set (only those are judged).

    Returns
    -------
    list of str
        One phrase per implausible field; empty when the fit is plausible.
    """
    out = []
    for f in ("prefill_mfu", "decode_mfu"):
        if f in free and getattr(eff, f) > MAX_MFU:
            out.append(f"{f.replace('_', ' ').replace('mfu', 'MFU')} {getattr(eff, f):.2f} (above {MAX_MFU:g})")
    if "bandwidth_efficiency" in free and eff.bandwidth_efficiency >= BOUNDS["bandwidth_efficiency"][1] * 0.999:
        out.append(f"bandwidth efficiency {eff.bandwidth_efficiency:.2f} (at its ceiling)")
    if "step_overhead_s" in free and eff.step_overhead_s <= OVERHEAD_FLOOR_S * 1.001:
        out.append(f"per-step overhead {eff.step_overhead_s * 1e3:.2f} ms (at its floor)")
    return out
