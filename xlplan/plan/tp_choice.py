"""How the tensor-parallel degree is chosen: the objective that orders the degrees, and the wire they all-reduce on.

:func:`objective` is one sum whose order is fewest purchased GPUs, then fewest billed, then the smallest degree; the
workbook's TP table writes the same sum with the same weights. :data:`ACTIVATION_BYTES` is what each activation
costs on the TP all-reduce wire.
"""

from __future__ import annotations

from xlplan.schema.steps import Paths

ACTIVATION_BYTES = 2.0
"""Bytes per activation element on the wire (bf16 all-reduces, as the engines send them). [bytes]"""


TP_OBJECTIVE_PURCHASED = 1e8
"""Weight of a GPU purchased in :func:`objective`: above every billed count's weight times any fleet under a million
GPUs. [1/GPU]"""

TP_OBJECTIVE_BILLED = 100.0
"""Weight of a GPU billed in :func:`objective`: above every TP degree (at most 64). [1/GPU]"""


def objective(purchased, billed, tp):
    """The number TP degrees are chosen by, smallest first: fewest purchased GPUs, then fewest billed, then the smallest
    degree, as one sum. [1]

    Parameters
    ----------
    purchased : float or array
        GPUs purchased at that degree (infinite where it cannot run). [GPUs]
    billed : float or array
        GPUs billed there: purchased or with redundancy, as the plan bills. [GPUs]
    tp : float or array
        The degree. [GPUs]

    Returns
    -------
    float or array
        ``purchased × 10⁸ + billed × 100 + tp``; its order is the lexicographic order of ``(purchased, billed, tp)``
        for fleets under a million GPUs and degrees under 100, and exact in a float (below 2⁵³). The workbook's TP
        table writes the same sum with these weights (:data:`TP_OBJECTIVE_PURCHASED`, :data:`TP_OBJECTIVE_BILLED`). [1]

    Examples
    --------
    >>> objective(8, 5, 1) < objective(8, 6, 1) < objective(16, 1, 1)
    True
    """
    return purchased * TP_OBJECTIVE_PURCHASED + billed * TP_OBJECTIVE_BILLED + tp


def billed_gpus(p: Paths, bill_purchased: bool):
    """GPUs on the bill at one TP degree: those purchased where the plan bills what it buys, else the fleet with
    redundancy (rented). [GPUs]

    Parameters
    ----------
    p : Paths
        One TP degree's paths (or anything with ``purchased`` and ``with_redundancy``, such as a closed form).
    bill_purchased : bool
        The plan bills the purchased fleet (whole purchasing units).

    Returns
    -------
    float or array
        ``purchased`` or ``with_redundancy``. [GPUs]
    """
    return p.purchased if bill_purchased else p.with_redundancy


def tp_objective(p: Paths, billed):
    """:func:`objective` of one TP degree's paths. [1]

    Parameters
    ----------
    p : Paths
        One TP degree's paths.
    billed : float or array
        GPUs billed at that degree: purchased or with redundancy, as the plan bills. [GPUs]

    Returns
    -------
    float or array
        ``objective(purchased, billed, tp)``; the smallest wins. [1]
    """
    return objective(p.purchased, billed, p.tp)
