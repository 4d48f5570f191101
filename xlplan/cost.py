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

from xlplan import _vec
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
    return _vec.div_pos(monthly_usd * MILLION, tokens)


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
    return _vec.div_pos(fixed_monthly_usd * MILLION, blended_api_usd_per_mtok)


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


API_SIZE_CLASSES = ("dense up to 5B", "dense 5-12B", "dense 12-40B", "dense 40-120B", "dense over 120B",
                    "MoE up to 60B total", "MoE over 60B total")
"""The size classes of ``api_prices.csv``: managed-API prices cluster by a model's total size and whether it is a
mixture of experts (a 30B-A3B MoE is priced near a 8B dense model, not a 32B one). [text]"""


def api_size_class(total_params, moe: bool) -> str:
    """The API price class of a model: by total parameters, dense or MoE. [text]

    Parameters
    ----------
    total_params : float or int
        Total parameters, every expert counted. [parameters]
    moe : bool
        Whether the model is a mixture of experts.

    Returns
    -------
    str
        One of :data:`API_SIZE_CLASSES`.

    Examples
    --------
    >>> api_size_class(8.03e9, False), api_size_class(30.5e9, True), api_size_class(671e9, True)
    ('dense 5-12B', 'MoE up to 60B total', 'MoE over 60B total')
    """
    b = total_params / 1e9
    if moe:
        return API_SIZE_CLASSES[5] if b <= 60 else API_SIZE_CLASSES[6]
    for limit, name in zip((5, 12, 40, 120), API_SIZE_CLASSES[:4]):
        if b <= limit:
            return name
    return API_SIZE_CLASSES[4]


def median(values) -> float:
    """The median of a non-empty sequence. [unit of the values]

    Parameters
    ----------
    values : sequence of float
        The values, at least one. [unit of the values]

    Returns
    -------
    float
        The middle value, or the mean of the two middle values for an even count. [unit of the values]

    Examples
    --------
    >>> median([3.0, 1.0, 2.0]), median([4.0, 1.0, 2.0, 3.0])
    (2.0, 2.5)
    """
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0


def api_class_price(rows, size_class: str) -> tuple[float, float, int]:
    """(median input price, median output price, offers) over the listed offers of one size class. [USD/Mtok], [offers]

    Parameters
    ----------
    rows : iterable of dict
        Offers with ``size_class``, ``usd_per_1M_input``, ``usd_per_1M_output`` (``api_prices.csv``).
    size_class : str
        One of :data:`API_SIZE_CLASSES`.

    Returns
    -------
    usd_per_mtok_input : float
        Median price of input tokens over the class's offers. [USD/Mtok]
    usd_per_mtok_output : float
        Median price of output tokens over the class's offers. [USD/Mtok]
    offers : int
        Offers listed in the class. [offers]
    """
    mine = [r for r in rows if r["size_class"] == size_class]
    if not mine:
        raise ValueError(f"size_class: got {size_class!r}; expected one of {', '.join(API_SIZE_CLASSES)}")
    return median([r["usd_per_1M_input"] for r in mine]), median([r["usd_per_1M_output"] for r in mine]), len(mine)
