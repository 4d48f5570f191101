"""Step 7 on a scenario: the monthly bill, the tokens a month, $/M tokens and the API comparison.

Written with operators and :mod:`xlplan.arrays`, so the same code runs on floats (the planner) and on numpy arrays
(the sweep).
"""

from __future__ import annotations

from xlplan import arrays
from xlplan.money import cost
from xlplan.plan.scenario import Scenario
from xlplan.schema.steps import Bill, Paths, Traffic


def tokens_per_month(s: Scenario, tr: Traffic):
    """Tokens served in a month at the average utilisation (prompt and output means fitted). [tokens/month]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.

    Returns
    -------
    float or array
        ``peak rate × (E[prompt] + E[output]) × average utilisation × hours × 3600``. [tokens/month]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month".
    """
    return cost.tokens_per_month(s.peak_rps, tr.prompt_mean + tr.output_mean, s.average_utilisation, s.hours_per_month)


def bill(s: Scenario, tr: Traffic, p: Paths) -> Bill:
    """Step 7: the monthly bill, $/M tokens at the average utilisation, and the API comparison.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    p : Paths
        The chosen TP degree's paths: its fleet with redundancy and purchased.

    Returns
    -------
    Bill
        GPUs billed, monthly cost, tokens a month, $/M tokens, and the API's price, bill and break-even where the
        plan gives API prices.

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month"; "at 40% average load roughly
    95 billion tokens a month, ~$0.11 per million tokens".
    """
    billed = arrays.where(s.bill_purchased, p.purchased, p.with_redundancy)
    monthly = cost.monthly_cost_usd(billed, s.usd_per_gpu_hour, s.hours_per_month) + s.fixed_usd_per_month
    tokens = tokens_per_month(s, tr)
    blended = api_monthly = breakeven = None
    if s.api_usd_per_mtok_input is not None:
        blended = cost.api_usd_per_mtok_blended(tr.prompt_mean, tr.output_mean, s.api_usd_per_mtok_input, s.api_usd_per_mtok_output)
        api_monthly = cost.api_monthly_cost_usd(tokens, blended)
        breakeven = cost.breakeven_tokens_per_month(monthly + s.ops_usd_per_month, blended)
    return Bill(
        billed_gpus=billed,
        monthly_usd=monthly,
        tokens_per_month=tokens,
        usd_per_mtok=cost.usd_per_mtok(monthly, tokens),
        api_usd_per_mtok_blended=blended,
        api_monthly_usd=api_monthly,
        breakeven_tokens_per_month=breakeven,
    )
