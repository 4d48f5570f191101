"""xlplan simulate: the plan's fleet at peak, by discrete-event simulation of continuous batching."""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from xlplan.cli.app import PLAN_ARG, app
from xlplan.cli.app import load as _load
from xlplan.io.errors import InputError
from xlplan.io.outputs import PNG, Output, check_outputs, write_outputs


def check_run_options(minutes: float | None, seed: int, burst: float) -> None:
    """One line naming the option for a run length, seed or burstiness no run can have."""
    from xlplan.simulate import MAX_MINUTES

    if minutes is not None and not (math.isfinite(minutes) and 0 < minutes <= MAX_MINUTES):
        raise InputError("--minutes", [f"got {minutes:g}; expected a number of minutes above 0 and at most {MAX_MINUTES:g}"])
    if seed < 0:
        raise InputError("--seed", [f"got {seed}; expected a whole number 0 or above"])
    if not (math.isfinite(burst) and 0 < burst <= 100):
        raise InputError("--burst", [(f"got {burst:g}; expected the squared coefficient of variation of the gaps between "
                                     "arrivals, above 0 and at most 100 (1: Poisson, 4: bursty)")])


def _workload(s, plan, minutes, seed, burst, log, resample, columns):
    """(workload, minutes, arrivals text) for the run: Poisson/gamma at the plan's peak, or from a request log."""
    from xlplan import simulate as sim

    max_context = plan.model.resolve().max_context_tokens
    if log is None or resample:
        minutes = sim.run_minutes(s.peak_rps) if minutes is None else minutes
        expected = s.peak_rps * minutes * 60.0
        if sim.too_many_requests(expected):
            raise InputError("--minutes", [(f"got {minutes:g}: at {s.peak_rps:,.6g} requests/s that is {expected:,.0f} requests; "
                                           f"expected at most {sim.MAX_REQUESTS:,} in one run (fewer minutes)")])
    if log is None:
        return sim.workload_for(s, minutes, seed, burst, max_context), minutes, None
    from xlplan.io.extras import require

    require("pandas", command="simulate --log")
    from xlplan.io.logs import parse_columns, read_logs

    req = read_logs([log], parse_columns(columns))
    if resample:
        wl = sim.resampled_workload(s, req.prompt, req.output, minutes * 60.0, seed, burst)
        return wl, minutes, f"arrivals at the plan's peak, lengths resampled from {log}"
    minutes = sim.MIN_MINUTES if minutes is None else minutes
    wl = sim.replayed_workload(req.t_s, req.prompt, req.output, minutes)
    if len(wl.arrival_s) > sim.MAX_REQUESTS:
        raise InputError("--minutes", [(f"the busiest {minutes:g} minutes of {log} hold {len(wl.arrival_s):,} requests; "
                                       f"expected at most {sim.MAX_REQUESTS:,} (fewer minutes)")])
    span_min = max(float(wl.arrival_s[-1]) / 60.0, 1.0 / 60.0) if len(wl.arrival_s) else 0.0
    if len(wl.arrival_s) < 2:
        raise InputError(str(log), [f"{len(wl.arrival_s)} request(s) to replay; expected a log with at least 2"])
    return wl, min(minutes, span_min), f"the busiest {min(minutes, span_min):.3g} minutes of {log}, replayed"


def _quantiles(q) -> dict:
    return {"p50": q.p50, "p95": q.p95, "p99": q.p99}


def result_json(r) -> dict:
    """One run as the issue's JSON keys (units in the names). [dict]"""
    return {
        "gpus": r.gpus, "replicas": r.replicas, "tp": r.tp, "requests": r.requests, "simulated_s": r.simulated_s,
        "ttft_s": _quantiles(r.ttft_s), "itl_s": _quantiles(r.itl_s), "tpot_s": _quantiles(r.tpot_s),
        "mean_in_flight": r.mean_in_flight, "mean_time_in_system_s": r.mean_time_in_system_s,
        "kv_utilisation": {"mean": r.kv_utilisation.mean, "p95": r.kv_utilisation.p95, "max": r.kv_utilisation.max},
        "preemptions": r.preemptions, "meets_promise": r.meets_promise, "percentile": r.percentile,
        "ttft_at_percentile_s": r.ttft_at_percentile_s, "itl_at_percentile_s": r.itl_at_percentile_s,
        "arrival_rate_rps": r.arrival_rate_rps, "stable": r.stable, "unfinished": r.unfinished,
    }


def _ms(x: float) -> str:
    """23 ms, 1,250 ms, 182 s. [text]"""
    if not math.isfinite(x):
        return "—"
    return f"{x * 1000:,.0f} ms" if x < 10 else f"{x:,.0f} s"


def _lines(r, s) -> list[str]:
    q = f"p{r.percentile:g}"
    ok = "keeps" if r.meets_promise else "misses"
    return [
        (f"{r.gpus} GPU{'' if r.gpus == 1 else 's'} = {r.replicas} replica{'' if r.replicas == 1 else 's'} of TP {r.tp}: {r.requests:,} requests measured over {r.simulated_s / 60:g} min "
        f"(arrived {r.arrival_rate_rps:,.2f} req/s)"),
        f"  TTFT        p50 {_ms(r.ttft_s.p50)}  p95 {_ms(r.ttft_s.p95)}  p99 {_ms(r.ttft_s.p99)}   (target {_ms(s.ttft_s)})",
        f"  inter-token p50 {_ms(r.itl_s.p50)}  p95 {_ms(r.itl_s.p95)}  p99 {_ms(r.itl_s.p99)}   (target {_ms(s.itl_s)})",
        f"  TPOT        p50 {_ms(r.tpot_s.p50)}  p95 {_ms(r.tpot_s.p95)}  p99 {_ms(r.tpot_s.p99)}",
        (f"  in flight {r.mean_in_flight:,.1f} on average; time in system {r.mean_time_in_system_s:,.2f} s; KV cache "
        f"{r.kv_utilisation.mean:.0%} mean, {r.kv_utilisation.p95:.0%} p95, {r.kv_utilisation.max:.0%} max; "
        f"{r.preemptions:,} preemption{'' if r.preemptions == 1 else 's'}"),
        f"  {ok} the promise at {q}" + ("" if r.stable else " (p95 TTFT still moving between the run's halves: "
                                                               "overloaded, or run longer with --minutes)"),
    ]


@app.command("simulate")
def simulate_cmd(
    plan_file: Path | None = PLAN_ARG,
    gpus: int | None = typer.Option(None, "--gpus", help="GPUs serving the peak, whole replicas of the closed form's TP (default: the closed form's load, the fleet `plan` simulates)."),
    minutes: float | None = typer.Option(None, "--minutes", help="Minutes of arrivals, warm-up included (default: max(10, 20,000 requests); at most 360)."),
    seed: int = typer.Option(1, "--seed", help="Random seed (0 or above): the same seed gives the same run."),
    do_search: bool = typer.Option(False, "--search", help="Also find the fewest GPUs that keep the promise (verified_load_gpus)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
    burst: float = typer.Option(1.0, "--burst", help="Squared coefficient of variation of the gaps between arrivals: 1 is Poisson, 4 bursty."),
    log: Path | None = typer.Option(None, "--log", help="A request log (as `xlplan traffic` reads): replay its busiest minutes."),
    resample: bool = typer.Option(False, "--resample", help="With --log: arrivals at the plan's peak, lengths drawn from the log."),
    columns: str | None = typer.Option(None, "--columns", help="With --log: map columns as for `xlplan traffic`."),
    picture: Path | None = typer.Option(None, "--picture", help="With --search: write p95 TTFT and ITL against GPUs as a PNG here."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --picture file."),
) -> None:
    """Does the fleet keep the promise at peak? A discrete-event simulation of continuous batching at the plan's physics."""
    from xlplan import simulate as sim
    from xlplan import steps
    from xlplan.scenario import resolve

    check_run_options(minutes, seed, burst)
    if resample and log is None:
        raise InputError("--resample", ["given without --log; expected --log LOG to draw lengths from"])
    if columns is not None and log is None:
        raise InputError("--columns", ["given without --log; expected --log LOG whose columns it names"])
    if picture is not None and not do_search:
        raise InputError("--picture", ["given without --search; expected --search (the picture is the search's curve)"])
    outputs = [Output(picture, "--picture", PNG)] if picture is not None else []
    check_outputs(outputs, force, inputs=[p for p in (plan_file, log) if p is not None])
    if picture is not None:
        from xlplan.io.extras import require

        require("matplotlib", command="simulate --picture")
    plan = _load(plan_file)
    where = str(plan_file) if plan_file is not None else "the reference plan"
    from xlplan import planner

    try:
        d = planner.decide(resolve(plan), plan.promise.percentile, plan.model.resolve().max_context_tokens,
                           plan.policy.max_num_batched_tokens is not None)
    except steps.PlanningError as e:
        raise InputError(where, [f"cannot be simulated: the plan cannot be met ({e})"]) from None
    # the fleet `plan` simulates: the closed form's, at its TP degree and the step budget it deploys
    s = planner.deployed(resolve(plan), d.closed_form)
    tp = int(d.closed_form.tp)
    load_reps = int(d.closed_form.load_replicas)
    runbook_load = int(d.sol.paths.load)
    if gpus is None:
        gpus = load_reps * tp
    elif gpus < tp or gpus % tp:
        raise InputError("--gpus", [(f"got {gpus}; expected whole replicas of the plan's TP {tp}: "
                                    f"{', '.join(str(tp * k) for k in (1, 2, 3))}…")])
    percentile = plan.promise.percentile
    wl, minutes, arrivals = _workload(s, plan, minutes, seed, burst, log, resample, columns)
    try:
        r = sim.simulate(s, gpus // tp, tp, wl, minutes * 60.0, percentile)
        found = sim.search(s, tp, wl, minutes * 60.0, load_reps, percentile, {gpus // tp: r}) if do_search else None
    except steps.PlanningError as e:
        raise InputError(where, [f"cannot be simulated: {e}"]) from None
    if picture is not None:
        from xlplan.io.verify_picture import picture_png

        write_outputs([(picture, picture_png([sim.point(x) for _, x in sorted(found.runs.items())], s.ttft_s, s.itl_s,
                                             percentile, load_reps * tp, plan.name))])
    if as_json:
        out = result_json(r)
        out.update({"minutes": minutes, "seed": seed, "burst_cv2": burst, "chunk_tokens": sim.chunk_tokens(s),
                    "arrivals": arrivals or ("poisson" if burst == 1.0 else "gamma")})
        if found is not None:
            v = found.verified_replicas
            out["verified_load_gpus"] = v * tp if v is not None else None
            out["searched_up_to_gpus"] = max(found.runs) * tp
            shown = [n for n in (v - 1, v) if n and n in found.runs] if v is not None else sorted(found.runs)[-1:]
            out["runs"] = [result_json(found.runs[n]) for n in shown]
        typer.echo(json.dumps(_finite(out), indent=2, allow_nan=False))
        return
    if arrivals:
        typer.echo(f"Arrivals: {arrivals}")
    for line in _lines(r, s):
        typer.echo(line)
    if found is not None:
        v = found.verified_replicas
        if v is None:
            typer.echo(f"No fleet up to {found.cap_replicas * tp} GPUs keeps the promise.")
        else:
            typer.echo(f"Verified load: {v * tp} GPUs ({v} replica{'' if v == 1 else 's'} of TP {tp}) keep the promise; the "
                       f"closed form's load is {load_reps * tp}, the runbook's method's {runbook_load}.")
            for n in (v - 1, v):
                if n and n in found.runs and n != gpus // tp:
                    for line in _lines(found.runs[n], s):
                        typer.echo(line)
    if picture is not None:
        typer.echo(f"wrote {picture}", err=True)


def _finite(x):
    """NaN and infinity as null (JSON has neither): a quantile of nothing, a request that never started. [JSON]"""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
