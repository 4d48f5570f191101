"""Recalibration from production: the efficiencies that make the serving model reproduce production's derived steps.

Notes
-----
Each scrape interval is an observation (:func:`xlplan.evidence.production.step_observations`): a batch and the mean
inter-token latency, which is the step time derived, not exported, and the mean TTFT where no request waited. The
model's step is the planner's own (:func:`xlplan.evidence.predict.step_s`, the plan's latency step at that batch, on the
plan's replica at its TP), its TTFT the prompt's prefill beside that batch (:func:`xlplan.evidence.predict.prefill_under_load_s`,
the plan's mean prompt less its prefix reuse). The fit is calibration's (:func:`xlplan.evidence.calibrate.plausible_fit`):
the plan's efficiencies are the prior, each figure a log ratio over its spread (5% for ITL, 15% for TTFT), only the
fields the observations identify move, a field that would go implausible is held. Each fitted field carries its 95%
interval, widened by the residuals' scatter where they scatter more than the stated spread (the Birge ratio), so a
noisy production window does not claim a precision it lacks. The model and production **differ** when a plan
efficiency lies outside the recovered interval of a field the observations identify.

References
----------
Tarantola, *Inverse Problem Theory* (SIAM 2005), §3.2: least squares with a Gaussian prior. Birge, "The calculation
of errors by the method of least squares", Phys. Rev. 40 (1932): scaling an interval by √(χ²/ν).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from xlplan.evidence import calibrate, predict
from xlplan.evidence.bench_conditions import Efficiencies
from xlplan.evidence.calibrate_map import NOISE
from xlplan.evidence.production import DERIVED, StepObservation


@dataclass(frozen=True)
class StepCheck:
    """One interval: measured against the model at the plan's and at the recovered efficiencies. Units in comments."""

    source: str  # the interval [text]
    batch: float  # [sequences]
    measured_itl_s: float  # derived step time [s]
    planned_itl_s: float  # the model's step at the plan's efficiencies [s]
    recovered_itl_s: float  # at the recovered ones [s]
    measured_ttft_s: float | None = None  # [s]
    planned_ttft_s: float | None = None  # [s]
    recovered_ttft_s: float | None = None  # [s]


@dataclass(frozen=True)
class Recalibration:
    """The efficiencies production implies, their 95% intervals, and whether the plan's lie outside them."""

    planned: Efficiencies  # the plan's, every field filled
    recovered: Efficiencies  # the plan's moved in what production identifies
    ranges: dict[str, tuple[float, float]]  # field -> 95% interval (the point where not identified) [fraction], [s]
    identified: tuple[str, ...]  # the fields production set [names]
    checks: tuple[StepCheck, ...]
    planned_error: float  # median |model ÷ measured − 1| at the plan's efficiencies [fraction]
    recovered_error: float  # the same at the recovered ones [fraction]
    scatter: float  # Birge ratio √(χ²/ν) the intervals were widened by (at least 1) [1]
    differs: bool  # a plan efficiency outside its recovered interval
    why: str  # which, in words [text]
    notes: tuple[str, ...] = field(default_factory=tuple)  # held fields, unidentified fields, the derivation [text]

    def policy(self) -> dict[str, float]:
        """The identified fields as plan policy entries, to re-plan with. [fraction], [s]

        Returns
        -------
        dict of str to float
            ``{field: recovered value}`` for each identified field. [fraction], [s]
        """
        return {f: float(getattr(self.recovered, f)) for f in self.identified}


def plan_replica(plan, tp: int) -> predict.Replica:
    """The plan's replica at TP ``tp`` as the serving model times it: its scenario, traffic and KV room.

    Parameters
    ----------
    plan : Plan
        The validated plan.
    tp : int
        Tensor-parallel degree of the replicas in production (the plan's Answer's). [GPUs]

    Returns
    -------
    predict.Replica
        The scenario of the plan at its own efficiencies, its traffic, the serving replica and the engine's KV room.
    """
    from xlplan.plan import replica_at_tp, steps
    from xlplan.plan.scenario import resolve

    s = resolve(plan)
    tr = steps.traffic(s)
    r = replica_at_tp.replica(s, tp)
    kv = replica_at_tp.kv_budget_gib(s, tp)
    return predict.Replica(s, plan.hardware.resolve().name, tr, r, kv, replica_at_tp.kv_capacity_tokens(s, tp, kv))


def planned_efficiencies(rep: predict.Replica) -> Efficiencies:
    """The efficiencies the plan runs at, every field filled (prefill and decode MFU follow ``mfu`` where unset).

    Parameters
    ----------
    rep : predict.Replica
        The plan's replica (:func:`plan_replica`).

    Returns
    -------
    Efficiencies
        Prefill and decode MFU, bandwidth efficiency, per-step overhead and expert efficiency. [fraction], [s]
    """
    s = rep.s
    return Efficiencies(s.prefill_mfu if s.prefill_mfu is not None else s.mfu, s.decode_mfu if s.decode_mfu is not None else s.mfu,
                        s.bandwidth_efficiency, s.step_overhead_s, s.expert_efficiency)


def modelled(rep: predict.Replica, eff: Efficiencies, obs: list[StepObservation]) -> tuple[list[float], list[float | None]]:
    """The model's step time and TTFT for each observation's batch at ``eff``. [s]

    Parameters
    ----------
    rep : predict.Replica
        The plan's replica (:func:`plan_replica`).
    eff : Efficiencies
        The efficiencies to time it at, every field filled.
    obs : list of StepObservation
        The derived steps (their batches, and whether they measured TTFT).

    Returns
    -------
    itl_s : list of float
        :func:`xlplan.evidence.predict.step_s` at each batch. [s]
    ttft_s : list of float or None
        :func:`xlplan.evidence.predict.prefill_under_load_s` of the plan's mean computed prompt beside each batch, where the
        observation measured TTFT. [s]
    """
    at = predict.with_efficiencies(rep, eff)
    prompt = rep.tr.prompt_mean * (1.0 - rep.s.prefix_reuse)
    itl = [float(predict.step_s(at, o.batch)) for o in obs]
    ttft = [float(predict.prefill_under_load_s(at, o.batch, prompt)) if o.ttft_s else None for o in obs]
    return itl, ttft


def _residuals(rep, obs: list[StepObservation]):
    def resid(eff: Efficiencies) -> list[float]:
        itl, ttft = modelled(rep, eff, obs)
        out = [math.log(p / o.itl_s) / NOISE["itl_s"] if p > 0 else 5.0 / NOISE["itl_s"] for p, o in zip(itl, obs)]
        return out + [math.log(p / o.ttft_s) / NOISE["ttft_s"] for p, o in zip(ttft, obs) if p is not None and p > 0]
    return resid


def _median_error(resid, eff: Efficiencies, obs: list[StepObservation]) -> float:
    sig = [NOISE["itl_s"]] * len(obs) + [NOISE["ttft_s"]] * sum(1 for o in obs if o.ttft_s)
    errs = [abs(math.exp(x * s) - 1.0) for x, s in zip(resid(eff), sig)]
    return statistics.median(errs) if errs else 0.0


def recalibrate(plan, observations: list[StepObservation] | tuple[StepObservation, ...], tp: int) -> Recalibration:
    """Refit the plan's efficiencies to production's derived steps, with their 95% intervals and a verdict.

    Parameters
    ----------
    plan : Plan
        The validated plan: its model, GPU, engine, lengths and efficiencies (the prior).
    observations : list of StepObservation
        Production's derived steps (:func:`xlplan.evidence.production.step_observations`).
    tp : int
        Tensor-parallel degree of the replicas in production. [GPUs]

    Returns
    -------
    Recalibration
        The recovered efficiencies and intervals, the model against each interval at the plan's and the recovered
        efficiencies, the median errors, and whether the plan's efficiencies lie outside the intervals. [fraction], [s]

    Raises
    ------
    ValueError
        No observations to fit.

    References
    ----------
    Tarantola, *Inverse Problem Theory* (SIAM 2005), §3.2; Birge, Phys. Rev. 40 (1932).
    """
    obs = list(observations)
    if not obs:
        raise ValueError("no production steps to recalibrate from: every scrape interval was left out")
    rep = plan_replica(plan, tp)
    prior = planned_efficiencies(rep)
    fields = calibrate.FIELDS if rep.s.experts else tuple(f for f in calibrate.FIELDS if f != "expert_efficiency")
    resid = _residuals(rep, obs)
    m, held, notes = calibrate.plausible_fit(resid, prior, fields)
    eff = m.efficiencies
    chi = resid(eff)
    dof = max(len(chi) - len(m.identified), 1)
    scatter = max(1.0, math.sqrt(sum(x * x for x in chi) / dof))
    sd = {f: m.sd[f] * scatter for f in m.identified}
    ranges = {f: calibrate.interval(eff, sd, f) for f in fields}
    outside = [f for f in m.identified if not ranges[f][0] <= getattr(prior, f) <= ranges[f][1]]
    why = ("; ".join(f"{f} {getattr(prior, f):.3g} planned, {ranges[f][0]:.3g}–{ranges[f][1]:.3g} in production"
                     for f in outside) or "the plan's efficiencies lie within production's intervals")
    notes = [DERIVED] + [f"production cannot identify {f} apart from the rest: left at the plan's {getattr(prior, f):g}"
                         for f in fields if f not in m.identified and f not in held] + notes
    return Recalibration(prior, eff, ranges, m.identified, _checks(rep, prior, eff, obs), _median_error(resid, prior, obs),
                         _median_error(resid, eff, obs), scatter, bool(outside), why, tuple(notes))


def _checks(rep, prior: Efficiencies, eff: Efficiencies, obs: list[StepObservation]) -> tuple[StepCheck, ...]:
    (pi, pt), (ri, rt) = modelled(rep, prior, obs), modelled(rep, eff, obs)
    return tuple(StepCheck(o.source, o.batch, o.itl_s, a, b, o.ttft_s, c, d)
                 for o, a, b, c, d in zip(obs, pi, ri, pt, rt))
