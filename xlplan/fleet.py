"""The fleet: whole replicas, redundancy, the purchasing unit, and which path binds.

References
----------
Runbook, document 14, step 6 · "Take the larger, add headroom, round to something
buyable: 4 for the load, +1 for N+1 … buy a node of 8" and "the answer is three
numbers, not one: the load, the redundancy, and the purchasing unit".
"""

from __future__ import annotations

from xlplan import arrays

ROUNDING_TOLERANCE = 1e-9
"""Relative slack before rounding up, so 4.000000000001 GPUs of float noise is 4. [fraction]"""

PATHS = ("memory", "compute", "latency")


def whole_replicas(gpus_exact, tp):
    """Replicas of ``tp`` GPUs that cover ``gpus_exact``. [replicas]

    Parameters
    ----------
    gpus_exact : float or array
        GPUs a path needs before rounding. [GPUs]
    tp : int
        GPUs per replica. [GPUs]

    Returns
    -------
    float or array
        ``ceil(gpus_exact ÷ tp)``, with :data:`ROUNDING_TOLERANCE` of slack for float noise. [replicas]

    Examples
    --------
    >>> whole_replicas(3.14, 1), whole_replicas(3.14, 2)
    (4.0, 2.0)
    """
    x = gpus_exact / tp
    return arrays.ceil(x * (1.0 - ROUNDING_TOLERANCE))


def whole_units(gpus, unit):
    """GPUs rounded up to whole purchasing units: the one rounding every fleet, bill and schedule month uses. [GPUs]

    Parameters
    ----------
    gpus : float or array
        GPUs needed (the fleet with redundancy). [GPUs]
    unit : float or array
        The purchasing unit: GPUs per node, or 1 for a fleet bought or rented by the GPU. [GPUs]

    Returns
    -------
    float or array
        ``ceil(gpus ÷ unit − tolerance) × unit``, with :data:`ROUNDING_TOLERANCE` of slack for float noise. [GPUs]

    References
    ----------
    Runbook, document 14, step 6 · "round to something buyable: … buy a node of 8".

    Examples
    --------
    >>> whole_units(5, 8), whole_units(9, 8), whole_units(7, 1)
    (8.0, 16.0, 7.0)
    """
    return arrays.ceil(gpus / unit - ROUNDING_TOLERANCE) * unit


def whole_gpus(gpus_exact, tp):
    """GPUs in whole replicas of ``tp`` that cover ``gpus_exact``. [GPUs]

    Parameters
    ----------
    gpus_exact : float or array
        GPUs a path needs before rounding. [GPUs]
    tp : int
        GPUs per replica. [GPUs]

    Returns
    -------
    float or array
        :func:`whole_replicas` × ``tp``. [GPUs]

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable".

    Examples
    --------
    The runbook's memory path: 3.14 GPUs -> 4; at TP 2, 2 replicas of 2.

    >>> whole_gpus(3.14, 1), whole_gpus(3.14, 2)
    (4.0, 4.0)
    """
    return whole_replicas(gpus_exact, tp) * tp


def fleet_sizes(load_replicas, tp, redundancy_replicas, gpus_per_node):
    """The three numbers: load, with redundancy, purchased. [GPUs]

    Parameters
    ----------
    load_replicas : float or array
        Replicas the peak needs. [replicas]
    tp : int
        GPUs per replica (a divisor of the node, so replicas stay inside a node). [GPUs]
    redundancy_replicas : int
        Spare replicas (N+k). [replicas]
    gpus_per_node : int
        The purchasing unit. [GPUs]

    Returns
    -------
    load : float or array
        GPUs the peak needs. [GPUs]
    with_redundancy : float or array
        The load plus the spare replicas. [GPUs]
    purchased : float or array
        ``with_redundancy`` rounded up to whole nodes. [GPUs]

    References
    ----------
    Runbook, document 14, step 6 · "4 for the load, +1 for N+1 … buy a node of 8" and "the answer is three
    numbers, not one: the load, the redundancy, and the purchasing unit".

    Examples
    --------
    The runbook: 4 for the load, 5 with N+1, a node of 8.

    >>> fleet_sizes(4, 1, 1, 8)
    (4, 5, 8.0)
    """
    load = load_replicas * tp
    with_redundancy = (load_replicas + redundancy_replicas) * tp
    purchased = whole_units(with_redundancy, gpus_per_node)
    return load, with_redundancy, purchased


MINIMUM_REPLICA = "minimum replica"
"""The binding label when every path fits in less than one replica: the fleet is the smallest unit, not a path."""
SIMULATED_QUEUEING = "queueing (simulated)"
"""The Answer's binding where the simulation needs more GPUs than every closed-form path: the queue at peak, with each
request's own lengths and steps, is longer than the closed form's means give."""


def binding_constraint(memory_gpus: float, compute_gpus: float, latency_gpus: float,
                       tp: int | None = None) -> tuple[str, tuple[str, ...]]:
    """Which path needs the most GPUs: 'memory', 'compute', 'latency', 'both', 'all' — or 'minimum replica'.

    Parameters
    ----------
    memory_gpus, compute_gpus, latency_gpus : float
        Each path's whole-replica GPU count. [GPUs]
    tp : int, optional
        GPUs per replica; when every path needs just one replica, the fleet is the minimum replica and no path
        binds. [GPUs]

    Returns
    -------
    label : str
        One path's name; 'both' when two tie for the most, 'all' when three do.
    paths : tuple of str
        The paths that tie for the most.

    Examples
    --------
    >>> binding_constraint(4, 4, 1)
    ('both', ('memory', 'compute'))
    >>> binding_constraint(1, 1, 1, 1)
    ('minimum replica', ())
    """
    if tp is not None and memory_gpus == compute_gpus == latency_gpus == tp:
        return MINIMUM_REPLICA, ()
    counts = dict(zip(PATHS, (memory_gpus, compute_gpus, latency_gpus)))
    top = max(counts.values())
    paths = tuple(p for p in PATHS if counts[p] == top)
    label = paths[0] if len(paths) == 1 else ("both" if len(paths) == 2 else "all")
    return label, paths


BILLING_WORDS = {"rent_per_gpu": "rented", "rent_per_node": "rented by the node", "buy": "owned"}
"""How a bill's GPUs are paid for, by ``costs.mode``, as the note's bill line names them. [text]"""


def order_words(paid_as: str, with_redundancy: int, purchased: int, gpus_per_node: int) -> str:
    """What to order, as the Answer line says it: the GPUs rented, or the nodes rented or bought. [text]

    Parameters
    ----------
    paid_as : {'rent_per_gpu', 'rent_per_node', 'buy'}
        How the fleet is paid for (``costs.mode``).
    with_redundancy : int
        The fleet with redundancy: what renting per GPU rents. [GPUs]
    purchased : int
        ``with_redundancy`` in whole purchasing units: what renting per node rents and buying buys. [GPUs]
    gpus_per_node : int
        The purchasing unit. [GPUs]

    Returns
    -------
    str
        'rent 7 GPUs', 'rent 1 node of 8', 'buy 2 nodes of 8 (16 GPUs)'; a unit of one GPU is counted in GPUs. [text]

    References
    ----------
    Runbook, document 14, step 6 · "4 for the load, +1 for N+1 … buy a node of 8": the purchasing unit is what is
    bought; rented per GPU, the fleet with redundancy is what is paid for.

    Examples
    --------
    >>> order_words("rent_per_gpu", 7, 8, 8), order_words("rent_per_node", 7, 8, 8), order_words("buy", 9, 16, 8)
    ('rent 7 GPUs', 'rent 1 node of 8', 'buy 2 nodes of 8 (16 GPUs)')
    """
    verb = "buy" if paid_as == "buy" else "rent"
    if paid_as == "rent_per_gpu" or gpus_per_node == 1:
        n = with_redundancy if paid_as == "rent_per_gpu" else purchased
        return f"{verb} {n:,} GPU{'' if n == 1 else 's'}"
    nodes = purchased // gpus_per_node
    if nodes == 1:
        return f"{verb} 1 node of {gpus_per_node}"
    return f"{verb} {nodes:,} nodes of {gpus_per_node} ({purchased:,} GPUs)"


def billed_gpus_paid_as(paid_as: str, with_redundancy, gpus_per_node):
    """GPUs on the bill as the fleet is paid for: rented per GPU, the fleet with redundancy; rented by the node or
    bought, whole purchasing units. [GPUs]

    Parameters
    ----------
    paid_as : {'rent_per_gpu', 'rent_per_node', 'buy'}
        How the fleet is paid for (``costs.mode``).
    with_redundancy : float or array
        The fleet with redundancy. [GPUs]
    gpus_per_node : int
        The purchasing unit. [GPUs]

    Returns
    -------
    float or array
        ``with_redundancy``, or it rounded up to whole purchasing units. [GPUs]

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours": the runbook rents its fleet with redundancy by the
    GPU, and buys "a node of 8".

    Examples
    --------
    >>> billed_gpus_paid_as("rent_per_gpu", 7, 8), billed_gpus_paid_as("rent_per_node", 7, 8), billed_gpus_paid_as("buy", 9, 8)
    (7, 8.0, 16.0)
    """
    if paid_as == "rent_per_gpu":
        return with_redundancy
    return whole_units(with_redundancy, gpus_per_node)
