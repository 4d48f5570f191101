"""xlplan simulate: the plan's fleet at peak, by discrete-event simulation of continuous batching."""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from xlplan import words
from xlplan.cli.app import PLAN_ARG, ROUTING_OPTION, app, check_fleet_option, with_routing
from xlplan.cli.app import load as _load
from xlplan.io.errors import InputError
from xlplan.io.outputs import PNG, Output, check_outputs, write_outputs


def check_run_options(minutes: float | None, seed: int, burst: float) -> None:
    """One line naming the option for a run length, seed or burstiness no run can have."""
    from xlplan.simulate.workload import MAX_MINUTES

    if minutes is not None and not (math.isfinite(minutes) and 0 < minutes <= MAX_MINUTES):
        raise InputError("--minutes", [f"got {minutes:g}; expected a number of minutes above 0 and at most {MAX_MINUTES:g}"])
    if seed < 0:
        raise InputError("--seed", [f"got {seed}; expected a whole number 0 or above"])
    if not (math.isfinite(burst) and 0 < burst <= 100):
        raise InputError("--burst", [(f"got {burst:g}; expected the squared coefficient of variation of the gaps between "
                                     "arrivals, above 0 and at most 100 (1: Poisson, 4: bursty)")])


def _ms(x: float) -> str:
    """23 ms, 1,250 ms, 182 s. [text]"""
    if not math.isfinite(x):
        return "—"
    return f"{x * 1000:,.0f} ms" if x < 10 else f"{x:,.0f} s"


def _lines(r, ttft_target_s: float, itl_target_s: float) -> list[str]:
    """One run as the command prints it: fleet, latency quantiles against the targets, occupancy, verdict."""
    q = f"p{r.percentile:g}"
    ok = "keeps" if r.meets_promise else "misses"
    return [
        (f"{words.count(r.gpus, 'GPU')} = {words.count(r.replicas, 'replica')} of TP {r.tp}: {words.count(r.requests, 'request')} measured over {r.simulated_s / 60:.3g} min "
        f"(arrived {r.arrival_rate_rps:,.2f} req/s)" if not r.sampled_replicas else
        f"{words.count(r.gpus, 'GPU')} = {words.count(r.replicas, 'replica')} of TP {r.tp}, simulated on "
        f"{words.count(r.sampled_replicas, 'replica')} of them with their share of the peak ({r.requests:,} requests "
        f"measured over {r.simulated_s / 60:.3g} min); read as the fleet's: arrived {r.arrival_rate_rps:,.2f} req/s"),
        f"  TTFT        p50 {_ms(r.ttft_s.p50)}  p95 {_ms(r.ttft_s.p95)}  p99 {_ms(r.ttft_s.p99)}   (target {_ms(ttft_target_s)})",
        f"  inter-token p50 {_ms(r.itl_s.p50)}  p95 {_ms(r.itl_s.p95)}  p99 {_ms(r.itl_s.p99)}   (target {_ms(itl_target_s)})",
        f"  TPOT        p50 {_ms(r.tpot_s.p50)}  p95 {_ms(r.tpot_s.p95)}  p99 {_ms(r.tpot_s.p99)}",
        (f"  in flight {r.mean_in_flight:,.1f} on average; time in system {r.mean_time_in_system_s:,.2f} s; KV cache "
        f"{r.kv_utilisation.mean:.0%} mean, {r.kv_utilisation.p95:.0%} p95, {r.kv_utilisation.max:.0%} max; "
        f"{words.count(r.preemptions, 'preemption')}"),
        f"  {ok} the promise at {q}" + ("" if r.stable else " (p95 TTFT still moving between the run's halves: "
                                                               "overloaded, or run longer with --minutes)"),
    ]


@app.command("simulate")
def simulate_cmd(
    plan_file: Path | None = PLAN_ARG,
    gpus: int | None = typer.Option(None, "--gpus", help="GPUs serving the peak, whole replicas of the setting's TP (default: the closed form's load there; with --search the setting is the Answer's, which plan's configuration search chose)."),
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
    routing: str | None = ROUTING_OPTION,
) -> None:
    """Does the fleet keep the promise at peak? A discrete-event simulation of continuous batching at the plan's physics."""
    from xlplan.decide.peak_simulation import RunRefused, simulate_peak

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
    plan = with_routing(_load(plan_file), routing)
    check_fleet_option(plan, gpus)
    where = str(plan_file) if plan_file is not None else "the reference plan"
    try:
        out = simulate_peak(plan, gpus, minutes, seed, burst, do_search, _log_reader(log, columns) if log is not None else None,
                            resample)
    except RunRefused as e:
        raise InputError(e.subject or where, [e.problem]) from None
    if picture is not None:
        from xlplan.io.verify_picture import picture_png

        write_outputs([(picture, picture_png(out.curve(), out.ttft_target_s, out.itl_target_s, out.percentile,
                                             out.load_replicas * out.tp, plan.name))])
    if as_json:
        typer.echo(json.dumps(out.as_json(), indent=2, allow_nan=False))
        return
    for line in _text(out):
        typer.echo(line)
    if picture is not None:
        typer.echo(f"wrote {picture}", err=True)


def _log_reader(log: Path, columns: str | None):
    """A function that reads --log (mapped by --columns) when the run needs it."""
    from xlplan.decide.peak_simulation import LoggedRequests

    def read() -> LoggedRequests:
        from xlplan.io.extras import require

        require("pandas", command="simulate --log")
        from xlplan.io.logs import parse_columns, read_logs

        req = read_logs([log], parse_columns(columns))
        if not req.arrivals_without_lengths:
            return LoggedRequests(str(log), req.t_s, req.prompt, req.output)
        # arrivals whose lengths could not be read still arrive: each takes the lengths of a readable row drawn at
        # random (seeded), so the replay keeps the log's rate as `traffic` measures it
        import numpy as np

        extra = req.arrival_t_s[req.t_s.size:]
        pick = np.random.default_rng(0).integers(0, req.t_s.size, extra.size)
        order = np.argsort(np.concatenate([req.t_s, extra]), kind="stable")
        return LoggedRequests(f"{log} ({extra.size:,} arrivals with unread lengths given a readable row's)",
                              np.concatenate([req.t_s, extra])[order], np.concatenate([req.prompt, req.prompt[pick]])[order],
                              np.concatenate([req.output, req.output[pick]])[order])

    return read


def _text(out) -> list[str]:
    """The run as the command prints it: the arrivals, the routing, the run, and the search's answer with the runs
    beside it."""
    lines = [f"Arrivals: {out.arrivals}"] if out.arrivals else []
    lines += _lines(out.run, out.ttft_target_s, out.itl_target_s)
    lines.append(f"  routed {words.routed(out.routing)} (policy.routing {out.routing})")
    found, tp = out.search, out.tp
    if found is None:
        return lines
    v = found.verified_replicas
    if v is None:
        return lines + [f"No fleet up to {words.count(found.cap_replicas * tp, 'GPU')} keeps the promise."]
    on = (f" on seeds {', '.join(map(str, out.search_seeds))} (all must hold, as plan verifies)" if out.search_seeds else "")
    lines.append(f"Verified load: {words.count(v * tp, 'GPU')} ({words.count(v, 'replica')} of TP {tp}) {words.verb(v * tp, 'keeps', 'keep')} the promise{on}; the "
                 f"closed form's load at this setting is {out.load_replicas * tp}, the runbook's method's {out.runbook_load_gpus}.")
    for n in (v - 1, v):
        if n and n in found.runs and n != out.run.replicas:
            lines += _lines(found.runs[n], out.ttft_target_s, out.itl_target_s)
    return lines
