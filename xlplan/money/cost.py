"""The bill: monthly cost, tokens, $/M tokens, and the managed-API comparison.

Notes
-----
Peak sizes the fleet; average utilisation sizes the bill ("peak for the fleet,
average for the cost model"). Tokens per month = ``rate × E[prompt + output] ×
utilisation × hours × 3600``. $/M tokens counts tokens of all kinds.

References
----------
Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month";
"at 40% average load roughly 95 billion tokens a month, ~$0.11 per million tokens".
"""

from __future__ import annotations

import math

from xlplan import arrays
from xlplan.units import HOURS_PER_MONTH, MILLION, SECONDS_PER_HOUR


def monthly_cost_usd(gpus, usd_per_gpu_hour, hours_per_month=HOURS_PER_MONTH):
    """Fixed monthly infrastructure cost. [USD/month]

    Parameters
    ----------
    gpus : float or array
        GPUs on the bill. [GPUs]
    usd_per_gpu_hour : float or array
        Price paid per GPU. [USD/GPU-hour]
    hours_per_month : float
        Billed hours per month (8,760 / 12 = 730). [h/month]

    Returns
    -------
    float or array
        GPUs × price × hours. [USD/month]

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month".

    Examples
    --------
    >>> monthly_cost_usd(5, 3.0)
    10950.0
    """
    return gpus * usd_per_gpu_hour * hours_per_month


def tokens_per_month(arrival_rate_rps, mean_tokens_per_request, average_utilisation, hours_per_month=HOURS_PER_MONTH):
    """Tokens served in a month at the average utilisation. [tokens/month]

    Parameters
    ----------
    arrival_rate_rps : float or array
        Peak arrival rate. [requests/s]
    mean_tokens_per_request : float or array
        Mean prompt plus output tokens. [tokens/request]
    average_utilisation : float or array
        Average load over the month as a fraction of peak. [fraction]
    hours_per_month : float
        Hours in the month (8,760 / 12 = 730). [h/month]

    Returns
    -------
    float or array
        ``rate × E[prompt + output] × utilisation × hours × 3600``. [tokens/month]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month".

    Examples
    --------
    >>> f"{tokens_per_month(40, 2300, 0.40):.4g}"
    '9.671e+10'
    """
    return arrival_rate_rps * mean_tokens_per_request * average_utilisation * hours_per_month * SECONDS_PER_HOUR


def usd_per_mtok(monthly_usd, tokens):
    """Cost per million tokens of all kinds. [USD/Mtok]

    Parameters
    ----------
    monthly_usd : float or array
        Monthly cost. [USD/month]
    tokens : float or array
        Tokens of all kinds served in the same month. [tokens/month]

    Returns
    -------
    float or array
        ``monthly_usd × 10**6 ÷ tokens``; +inf when no tokens are served. [USD/Mtok]

    References
    ----------
    Runbook, document 14, step 7 · "~$0.11 per million tokens".
    """
    return arrays.div_pos(monthly_usd * MILLION, tokens)


def api_usd_per_mtok_blended(mean_prompt_tokens, mean_output_tokens, usd_per_mtok_input, usd_per_mtok_output):
    """An API's price per million tokens at this traffic's input/output mix. [USD/Mtok]

    Parameters
    ----------
    mean_prompt_tokens : float or array
        Mean prompt length ``E[prompt]``. [tokens]
    mean_output_tokens : float or array
        Mean output length ``E[output]``. [tokens]
    usd_per_mtok_input : float or array
        API price of input tokens. [USD/Mtok]
    usd_per_mtok_output : float or array
        API price of output tokens. [USD/Mtok]

    Returns
    -------
    float or array
        The two prices weighted by the mean prompt and output lengths. [USD/Mtok]
    """
    return (mean_prompt_tokens * usd_per_mtok_input + mean_output_tokens * usd_per_mtok_output) / (
        mean_prompt_tokens + mean_output_tokens
    )


def api_monthly_cost_usd(tokens_in_month, blended_usd_per_mtok):
    """The same traffic on a managed API. [USD/month]

    Parameters
    ----------
    tokens_in_month : float or array
        Tokens of all kinds served in the month. [tokens/month]
    blended_usd_per_mtok : float or array
        The API's price at this traffic's input/output mix (:func:`api_usd_per_mtok_blended`). [USD/Mtok]

    Returns
    -------
    float or array
        ``tokens × price ÷ 10**6``. [USD/month]
    """
    return tokens_in_month * blended_usd_per_mtok / MILLION


def breakeven_tokens_per_month(fixed_monthly_usd, blended_api_usd_per_mtok):
    """Monthly volume above which self-hosting this fleet is cheaper than the API. [tokens/month]

    Parameters
    ----------
    fixed_monthly_usd : float or array
        The fleet's monthly cost plus engineering and on-call. [USD/month]
    blended_api_usd_per_mtok : float or array
        The API's price at this traffic's input/output mix. [USD/Mtok]

    Returns
    -------
    float or array
        The break-even volume; +inf when the API price is not positive. [tokens/month]

    Notes
    -----
    ``(fleet + engineering/on-call per month) ÷ API price per token``; valid while the
    fleet can carry that volume.
    """
    return arrays.div_pos(fixed_monthly_usd * MILLION, blended_api_usd_per_mtok)


API_PARITY_FACTOR = 1.05
"""Self-hosting and the API within this factor of each other cost about the same: a ratio of 1.02 printed to one
decimal reads as 1.0×, a difference stated as none. [1]"""


def api_cost_ratio(api_monthly_usd: float, self_hosted_monthly_usd: float) -> tuple[float, str]:
    """Self-hosting against the API as a factor of at least 1, and which side it favours. [1], [text]

    Parameters
    ----------
    api_monthly_usd : float
        The same traffic on the API. [USD/month]
    self_hosted_monthly_usd : float
        The self-hosted bill. [USD/month]

    Returns
    -------
    factor : float
        The dearer bill ÷ the cheaper one, at least 1; inf when the cheaper costs nothing. [1]
    cheaper : str
        'self-hosting' or 'api' (the cheaper side), or 'parity' within :data:`API_PARITY_FACTOR`. [text]

    Notes
    -----
    A ratio is stated in the direction of its words: "the API is 2.3× cheaper", never "self-hosting is 0.4× cheaper"
    (issue 23), so the factor is never below 1.

    Examples
    --------
    >>> api_cost_ratio(30484.8, 15330.0)
    (1.9885714285714284, 'self-hosting')
    >>> api_cost_ratio(483.552, 15330.0)[1], api_cost_ratio(1000.0, 1020.0)[1]
    ('api', 'parity')
    """
    if api_monthly_usd == self_hosted_monthly_usd:
        return 1.0, "parity"
    low, high = sorted((api_monthly_usd, self_hosted_monthly_usd))
    factor = high / low if low > 0 else math.inf
    if factor < API_PARITY_FACTOR:
        return factor, "parity"
    return factor, ("api" if api_monthly_usd < self_hosted_monthly_usd else "self-hosting")


from xlplan.catalog.api_prices import API_SIZE_CLASSES, api_class_price, api_size_class  # noqa: E402,F401
