"""The note's contract-mix lines, within the cost section: the reserved base, on-demand, API overflow, spot, the
month's total and the FinOps rate figures, each arithmetic line adding up from its printed operands."""

from __future__ import annotations

from xlplan import words
from xlplan.schema.result import PlanResult

TERM_WORDS = {"reserved_1y": "reserved 1 year", "reserved_3y": "reserved 3 years", "reserved": "reserved, term as published",
              "owned": "owned"}
"""How the note names each base term. [text]"""


def contract_rows(r: PlanResult) -> list[tuple[str, str]]:
    """The mix's rows (none without a contracts section): base, on-demand, API, spot, total, rate figures. [text]

    Parameters
    ----------
    r : PlanResult
        The plan's result; its ``contracts`` is read, nothing is recomputed but the printed sums.

    Returns
    -------
    list of (str, str)
        (label, line) rows for the cost section.
    """
    m = r.contracts
    if m is None:
        return []
    rows = [
        ("Mix: reserved base", (f"{words.count(m.base_gpus, 'GPU')} × ${m.base_usd_per_gpu_hour:g}/h × {m.hours_per_month:g} h = "
                               f"{words.usd(m.base_monthly_usd)} / month ({TERM_WORDS[m.term]}: the quietest hour's "
                               f"{words.count(m.base_floor_gpus, 'GPU')}, and each GPU busy at least the break-even, "
                               f"{m.break_even:.1%} of the hours; {m.base_source})")),
        ("Mix: on demand", (f"{m.on_demand_gpu_hours_per_month:,.1f} GPU-hours × ${m.on_demand_usd_per_gpu_hour:g}/h = "
                           f"{words.usd(m.on_demand_monthly_usd)} / month (the hours above the base)")),
        ("Mix: API overflow", _api_line(m)),
        ("Mix: spot", (f"{m.spot_gpu_hours_per_month:,.1f} GPU-hours × ${m.spot_usd_per_gpu_hour:g}/h = {words.usd(m.spot_monthly_usd)} "
                       f"/ month for the {m.no_promise_share:.0%} of traffic with no promise ({m.spot_source})")
         if m.spot_usd_per_gpu_hour is not None else f"spot: {m.spot_source}"),
        ("Mix: month", (f"{words.usd(m.base_monthly_usd, 2)} + {words.usd(m.on_demand_monthly_usd, 2)} + {words.usd(m.api_monthly_usd, 2)} + "
                        f"{words.usd(m.spot_monthly_usd, 2)} = {words.usd(m.monthly_usd, 2)} / month, against "
                        f"{words.usd(m.always_on_demand_monthly_usd)} for the {words.count(m.load_gpus + m.redundancy_gpus, 'GPU')} "
                        "on demand all day")),
        ("Mix: rate figures", (f"effective savings rate {m.effective_savings_rate:.1%} (against the GPU-hours used at the "
                               f"on-demand price, the API left out); commitment coverage {m.commitment_coverage:.1%}; "
                               f"commitment utilisation {m.commitment_utilisation:.1%}")),
    ]
    return rows


def _api_line(m) -> str:
    """The API overflow's line: its requests and cost, or why there is none. [text]"""
    if not m.api_overflow:
        return "not allowed (contracts.api_overflow: false)"
    if m.api_requests_per_month <= 0 and m.on_demand_gpu_hours_per_month <= 0:
        return "none: the base carries every hour, so there is no on-demand peak to replace"
    if m.api_requests_per_month <= 0:
        return "none: the on-demand GPU-hours cost less than the API for the same traffic"
    return (f"{m.api_requests_per_month:,.0f} requests × ${m.api_usd_per_request:.6g} = {words.usd(m.api_monthly_usd)} / month "
            f"(the traffic above {words.count(m.api_ceiling_replicas, 'replica')} in the busiest hours)")
