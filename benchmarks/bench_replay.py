"""The replay of fixed-concurrency rows (xlplan.evidence.replay): its time per row beside the closed form's, its error
beside the closed form's on the measured rows, and how far the harness's unstated assumptions move it.

    .venv/bin/python benchmarks/bench_replay.py            # prints the table; benchmarks/bench_replay.txt holds a run

Every fixed-concurrency point of the corpus and of the measured sample (each point once) is replayed at the shipped
defaults as the benchmark ran (its stated or assumed harness), then with the harness's unstated assumptions changed
one at a time (xlplan.evidence.replay.sensitivity: the median, a drained warm-up, 5 and 50 rounds) on every fourth
point. Reported: time per row beside the closed form's (xlplan.evidence.predict.steady_state, what the fits work on;
`validate` scores the replay); the median |error| of TTFT and inter-token latency by engine, replay and closed form, both at the
shipped defaults (fitted on the corpus through the closed form; the sample's rows are out of sample); and the median,
90th percentile and largest effect of each assumption on TTFT, inter-token latency and output tokens/s.

"""

from __future__ import annotations

import statistics
import time

from xlplan.evidence import predict, replay
from xlplan.evidence.bench_conditions import replace_concurrency
from xlplan.io import silicon_sample
from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS, measured_rows
from xlplan.plan.scenario import PlanningError


def points() -> list:
    """(replica, conditions, measured row) of every fixed-concurrency point the model predicts, each once. [—]"""
    rows = measured_rows(read_measurements(CORPUS)) + silicon_sample.measured_rows(silicon_sample.read_sample())
    out, seen = [], set()
    for m in rows:
        if not m.category.startswith("online") or m.conditions is None or not m.concurrency or m.speculative:
            continue
        if (m.point or m.id) in seen or not m.conditions.isl or not m.conditions.osl:
            continue
        seen.add(m.point or m.id)
        c = replace_concurrency(m.conditions, m.concurrency)
        try:
            rep = predict.replica_for(c)
            replay.closed_loop(rep, c, replay.harness_for(c))  # the weights leave a cache (else validate skips it)
        except PlanningError:
            continue
        out.append((rep, c, m))
    return out


def _spread(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs):.2%}, p90 {xs[int(0.9 * (len(xs) - 1))]:.2%}, max {xs[-1]:.2%}"


def main() -> None:
    pts = points()
    for rep, c, _ in pts[:3]:  # load the compiled loop before timing
        replay.closed_loop(rep, c, replay.harness_for(c))
    start = time.perf_counter()
    replayed = [replay.closed_loop(rep, c, replay.harness_for(c)) for rep, c, _ in pts]
    replay_s = (time.perf_counter() - start) / len(pts)
    start = time.perf_counter()
    closed = [predict.steady_state(c) for _, c, _ in pts]
    closed_form_s = (time.perf_counter() - start) / len(pts)
    print(f"{len(pts):,} fixed-concurrency points (corpus and measured sample, each once)")
    print(f"time per row: the replay {replay_s * 1e3:.2f} ms (compiled loop); the closed form {closed_form_s * 1e3:.3f} ms")
    errors: dict = {}
    for (_, c, m), r, f in zip(pts, replayed, closed):
        for label, measured, key in (("TTFT", m.ttft_ms, "ttft_s"), ("inter-token latency", m.itl_ms, "itl_s")):
            if measured and getattr(r, key) < float("inf"):
                errors.setdefault((c.engine, label), []).append((abs(getattr(r, key) * 1e3 / measured - 1),
                                                                 abs(getattr(f, key) * 1e3 / measured - 1)))
    print("median |error| at the shipped defaults, by engine: replay · closed form (points)")
    for (engine, label), pairs in sorted(errors.items()):
        print(f"  {engine:7} {label:20} {statistics.median(p[0] for p in pairs):6.1%} · "
              f"{statistics.median(p[1] for p in pairs):6.1%} ({len(pairs):,})")
    effects = {}
    for rep, c, _ in pts[::4]:
        out = replay.sensitivity(rep, c)
        base = out.pop("default")
        for k, o in out.items():
            for field in ("ttft_s", "itl_s", "output_tok_s"):
                a, b = getattr(base, field), getattr(o, field)
                if 0 < a < float("inf") and b < float("inf"):
                    effects.setdefault((k, field), []).append(abs(b / a - 1))
    print(f"the harness's unstated assumptions, each changed alone (every fourth point, {len(pts[::4]):,}):")
    for (k, field), xs in effects.items():
        print(f"  {k:10} {field:13} {_spread(xs)}")


if __name__ == "__main__":
    main()
