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

    Notes
    -----
    ``E[output] × ITL (+ TTFT)``. The runbook: 300 tokens × 0.05 s = 15 s.

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

    Notes
    -----
    ``L = λ × W`` (Little, 1961).

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
    """
    return 1.0 / tokens_per_s
