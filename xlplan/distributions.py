"""Length distributions: a lognormal fitted through stated percentiles.

A forecast gives prompt and output lengths as p50/p95/p99, never a mean. The
engine fits a lognormal through them and uses its moments wherever a cost
depends on length, so a superlinear cost (attention is quadratic in prompt
length) sees the tail rather than the mean put through the formula.

The fit
-------
``ln n ~ Normal(ln m, sigma)``. The median fixes ``m = p50``. The spread comes
from the upper percentiles by least squares in log space through the origin:
``sigma = sum_q z_q ln(p_q / m) / sum_q z_q**2`` over the percentiles given
(p95 and p99; p99 may be left out, then ``sigma = ln(p95 / m) / z95``), with
``z_q`` the standard normal quantile (z95 = 1.6449, z99 = 2.3263).
p50 = p95 = p99 gives ``sigma = 0``: a fixed length.
Moments: ``E[n] = m exp(sigma**2 / 2)``, ``E[n**2] = m**2 exp(2 sigma**2)`` (written with
the median rather than ``mu = ln m`` so that a fixed length comes back exactly).
"""

from __future__ import annotations

from statistics import NormalDist

from xlplan import arrays

Z95 = NormalDist().inv_cdf(0.95)
"""Standard normal quantile at 0.95. [1]"""

Z99 = NormalDist().inv_cdf(0.99)
"""Standard normal quantile at 0.99. [1]"""


def fit_lognormal(p50, p95, p99=None):
    """Fit a lognormal through stated percentiles.

    Parameters
    ----------
    p50 : float or array
        Median length. [tokens]
    p95 : float or array
        95th-percentile length, at least ``p50``. [tokens]
    p99 : float or array, optional
        99th-percentile length, at least ``p95``; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    median : float or array
        The median ``m = p50``. [tokens]
    sigma : float or array
        Standard deviation of ``ln n``. [ln tokens]

    Notes
    -----
    ``m = p50``; ``sigma = (z95 ln(p95/p50) + z99 ln(p99/p50)) / (z95² + z99²)``.

    Examples
    --------
    >>> median, sigma = fit_lognormal(2000, 2000, 2000)
    >>> sigma
    0.0
    """
    if p99 is None:
        sigma = arrays.log(p95 / p50) / Z95
    else:
        sigma = (Z95 * arrays.log(p95 / p50) + Z99 * arrays.log(p99 / p50)) / (Z95**2 + Z99**2)
    return p50 * 1.0, sigma


def _lognormal_mean(median, sigma):
    """Mean of a lognormal. [tokens]

    Parameters
    ----------
    median : float or array
        Median length. [tokens]
    sigma : float or array
        Standard deviation of the log length. [ln tokens]

    Returns
    -------
    float or array
        ``E[n]``. [tokens]

    Notes
    -----
    ``E[n] = m exp(sigma² / 2)``.
    """
    return median * arrays.exp(sigma * sigma / 2.0)


def _lognormal_second_moment(median, sigma):
    """Second raw moment of a lognormal. [tokens²]

    Parameters
    ----------
    median : float or array
        Median length. [tokens]
    sigma : float or array
        Standard deviation of the log length. [ln tokens]

    Returns
    -------
    float or array
        ``E[n²]``. [tokens²]

    Notes
    -----
    ``E[n²] = m² exp(2 sigma²)``.
    """
    return median * median * arrays.exp(2.0 * sigma * sigma)


def lognormal_quantile(median, sigma, q):
    """Length at quantile ``q`` of a fitted lognormal. [tokens]

    Parameters
    ----------
    median : float or array
        Median length. [tokens]
    sigma : float or array
        Standard deviation of the log length. [ln tokens]
    q : float
        Quantile, strictly between 0 and 1. [1]

    Returns
    -------
    float or array
        ``m · exp(sigma · z_q)``, with ``z_q`` the standard normal quantile at ``q``. [tokens]
    """
    return median * arrays.exp(sigma * NormalDist().inv_cdf(q))


def length_moments(p50, p95, p99=None):
    """Mean and second moment of a length distribution given by percentiles.

    Parameters
    ----------
    p50 : float or array
        Median length. [tokens]
    p95 : float or array
        95th-percentile length, at least ``p50``. [tokens]
    p99 : float or array, optional
        99th-percentile length, at least ``p95``; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    mean : float or array
        ``E[n]``. [tokens]
    second_moment : float or array
        ``E[n²]``. [tokens²]

    Examples
    --------
    >>> length_moments(300, 300, 300)
    (300.0, 90000.0)
    """
    median, sigma = fit_lognormal(p50, p95, p99)
    return _lognormal_mean(median, sigma), _lognormal_second_moment(median, sigma)


def length_at_percentile(p50, p95, p99, percentile):
    """The length at the promise's percentile: the stated p50, p95 or p99 where the percentile is one of them,
    else the fitted lognormal's quantile ``m · exp(σ · z)``. [tokens]

    Parameters
    ----------
    p50, p95 : float or array
        Stated percentiles. [tokens]
    p99 : float or array or None
        Stated 99th percentile, may be left out. [tokens]
    percentile : float
        The promise's percentile, in (0, 100). [percent]

    Returns
    -------
    float or array
        The length at ``percentile``. [tokens]

    Examples
    --------
    >>> length_at_percentile(2000, 8000, 12000, 95)
    8000
    >>> round(float(length_at_percentile(1000, 2000, None, 90)), 1)   # 1000 · 2^(z90 / z95) = 1000 · 2^(1.2816 / 1.6449)
    1716.1
    """
    if percentile == 95:
        return p95
    if percentile == 50:
        return p50
    if percentile == 99 and p99 is not None:
        return p99
    m, sigma = fit_lognormal(p50, p95, p99)
    return m * arrays.exp(sigma * NormalDist().inv_cdf(percentile / 100.0))
