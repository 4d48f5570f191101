"""The bill as spreadsheet-sized functions: monthly cost, tokens a month, $/M tokens, an API's price and break-even.

Part of :mod:`xlplan.excel.cellwise`; each composes :mod:`xlplan.money.cost` on the
fitted length distributions.

References
----------
Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month".
"""

from __future__ import annotations

from xlplan.excel.cellwise.inputs import mean_length
from xlplan.money import cost


def monthly_cost_usd(gpus: float, usd_per_gpu_hour: float, hours_per_month: float) -> float:
    """GPUs × price × hours. [USD/month]

    Parameters
    ----------
    gpus : float
        GPUs on the bill. [GPUs]
    usd_per_gpu_hour : float
        Price paid per GPU. [USD/GPU-hour]
    hours_per_month : float
        Billed hours per month (8,760 / 12 = 730). [h/month]

    Returns
    -------
    float
        Fixed monthly infrastructure cost. [USD/month]

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month".
    """
    return cost.monthly_cost_usd(gpus, usd_per_gpu_hour, hours_per_month)


def tokens_per_month(arrival_rate_rps: float, prompt_p50: float, prompt_p95: float, output_p50: float, output_p95: float,
                     average_utilisation: float, prompt_p99: float | None = None, output_p99: float | None = None,
                     hours_per_month: float = 730.0) -> float:
    """Tokens served in a month at the average utilisation, prompt and output means fitted. [tokens/month]

    Parameters
    ----------
    arrival_rate_rps : float
        Peak arrival rate. [requests/s]
    prompt_p50 : float
        Median prompt length. [tokens]
    prompt_p95 : float
        95th-percentile prompt length, at least the median. [tokens]
    output_p50 : float
        Median output length. [tokens]
    output_p95 : float
        95th-percentile output length, at least the median. [tokens]
    average_utilisation : float
        Average load over the month as a fraction of peak (0.40, not 40). [fraction]
    prompt_p99 : float, optional
        99th-percentile prompt length; left out, the fit uses p95 alone. [tokens]
    output_p99 : float, optional
        99th-percentile output length; left out, the fit uses p95 alone. [tokens]
    hours_per_month : float
        Hours in the month. [h/month]

    Returns
    -------
    float
        ``rate × (E[prompt] + E[output]) × utilisation × hours × 3600``. [tokens/month]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month, ~$0.11 per million
    tokens".

    Examples
    --------
    The runbook: 40 × 2,300 × 0.40 × 730 × 3,600 = 96.7 billion.

    >>> f"{tokens_per_month(40, 2000, 2000, 300, 300, 0.40):.4g}"
    '9.671e+10'
    """
    tokens = mean_length(prompt_p50, prompt_p95, prompt_p99) + mean_length(output_p50, output_p95, output_p99)
    return cost.tokens_per_month(arrival_rate_rps, tokens, average_utilisation, hours_per_month)


def usd_per_mtok(monthly_usd: float, tokens_per_month_: float) -> float:
    """Cost per million tokens of all kinds. [USD/Mtok]

    Parameters
    ----------
    monthly_usd : float
        Monthly cost. [USD/month]
    tokens_per_month_ : float
        Tokens of all kinds served in the same month. [tokens/month]

    Returns
    -------
    float
        ``monthly_usd × 10**6 ÷ tokens``; +inf when no tokens are served. [USD/Mtok]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month, ~$0.11 per million
    tokens".
    """
    return cost.usd_per_mtok(monthly_usd, tokens_per_month_)


def _api_blended_usd_per_mtok(usd_per_mtok_input: float, usd_per_mtok_output: float, prompt_p50: float, prompt_p95: float,
                             output_p50: float, output_p95: float, prompt_p99: float | None = None,
                             output_p99: float | None = None) -> float:
    """An API's price at this traffic's input/output mix. [USD/Mtok]

    Parameters
    ----------
    usd_per_mtok_input : float
        API price of input tokens. [USD/Mtok]
    usd_per_mtok_output : float
        API price of output tokens. [USD/Mtok]
    prompt_p50 : float
        Median prompt length. [tokens]
    prompt_p95 : float
        95th-percentile prompt length, at least the median. [tokens]
    output_p50 : float
        Median output length. [tokens]
    output_p95 : float
        95th-percentile output length, at least the median. [tokens]
    prompt_p99 : float, optional
        99th-percentile prompt length; left out, the fit uses p95 alone. [tokens]
    output_p99 : float, optional
        99th-percentile output length; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    float
        The two prices weighted by the fitted mean prompt and output lengths. [USD/Mtok]
    """
    return cost.api_usd_per_mtok_blended(mean_length(prompt_p50, prompt_p95, prompt_p99),
                                         mean_length(output_p50, output_p95, output_p99), usd_per_mtok_input, usd_per_mtok_output)


def api_monthly_cost_usd(tokens_per_month_: float, usd_per_mtok_input: float, usd_per_mtok_output: float, prompt_p50: float,
                         prompt_p95: float, output_p50: float, output_p95: float, prompt_p99: float | None = None,
                         output_p99: float | None = None) -> float:
    """The same traffic on a managed API at separate input and output prices. [USD/month]

    Parameters
    ----------
    tokens_per_month_ : float
        Tokens served in the month. [tokens/month]
    usd_per_mtok_input : float
        API price of input tokens. [USD/Mtok]
    usd_per_mtok_output : float
        API price of output tokens. [USD/Mtok]
    prompt_p50 : float
        Median prompt length. [tokens]
    prompt_p95 : float
        95th-percentile prompt length, at least the median. [tokens]
    output_p50 : float
        Median output length. [tokens]
    output_p95 : float
        95th-percentile output length, at least the median. [tokens]
    prompt_p99 : float, optional
        99th-percentile prompt length; left out, the fit uses p95 alone. [tokens]
    output_p99 : float, optional
        99th-percentile output length; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    float
        ``tokens × blended price ÷ 10**6``. [USD/month]
    """
    blended = _api_blended_usd_per_mtok(usd_per_mtok_input, usd_per_mtok_output, prompt_p50, prompt_p95, output_p50,
                                       output_p95, prompt_p99, output_p99)
    return cost.api_monthly_cost_usd(tokens_per_month_, blended)


def breakeven_tokens_per_month(monthly_usd: float, api_usd_per_mtok_blended: float, ops_usd_per_month: float = 0.0) -> float:
    """Monthly volume above which self-hosting beats the API: (fleet + ops) ÷ API price. [tokens/month]

    Parameters
    ----------
    monthly_usd : float
        Monthly cost of the fleet. [USD/month]
    api_usd_per_mtok_blended : float
        The API's price at this traffic's input/output mix. [USD/Mtok]
    ops_usd_per_month : float
        Engineering and on-call cost of self-hosting. [USD/month]

    Returns
    -------
    float
        The break-even volume; +inf when the API price is not positive. [tokens/month]
    """
    return cost.breakeven_tokens_per_month(monthly_usd + ops_usd_per_month, api_usd_per_mtok_blended)
