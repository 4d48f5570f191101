"""The review note: a :class:`xlplan.schema.review.ReviewOut` as one page of text or Markdown.

Reads the review's result only; computes nothing.
"""

from __future__ import annotations

from xlplan.schema.review import NEAR, FigureCheck, ReviewOut


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return "not measured"
    if unit == "fraction":
        return f"{v:.1%}"
    if unit == "tokens/month":
        return f"{v / 1e9:,.1f} billion"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


def _held(n: int | None) -> str:
    """5,424; — where the schedule stopped before the month. [text]"""
    return "—" if n is None else f"{n:,}"


def _figure_row(f: FigureCheck) -> list[str]:
    change = "—" if f.change is None else f"{f.change:+.1%}"
    if f.band_top is not None and f.measured is not None:  # the peak: within its sampling band, or past it
        change += (f" (within sampling noise: up to {f.band_top:,.1f} at {f.planned:,.6g})"
                   if f.planned <= f.measured <= f.band_top else
                   f" (past sampling noise: up to {f.band_top:,.1f})" if f.measured > f.band_top else
                   " (fell: a log at the planned peak reads its busiest window above it)")
    return [f.label, _value(f.planned, f.unit), _value(f.measured, f.unit), change, f.unit, f.owner]


def _table(header: list[str], rows: list[list[str]], md: bool) -> list[str]:
    if md:
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    return ["  " + "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def _heading(text: str, md: bool) -> list[str]:
    return ["", f"## {text}", ""] if md else ["", text]


def _items(lines: list[str], md: bool) -> list[str]:
    return [("- " if md else "  ") + line for line in lines]


def _replan(r: ReviewOut, md: bool) -> list[str]:
    rp = r.replan
    out = _items([(f"with {rp.inputs}: {rp.old.order} → {rp.new.order}; purchased {rp.old.purchased:,} → {rp.new.purchased:,}; "
                  f"binding {rp.old.binding} → {rp.new.binding}; ${rp.old.monthly_usd:,.0f} → ${rp.new.monthly_usd:,.0f}/month"),
                  f"lead time: {rp.lead_time_days} days" if rp.lead_time_days is not None else
                  "lead time: not stated (growth.lead_time_days), so orders are undated"], md)
    rows = [[m.month, f"{_value(m.old_peak_rps, 'requests/s')} → {_value(m.new_peak_rps, 'requests/s')}", f"{_held(m.old_gpus)} → {_held(m.new_gpus)}",
             f"{m.old_order_by or '—'} → {m.new_order_by or '—'}"] for m in rp.months]
    out += [""] + _table(["month", "peak req/s", "GPUs held", "order by"], rows, md)
    out += [""] + _items([f"against {rp.supply}:"] + ([a.sentence + (" (due)" if a.due else "") for a in rp.actions]
                                                      or ["no order to place, move or cancel"]), md)
    return out + (_items([f"schedule stopped: {rp.stopped}"], md) if rp.stopped else [])


def review_note(r: ReviewOut, md: bool = False) -> str:
    """The review as one page of text, or Markdown with ``md``. [text]

    Parameters
    ----------
    r : ReviewOut
        The review (:func:`xlplan.review.monthly.review`).
    md : bool
        Markdown rather than plain text. [bool]

    Returns
    -------
    str
        Sections 1-8, the history's trends where there is one, and the verdict first. [text]
    """
    verdict = ("ACTION NEEDED: " + "; ".join(r.reasons)) if r.needs_action else "no action: nothing crossed, fired or due"
    out = [f"# Monthly review: {r.plan}" if md else f"Monthly review: {r.plan}", "",
           f"Review of {r.month} on {r.date}. {verdict}."]
    out += _heading("1. The forecast against what was measured", md)
    out += _table(["figure", "planned", "measured", "change", "unit", "owner"], [_figure_row(f) for f in r.forecast], md)
    util = next((f for f in r.forecast if f.key == "average_utilisation"), None)
    if util is not None and util.measured is None:  # a slice of the peak: the month's volume is the plan's utilisation's
        out += _items([("average utilisation not measured: the log spans less than a day (a slice of the peak); tokens a "
                       "month are the measured peak and lengths at the plan's average utilisation")], md)
    out += _heading(f"2. Breakpoints ({r.breakpoints_basis})", md)
    crossed = [c.sentence for c in r.breakpoints if c.crossed]
    near = [c.sentence for c in r.breakpoints if c.headroom is not None and c.headroom < NEAR]
    out += _items(crossed + near or [f"none crossed, none within {NEAR:.0%}"], md)
    out += _heading("3. The promise in production", md) + _items([r.promise.sentence], md)
    out += _heading("4. Which constraint binds in production", md) + _items([r.binding.sentence], md)
    out += _heading("5. The model against production", md) + _items([r.model], md)
    out += _heading("6. The re-plan", md) + _replan(r, md)
    out += _heading("7. Triggers", md)
    out += _items([f"{'FIRED' if t.fired else 'not fired'}: {t.metric} {t.bound} {_value(t.value, t.unit)} ("
                   f"{'not measured' if t.measured is None else 'measured ' + _value(t.measured, t.unit)}; {t.source}): "
                   f"{t.action}" for t in r.triggers] or ["none"], md)
    out += _heading("8. What to watch next month", md) + _items([c.sentence for c in r.watch] or ["nothing measured to watch"], md)
    if len(r.history) and len(r.history[0].errors) > 1:
        out += _heading("The forecast's accuracy over time", md) + _items([t.sentence for t in r.history], md)
    return "\n".join(out) + "\n"
