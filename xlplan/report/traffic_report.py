"""From a summarised log to the plan's forecast, with provenance; pictures; the growth outlook.

The forecast section a log gives carries where it came from in ``sources.forecast``
("derived from <file(s)>, <first>–<last>, <N> requests, window 60 s"), and the log
is its owner, so a wrong forecast is traced to its evidence.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from xlplan.evidence.traffic import TrafficSummary
from xlplan.evidence.traffic_windows import PEAK_RULE
from xlplan.io.logs import Requests


def _when(t_s: float, offset_s: float = 0.0) -> str:
    return dt.datetime.fromtimestamp(t_s, tz=dt.timezone(dt.timedelta(seconds=offset_s))).strftime("%Y-%m-%d %H:%M:%S%z")


def provenance(req: Requests, s: TrafficSummary) -> str:
    """'derived from a.csv, 2026-01-01 00:00:00+0000–2026-01-31 23:59:59+0000, 1,234,567 requests, window 60 s'. [text]"""
    files = ", ".join(Path(f).name for f in req.files)
    left = f", {req.bad.total:,} bad rows left out" if req.bad.total else ""
    if req.arrivals_without_lengths:
        left += f" ({req.arrivals_without_lengths:,} of them counted as arrivals, their lengths unread)"
    return (f"derived from {files}, {_when(s.first_s, req.offset_s)}–{_when(s.last_s, req.offset_s)}, {s.requests:,} requests, "
            f"window {s.window_s:g} s{left}")


def forecast_section(s: TrafficSummary) -> dict:
    """The plan's ``forecast`` section from a log: peak rate, p50/p95/p99 lengths, utilisation, prefix reuse."""
    out = {
        "peak_rps": s.peak_rps,
        "prompt_tokens": {"p50": s.prompt.p50, "p95": max(s.prompt.p95, s.prompt.p50), "p99": max(s.prompt.p99, s.prompt.p95)},
        "output_tokens": {"p50": s.output.p50, "p95": max(s.output.p95, s.output.p50), "p99": max(s.output.p99, s.output.p95)},
    }
    if s.measures_utilisation:  # under a day the mean is a slice of the peak: the plan keeps its own
        out["average_utilisation"] = s.average_utilisation
    if s.prefix_reuse is not None:
        out["prefix_reuse"] = min(s.prefix_reuse, 0.99)
    curve = [round(x, 4) for x in s.daily_curve] if s.daily_curve is not None else None
    if curve is not None and min(curve) > 0:  # an hour without requests has no fraction a plan takes (each above 0)
        out["daily_curve"] = curve
    return out


def plan_fragment(req: Requests, s: TrafficSummary) -> dict:
    """What a log contributes to a plan: the forecast, its source, its owner."""
    files = ", ".join(Path(f).name for f in req.files)
    out = {"forecast": forecast_section(s), "sources": {"forecast": provenance(req, s)},
           "owners": {"forecast": f"request log ({files})"}}
    if s.weekly_growth is not None:  # the growth `xlplan schedule` takes: weekly, as the equivalent monthly rate
        out["growth"] = {"monthly": round(s.monthly_growth, 6),
                         "source": f"measured: {s.weekly_growth:+.2%} a week over {len(s.weekly_peaks_rps)} weeks of {files}"}
    return out


def summary_lines(req: Requests, s: TrafficSummary) -> list[tuple[str, str]]:
    """The summary as (figure, value) rows for the terminal."""
    rows = [
        ("Requests", f"{s.requests:,} from {', '.join(Path(f).name for f in req.files)} ({req.zone})"),
        ("Period", f"{_when(s.first_s, req.offset_s)} – {_when(s.last_s, req.offset_s)}"),
        ("Peak rate", (f"{s.peak_rps:,.3f} req/s: the busiest {s.window_s:g} s window, from {_when(s.peak_window_start_s, req.offset_s)} "
                      f"({PEAK_RULE.format(window=s.window_s)})")),
        ("p99 of window rates", f"{s.p99_window_rps:,.3f} req/s"),
        ("Mean rate", f"{s.mean_rps:,.3f} req/s → average utilisation {s.average_utilisation:.1%} of peak" if s.measures_utilisation
         else f"{s.mean_rps:,.3f} req/s over under a day: no average utilisation measured (the plan's is kept)"),
        ("Prompt tokens", f"p50 {s.prompt.p50:,.0f} · p95 {s.prompt.p95:,.0f} · p99 {s.prompt.p99:,.0f}   (mean {s.prompt.mean:,.0f}, max {s.prompt.max:,.0f})"),
        ("Output tokens", f"p50 {s.output.p50:,.0f} · p95 {s.output.p95:,.0f} · p99 {s.output.p99:,.0f}   (mean {s.output.mean:,.0f}, max {s.output.max:,.0f})"),
        ("Prefix reuse", "not in the log (no cached-token counts)" if s.prefix_reuse is None else f"{s.prefix_reuse:.1%} of prompt tokens served from the cache"),
        ("Busiest hour of the week", f"{s.busiest_hour} ({s.busiest_hour_rph:,.0f} requests in that hour on average)"),
    ]
    rows.append(("Daily curve", _curve_words(s.daily_curve)))
    if s.weekly_growth is not None:
        rows.append(("Week-on-week growth of the peak", f"{s.weekly_growth:+.1%} a week over {len(s.weekly_peaks_rps)} weeks"))
    elif s.last_s - s.first_s < 28 * 86400:
        rows.append(("Growth", "needs at least four weeks of log"))
    return rows


def _curve_words(curve) -> str:
    """The daily curve as the summary prints it, or why it is not measured or not written. [text]"""
    if curve is None:
        return "cannot be measured: the log spans less than a day"
    text = " ".join(f"{x:.2f}" for x in curve) + " (hour 0 first; each hour's mean rate ÷ the busiest hour's)"
    if min(round(x, 4) for x in curve) <= 0:
        text += "; not written to the forecast: an hour had no requests (each value must be above 0)"
    return text


PLOT_POINTS = 4000
"""Most points in the rate plot; longer series keep each group's busiest window. [points]"""


def picture_paths(stem: Path) -> list[Path]:
    """Where the PNGs beside a forecast go: ``STEM-rate.png`` and ``STEM-lengths.png``. [path]"""
    return [stem.with_name(stem.name + "-rate.png"), stem.with_name(stem.name + "-lengths.png")]


def pictures(req: Requests, s: TrafficSummary, stem: Path, counts) -> list[tuple[Path, bytes]]:
    """PNGs beside the forecast, as (path, bytes): the request rate with the peak window marked; prompt and output histograms
    with p50/p95/p99. Nothing is written."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out = []
    # counts: requests in each window of every arrival, its lengths readable or not (evidence.traffic_windows.window_counts)
    group = max(1, -(-counts.size // PLOT_POINTS))  # windows per point, each point the busiest of its group
    counts = np.pad(counts, (0, (-counts.size) % group)).reshape(-1, group).max(axis=1)
    hours = np.arange(counts.size) * group * s.window_s / 3600.0
    fig, ax = plt.subplots(figsize=(10, 3.6), dpi=110)
    ax.plot(hours, counts / s.window_s, lw=0.6, color="#1f77b4", label=f"requests/s per {s.window_s:g} s window")
    k = (s.peak_window_start_s - s.first_s) / 3600.0
    ax.axvspan(k, k + s.window_s / 3600.0, color="#d62728", alpha=0.6)
    ax.axhline(s.peak_rps, color="#d62728", lw=1, ls="--", label=f"peak {s.peak_rps:,.2f} req/s")
    ax.axhline(s.mean_rps, color="#2ca02c", lw=1, ls=":", label=f"mean {s.mean_rps:,.2f} req/s ({s.average_utilisation:.0%} of peak)")
    ax.set_xlabel("hours since the first request")
    ax.set_ylabel("requests/s")
    ax.set_title("Request rate over time, peak window marked")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    rate_path, hist_path = picture_paths(stem)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    out.append((rate_path, buf.getvalue()))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), dpi=110)
    for ax, values, d, name in ((axes[0], req.prompt, s.prompt, "prompt"), (axes[1], req.output, s.output, "output")):
        v = np.maximum(np.asarray(values, dtype=float), 1.0)
        bins = np.logspace(np.log10(v.min()), np.log10(v.max() + 1), 60)
        ax.hist(v, bins=bins, color="#7f7f7f")
        ax.set_xscale("log")
        for q, value, colour in (("p50", d.p50, "#2ca02c"), ("p95", d.p95, "#ff7f0e"), ("p99", d.p99, "#d62728")):
            ax.axvline(value, color=colour, lw=1.2, label=f"{q} {value:,.0f}")
        ax.axvline(d.mean, color="black", lw=0.8, ls=":", label=f"mean {d.mean:,.0f} (not for sizing)")
        ax.set_xlabel(f"{name} tokens")
        ax.set_ylabel("requests")
        ax.set_title(f"{name.capitalize()} lengths")
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    out.append((hist_path, buf.getvalue()))
    return out


def outlook(s: TrafficSummary, weeks: float | None, capacity_rps: float, gpus: int, offset_s: float = 0.0) -> str:
    """When the current fleet stops sufficing if the weekly growth holds: ``weeks`` until the peak reaches
    ``capacity_rps`` (:func:`xlplan.evidence.traffic_growth.weeks_until`; 0 already, None never). [text]"""
    head = f"{gpus} {'GPU carries' if gpus == 1 else 'GPUs carry'} up to {capacity_rps:,.2f} req/s at peak"
    if weeks == 0.0:
        return f"{head}: the log's peak, {s.peak_rps:,.2f} req/s, already exceeds it"
    if weeks is None:
        why = "the peak is not growing" if s.weekly_growth is not None else "growth needs at least four weeks of log"
        return f"{head}; {why}, so no date"
    when = s.last_s + weeks * 7 * 86400
    return f"{head}: at {s.weekly_growth:+.1%} a week the peak reaches that in {weeks:,.1f} weeks, about {_when(when, offset_s)[:10]}"
