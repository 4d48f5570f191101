"""Managed-API prices by a model's size class: the class of a model, and the median offer of a class.

The offers are ``xlplan/data/api_prices.csv`` (provider pages and price datasets, 2025-2026, each row dated), read by
:func:`xlplan.catalog.api_price_rows`; the plan compares its bill with the median of its class where it names no API.
"""

from __future__ import annotations

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


def _median(values) -> float:
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
    >>> _median([3.0, 1.0, 2.0]), _median([4.0, 1.0, 2.0, 3.0])
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
    return _median([r["usd_per_1M_input"] for r in mine]), _median([r["usd_per_1M_output"] for r in mine]), len(mine)
