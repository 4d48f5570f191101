"""Calibration: the efficiencies (prefill MFU, decode MFU, bandwidth efficiency) that reproduce a benchmark.

Notes
-----
Each run gives a concurrency (or batch) ``C``, mean prompt and output lengths, and
some of: time to first token, inter-token latency, output tokens/s. The fit
inverts :mod:`xlplan.predict`:

- prefill MFU from TTFT, ``2·N·i ÷ (tp·peak·TTFT)``, over the runs at the lowest
  concurrency (where TTFT is the prefill, not a queue);
- each run's inter-token latency (or, offline, ``C ÷ throughput``) is attributed to the
  side of the roofline that binds at the current estimate: on the memory side it gives
  the bandwidth efficiency ``bytes ÷ (bandwidth·ITL)``; on the compute side the decode
  MFU, after taking out the prefill share at the fitted prefill MFU;
- repeated until the attribution no longer changes; the point values are the medians
  and the spread the lowest and highest run.

A side no run reaches keeps the default, and the fit says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

from xlplan.predict import Efficiencies, Hardware, step_times_s
from xlplan.units import TERA

ROUNDS = 8
"""Rounds of re-attribution before giving up on a stable split. [rounds]"""


@dataclass(frozen=True)
class Run:
    """One benchmark run (or measurement) in the units the fit uses."""

    source: str
    concurrency: float  # requests in flight, or the batch offline [requests]
    isl: float  # mean prompt length [tokens]
    osl: float  # mean output length [tokens]
    ttft_s: float | None = None  # mean time to first token [s]
    itl_s: float | None = None  # mean inter-token latency, or batch ÷ throughput offline [s]
    output_tok_s: float | None = None  # [tokens/s]
    hardware: Hardware | None = None  # its own replica, where runs differ (public measurements) [—]


@dataclass(frozen=True)
class Fit:
    """Fitted efficiencies with their spread over the runs."""

    efficiencies: Efficiencies
    prefill_range: tuple[float, float]
    decode_range: tuple[float, float]
    bandwidth_range: tuple[float, float]
    sides: dict[str, str] = field(default_factory=dict)  # run -> 'memory' | 'compute'
    notes: tuple[str, ...] = ()


def _prefill(h: Hardware, r: Run) -> float:
    return 2.0 * h.active_params * r.isl / (h.tp * h.peak_tflops * TERA * r.ttft_s)


def _bandwidth(h: Hardware, r: Run) -> float:
    bytes_ = h.weights_bytes / h.tp + r.concurrency * (r.isl + r.osl / 2.0) * h.kv_bytes_per_token / h.kv_shards
    return bytes_ / (h.hbm_tbps * TERA * r.itl_s)


def _decode(h: Hardware, r: Run, prefill_mfu: float) -> float | None:
    f = 2.0 * h.active_params
    prefill_part = r.concurrency * f * r.isl / r.osl / (h.tp * h.peak_tflops * prefill_mfu * TERA)
    left = r.itl_s - prefill_part
    return r.concurrency * f / (h.tp * h.peak_tflops * TERA * left) if left > 0 else None


def _span(values: list[float], point: float) -> tuple[float, float]:
    return (min(values), max(values)) if values else (point, point)


def fit(h: Hardware | None, runs: list[Run], start: Efficiencies = Efficiencies()) -> Fit:
    """Fit the three efficiencies to the runs, on replica ``h`` (or each run's own)."""
    notes = []
    timed = [r for r in runs if r.ttft_s and r.isl > 0]
    if timed:
        lowest = min(r.concurrency for r in timed)
        prefill_values = [_prefill(r.hardware or h, r) for r in timed if r.concurrency == lowest]
        prefill = statistics.median(prefill_values)
    else:
        prefill_values, prefill = [], start.prefill_mfu
        notes.append(f"no time to first token: prefill MFU left at {prefill:.2f}")
    eff = replace(start, prefill_mfu=prefill)
    decodes: dict[str, float] = {}
    bandwidths: dict[str, float] = {}
    sides: dict[str, str] = {}
    for _ in range(ROUNDS):
        new_sides, decodes, bandwidths = {}, {}, {}
        for r in runs:
            if not r.itl_s:
                continue
            hw = r.hardware or h
            compute, memory = step_times_s(hw, r.concurrency, r.isl, r.osl, eff)
            if memory >= compute:
                new_sides[r.source] = "memory"
                bandwidths[r.source] = _bandwidth(hw, r)
            else:
                value = _decode(hw, r, eff.prefill_mfu)
                if value is not None:
                    new_sides[r.source] = "compute"
                    decodes[r.source] = value
        eff = replace(eff, decode_mfu=statistics.median(decodes.values()) if decodes else start.decode_mfu,
                      bandwidth_efficiency=statistics.median(bandwidths.values()) if bandwidths else start.bandwidth_efficiency)
        if new_sides == sides:
            break
        sides = new_sides
    if not decodes:
        notes.append(f"no run is compute-bound in decode: decode MFU left at {eff.decode_mfu:.2f}")
    if not bandwidths:
        notes.append(f"no run is memory-bound in decode: bandwidth efficiency left at {eff.bandwidth_efficiency:.2f}")
    return Fit(eff, _span(prefill_values, eff.prefill_mfu), _span(list(decodes.values()), eff.decode_mfu),
               _span(list(bandwidths.values()), eff.bandwidth_efficiency), sides, tuple(notes))
