"""Concurrency by Little's Law: the bridge from a rate to what is resident.

References
----------
Runbook, document 14, step 3 · "in flight = arrival rate × time in system";
"40 req/s × 15 s = 600 in flight".
"""

from __future__ import annotations


def time_in_system_s(mean_output_tokens, itl_s, ttft_s=0.0):
    """Mean time a request occupies a slot. [s]

    Parameters
    ----------
    mean_output_tokens : float or array
        Mean output length ``E[output]``. [tokens]
    itl_s : float or array
        Inter-token latency target. [s/token]
    ttft_s : float or array
        Time to first token to add; the runbook leaves it out (0). [s]

    Returns
    -------
    float or array
        ``E[output] × ITL + TTFT``: how long one request holds a slot, on average. [s]

    Notes
    -----
    ``E[output] × ITL (+ TTFT)``. The runbook: 300 tokens × 0.05 s = 15 s.

    References
    ----------
    Runbook, document 14, step 3 · "at 20 tokens/second a 300-token answer occupies a slot for 15 seconds".

    Examples
    --------
    >>> time_in_system_s(300, 0.05)
    15.0
    """
    return mean_output_tokens * itl_s + ttft_s


def littles_law(arrival_rate_rps, time_in_system_s):
    """Requests in flight. [requests]

    Parameters
    ----------
    arrival_rate_rps : float or array
        Peak arrival rate. [requests/s]
    time_in_system_s : float or array
        Mean time in system. [s]

    Returns
    -------
    float or array
        Mean requests in the system at once, ``L = λ × W``. [requests]

    Notes
    -----
    ``L = λ × W`` (Little, 1961).

    References
    ----------
    Little, J. D. C. (1961). "A proof for the queuing formula: L = λW". Operations Research 9(3), 383-387.
    Runbook, document 14, step 3 · "in flight = arrival rate × time in system"; "40 req/s × 15 s = 600 in flight".

    Examples
    --------
    >>> littles_law(40, 15)
    600
    """
    return arrival_rate_rps * time_in_system_s


def streaming_speed_to_itl_s(tokens_per_s):
    """Inter-token latency for a streaming speed: 20 tokens/s is 0.05 s. [s/token]

    Parameters
    ----------
    tokens_per_s : float
        Streaming speed per request. [tokens/s]

    Returns
    -------
    float
        ``1 ÷ speed``: the time between two tokens of one stream. [s/token]
    """
    return 1.0 / tokens_per_s
