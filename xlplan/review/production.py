"""The review's sections 3 and 5 from production scrapes: the promise read from the latency histograms, and the serving
model against the step times production implies, in the words the review note prints.

Notes
-----
Engines export no step time: it is derived from the inter-token latency against the running-requests gauge
(:func:`xlplan.evidence.production.step_observations`), and the recalibration is :func:`xlplan.evidence.recalibration.recalibrate`, the
same regularised fit as ``xlplan calibrate``. This module only puts their results into the review's two hooks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xlplan.evidence.production import LatencyEvidence, against_promise
from xlplan.evidence.recalibration import Recalibration


@dataclass(frozen=True)
class Latency:
    """Section 3: TTFT and inter-token latency at the promise's percentile in production, and how they were read."""

    ttft_s: float | None  # interpolated within its bucket; None without observations [s]
    itl_s: float | None  # [s/token]
    sentence: str  # the buckets that bound each, against the promise [text]


@dataclass(frozen=True)
class Model:
    """Section 5: the serving model against production's derived step times, and the recalibration."""

    sentence: str  # [text]


def _one(name: str, value: float, low: float, high: float, count: float, target: float) -> str:
    """'p95 TTFT 0.194 s (in the bucket 0.15-0.2 s, 3,306 requests) against 1 s: kept'. [text]"""
    if math.isnan(value):
        return f"{name}: no observations"
    top = "+Inf" if math.isinf(high) else f"{high:g}"
    return (f"{name} {value:.3g} s (in the bucket {low:g}-{top} s, {count:,.0f} observed) against {target:g} s: "
            f"{against_promise(target, low, high)}")


def latency(lat: LatencyEvidence, ttft_target_s: float, itl_target_s: float) -> Latency:
    """Section 3's hook from the histograms' percentiles. [s]

    Parameters
    ----------
    lat : LatencyEvidence
        :func:`xlplan.evidence.production.latency_evidence` at the plan's promise percentile.
    ttft_target_s, itl_target_s : float
        The promise. [s], [s/token]

    Returns
    -------
    Latency
        The interpolated values and a sentence with each bucket (the interpolation's error) and its verdict: kept,
        broken, or undecided where the target falls inside the bucket.
    """
    p = f"p{lat.percentile:g}"
    parts = [_one(f"{p} TTFT", lat.ttft_s, lat.ttft_low_s, lat.ttft_high_s, lat.ttft_count, ttft_target_s),
             _one(f"{p} inter-token", lat.itl_s, lat.itl_low_s, lat.itl_high_s, lat.itl_count, itl_target_s)]
    def value(x: float) -> float | None:
        return None if math.isnan(x) else x

    return Latency(value(lat.ttft_s), value(lat.itl_s),
                   "; ".join(parts) + " (interpolated within the histograms' buckets; the bucket is the error)"
                   + ("; " + "; ".join(lat.notes) if lat.notes else ""))


def model(fit: Recalibration, intervals: int) -> Model:
    """Section 5's hook from a recalibration. [text]

    Parameters
    ----------
    fit : Recalibration
        :func:`xlplan.evidence.recalibration.recalibrate` on production's derived steps.
    intervals : int
        Scrape intervals the steps come from. [intervals]

    Returns
    -------
    Model
        The model's error at the plan's and at the recovered efficiencies, each identified efficiency with its
        interval, and whether the plan's lie outside them.
    """
    fields = "; ".join(f"{f} {getattr(fit.planned, f):.3g} planned, {getattr(fit.recovered, f):.3g} "
                       f"({fit.ranges[f][0]:.3g}–{fit.ranges[f][1]:.3g}) in production" for f in fit.identified)
    verdict = ("the model and production differ (a planned efficiency outside production's interval): the re-plan uses "
               "the recovered efficiencies" if fit.differs else "the plan's efficiencies lie within production's intervals")
    return Model(f"step times derived from the inter-token latency against the running-requests gauge over {intervals} "
                 f"scrape intervals (engines export none); median error {fit.planned_error:.1%} at the plan's efficiencies, "
                 f"{fit.recovered_error:.1%} recalibrated (the same regularised fit as calibrate); {fields or 'none identified'}; "
                 f"{verdict}")
