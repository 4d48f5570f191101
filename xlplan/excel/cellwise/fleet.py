"""The fleet as spreadsheet-sized functions: which path binds, the three numbers, and the inverse question.

Part of :mod:`xlplan.excel.cellwise`; each composes :mod:`xlplan.fleet` or
:mod:`xlplan.decide.capacity`.

References
----------
Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable".
"""

from __future__ import annotations

from xlplan import fleet
from xlplan.decide import capacity
from xlplan.schema.plan import Plan


def billed_gpus(with_redundancy: int, gpus_per_node: int, paid_as: str = "rent_per_gpu") -> int:
    """GPUs on the bill as the fleet is paid for (rented per GPU: 7; by the node or bought: 8 for a node of 8). [GPUs]

    Parameters
    ----------
    with_redundancy : int
        The fleet with redundancy. [GPUs]
    gpus_per_node : int
        The purchasing unit. [GPUs]
    paid_as : {'rent_per_gpu', 'rent_per_node', 'buy'}
        How the fleet is paid for (the plan's ``costs.mode``).

    Returns
    -------
    int
        :func:`xlplan.fleet.billed_gpus_paid_as`. [GPUs]
    """
    return int(fleet.billed_gpus_paid_as(paid_as, with_redundancy, gpus_per_node))


def binding(memory_gpus_: float, compute_gpus_: float, latency_gpus_: float = 0.0, tp: int | None = None) -> str:
    """Which path binds: 'memory', 'compute', 'latency', 'both', 'all' or 'minimum replica'. [text]

    Parameters
    ----------
    memory_gpus_ : float
        The memory path. [GPUs]
    compute_gpus_ : float
        The compute path. [GPUs]
    latency_gpus_ : float
        The latency path; 0 to compare memory and compute only. [GPUs]
    tp : int, optional
        GPUs per replica: where every path is exactly one replica, no path binds ('minimum replica', the engine's
        label); None leaves that rule out. [GPUs]

    Returns
    -------
    str
        The path that needs the most GPUs; 'both' when two tie for the most, 'all' when three do.

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8".
    """
    return fleet.binding_constraint(memory_gpus_, compute_gpus_, latency_gpus_, tp)[0]


def fleet_sizes(memory_gpus_: float, compute_gpus_: float, latency_gpus_: float = 0.0, tp: int = 1, redundancy: int = 1,
                gpus_per_node: int = 8) -> tuple[float, float, float]:
    """The three numbers: load, with redundancy, purchased. [GPUs]

    Parameters
    ----------
    memory_gpus_ : float
        The memory path. [GPUs]
    compute_gpus_ : float
        The compute path. [GPUs]
    latency_gpus_ : float
        The latency path. [GPUs]
    tp : int
        GPUs per replica. [GPUs]
    redundancy : int
        Spare replicas (N+k). [replicas]
    gpus_per_node : int
        The purchasing unit. [GPUs]

    Returns
    -------
    load : float
        GPUs the largest path needs. [GPUs]
    with_redundancy : float
        The load plus the spare replicas. [GPUs]
    purchased : float
        ``with_redundancy`` rounded up to whole nodes. [GPUs]

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8".

    Examples
    --------
    >>> fleet_sizes(4, 4, 3)
    (4.0, 5.0, 8.0)
    """
    load_replicas = max(memory_gpus_, compute_gpus_, latency_gpus_) / tp
    return fleet.fleet_sizes(load_replicas, tp, redundancy, gpus_per_node)


def max_rate_rps(plan: Plan, gpus: int) -> float:
    """The highest peak rate ``gpus`` GPUs sustain under the plan's promise (the inverse question). [requests/s]

    Parameters
    ----------
    plan : Plan
        The plan; its peak rate is ignored.
    gpus : int
        GPUs serving the load, spares excluded. [GPUs]

    Returns
    -------
    float
        The closed form's capacity of the fleet, all four paths (memory, compute, latency and queueing;
        :func:`xlplan.decide.capacity.closed_form_capacity`): what ``xlplan capacity --no-verify`` prints. [requests/s]
    """
    from xlplan.plan.scenario import resolve

    return capacity.closed_form_capacity(resolve(plan), gpus, plan.policy.max_num_batched_tokens is not None).max_peak_rps
