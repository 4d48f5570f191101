"""Which inputs each engine value of the workbook depends on, and the formula that says when one has moved.

The Summary's Answer, its sentences, the Options table and the Schedule's months are engine values: computed when the
workbook was built, not formulas, so an edit on 1 Inputs leaves them as they were. Each carries a flag by formula that
says STALE once any input it depends on differs from its value at build time. What depends on what is one explicit
map, :data:`VALUE_INPUTS`, from the groups below; the build-time values sit once in the Summary's snapshot
(``Built<Input>`` names), and :func:`flag_formula` compares each value's inputs with them.
"""

from __future__ import annotations

from functools import cache

FLEET = "fleet"
PAYMENT = "payment"
PRICE = "price"
VOLUME = "volume"
API = "api"
OPS = "ops"

GROUP_OF_PATH = (
    # (plan-file path prefix, group): the first prefix that matches a field's path names its group
    (("forecast", "average_utilisation"), VOLUME),
    (("hardware", "usd_per_gpu_hour"), PRICE),
    (("hardware", "hours_per_month"), PRICE),
    (("hardware", "ops_usd_per_month"), OPS),
    (("costs", "mode"), PAYMENT),
    (("costs", "source"), None),
    (("costs",), PRICE),
    (("api", "provider"), None),
    (("api", "source"), None),
    (("api",), API),
    (("policy", "calibration", "source"), None),
    (("forecast",), FLEET),
    (("promise",), FLEET),
    (("model",), FLEET),
    (("hardware",), FLEET),
    (("policy",), FLEET),
)
"""Each input's group by its plan-file path. The fleet's inputs are the traffic at peak, the promise, the model, the
GPU and its unit, and the policy; how it is paid for, its price and hours, the average volume (tokens a month), the API's
prices and the cost of running it yourself each move only money. Text that names a source (None) moves no figure."""

FLEET_VALUE = (FLEET, PAYMENT)  # the TP degree bills the fewest GPUs, and what is billed follows how it is paid for
BILLED = (FLEET, PAYMENT)
BILL = (FLEET, PAYMENT, PRICE)
PER_TOKEN = (FLEET, PAYMENT, PRICE, VOLUME)
AGAINST_API = (FLEET, PAYMENT, PRICE, VOLUME, API, OPS)

VALUE_INPUTS: dict[str, tuple[str, ...]] = {
    # Summary · the Answer's rows (the fleet verified in simulation, and its bill)
    "AnswerSource": FLEET_VALUE, "AnswerLoad": FLEET_VALUE, "AnswerWithRedundancy": FLEET_VALUE,
    "AnswerPurchased": FLEET_VALUE, "AnswerBinding": FLEET_VALUE, "AnswerStepBudget": FLEET_VALUE,
    "AnswerOrder": BILLED, "AnswerBilledGPUs": BILLED,
    "AnswerMonthlyUSD": BILL, "AnswerUSDPerMTok": PER_TOKEN,
    "AnswerAgainstAPI": (FLEET, PAYMENT, PRICE, VOLUME, API),  # the bill against the API's price of the same tokens
    "AnswerCapexUSD": BILL, "AnswerPaybackMonths": BILL,  # bought: the nodes' price, and the rent of the same units
    "AnswerNPVUSD": (FLEET, PAYMENT, PRICE, OPS),
    # the contract mix: the fleet's hours priced on demand and reserved, the top of the peak on the API
    "AnswerMix": (FLEET, PRICE, API), "AnswerMixMonthlyUSD": (FLEET, PRICE, API), "AnswerMixSavingsRate": (FLEET, PRICE),
    "AnswerMixCoverage": (FLEET, PRICE), "AnswerMixUtilisation": (FLEET, PRICE), "AnswerMixBreakEven": (PRICE,),  # owning over the life, with the engineering self-hosting needs
    # Summary · its sentences
    "SummaryVerifiedSentence": FLEET_VALUE,
    "SummaryWhichHardware": PER_TOKEN,  # the Options' ranking, by $/M tokens
    "SummaryWhenToOrder": AGAINST_API,  # the Schedule's first order and its API comparison
    # the decision tabs
    "OptionsTable": PER_TOKEN,  # each GPU's fleet, its price and its rank by $/M tokens
    "ScheduleMonths": AGAINST_API,  # each month's fleet and the API's cost beside it
}
"""Engine value (its flag's name less 'Stale') → the input groups it depends on: one explicit map."""


def group_of(path: tuple[str, ...]) -> str | None:
    """The group of the input at ``path`` (:data:`GROUP_OF_PATH`); None for text that moves no figure. [text]

    Parameters
    ----------
    path : tuple of str
        The input's plan-file path, e.g. ``('hardware', 'usd_per_gpu_hour')``.

    Returns
    -------
    str or None
        One of the groups; None for a source or provider's name.
    """
    for prefix, group in GROUP_OF_PATH:
        if path[:len(prefix)] == prefix:
            return group
    raise ValueError(f"input {'.'.join(path)} has no group in GROUP_OF_PATH; give it one")


@cache
def inputs_of(value: str) -> tuple[str, ...]:
    """The defined names of the inputs on 1 Inputs that ``value`` depends on, in sheet order. [names]

    Parameters
    ----------
    value : str
        A key of :data:`VALUE_INPUTS`.

    Returns
    -------
    tuple of str
        Each input whose group is among the value's.
    """
    return _names_in(set(VALUE_INPUTS[value]))


def _names_in(groups: set[str]) -> tuple[str, ...]:
    """The inputs on 1 Inputs whose group is one of ``groups``, in sheet order. [names]"""
    from xlplan.excel.inputs import all_inputs

    return tuple(s.name for s in all_inputs() if group_of(s.path) in groups)


def built_name(input_name: str) -> str:
    """The defined name of an input's value at build time, in the Summary's snapshot. [name]"""
    return f"Built{input_name}"


def same(name: str, value, ref: str) -> str:
    """A condition true while input ``name`` still holds ``ref``, the cell with its value at build time. [formula]

    Parameters
    ----------
    name : str
        The input's defined name.
    value : object
        Its value at build time: a number compares within the rounding tolerance, anything else as text.
    ref : str
        The cell (or defined name) holding that value.

    Returns
    -------
    str
        A formula fragment, TRUE while the input is unchanged.
    """
    if isinstance(value, bool):  # compared as booleans: as text LibreOffice writes TRUE as "1", Excel as "TRUE"
        return f"{name}={ref}"
    if not isinstance(value, (int, float)):
        return f'{name}&""={ref}&""'
    return f"IFERROR(ABS({name}-{ref})<=RoundingTolerance*ABS({ref}),FALSE)"


CURRENT = "current"
STALE = "STALE: an input it depends on changed; rebuild with xlplan workbook"


GROUPS = (FLEET, PAYMENT, PRICE, VOLUME, API, OPS)
"""The input groups, in the order the Summary lists whether each is unchanged."""


def group_name(group: str) -> str:
    """The defined name of the Summary cell that is TRUE while every input of ``group`` holds its build-time value. [name]"""
    return f"Unchanged{group.capitalize()}Inputs"


def group_inputs(group: str) -> tuple[str, ...]:
    """The defined names of the inputs on 1 Inputs in ``group``, in sheet order. [names]

    Parameters
    ----------
    group : str
        One of :data:`GROUPS`.

    Returns
    -------
    tuple of str
        Each input whose plan-file path is in the group (:func:`group_of`).
    """
    return _names_in({group})


def group_formula(group: str, built: dict[str, object]) -> str:
    """TRUE while every input of ``group`` holds its build-time value (the Summary's ``Built<Input>`` names). [formula]

    Parameters
    ----------
    group : str
        One of :data:`GROUPS`.
    built : dict
        Input name → its value at build time, to choose each comparison.

    Returns
    -------
    str
        ``=AND(...)`` of :func:`same` over the group's inputs.
    """
    return f"=AND({','.join(same(n, built.get(n), built_name(n)) for n in group_inputs(group))})"


def flag_formula(value: str) -> str:
    """The flag of ``value``: 'current' while every group of inputs it depends on is unchanged, else STALE. [formula]

    Parameters
    ----------
    value : str
        A key of :data:`VALUE_INPUTS`.

    Returns
    -------
    str
        ``=IF(AND(Unchanged…Inputs, …),"current","STALE: …")``: one cell per group, computed once on the Summary.
    """
    return f'=IF(AND({",".join(group_name(g) for g in VALUE_INPUTS[value])}),"{CURRENT}","{STALE}")'
