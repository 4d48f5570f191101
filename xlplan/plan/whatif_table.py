"""The what-ifs of section 6 as a table: each row the changes it makes to the plan, and the label the note prints.

Data and words only, nothing solved: the workbook's ``6 Sensitivities`` tab and its reader lay out and read back the
same rows. :mod:`xlplan.plan.whatif` makes each change and re-plans it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan.plan.scenario import Scenario
from xlplan.schema.plan import Plan


def _fmt_tokens(x: float) -> str:
    return f"{x:,.0f}"


@dataclass(frozen=True, slots=True)
class WhatIf:
    """One what-if: the changes it makes to the plan. A field left as None keeps the plan's value.

    The workbook's ``6 Sensitivities`` tab lays out the same table, one row per
    what-if, so a user can add a row of their own with the same columns.
    """

    rate_x: float = 1.0  # multiplies the peak rate [ratio]
    prompt_p95_x: float = 1.0  # multiplies p95 prompt length (p50 lowered, p99 raised to keep order) [ratio]
    itl_x: float = 1.0  # multiplies the inter-token target [ratio]
    kv_dtype: str | None = None  # KV-cache precision [text]
    weights_dtype: str | None = None  # weight precision [text]
    prefix_reuse: float | None = None  # [fraction]
    average_utilisation: float | None = None  # [fraction]


STANDARD_WHAT_IFS: tuple[WhatIf, ...] = (
    WhatIf(rate_x=1.5),
    WhatIf(rate_x=2.0),
    WhatIf(prompt_p95_x=4.0),
    WhatIf(itl_x=0.5),
    WhatIf(itl_x=2.0),
    WhatIf(kv_dtype="fp8"),
    WhatIf(weights_dtype="fp8"),
    WhatIf(prefix_reuse=0.5),
    WhatIf(average_utilisation=0.2),
    WhatIf(average_utilisation=0.5),
)
"""The standard what-ifs of section 6, in the order the note and the workbook show them."""


def describe(plan: Plan, s: Scenario, w: WhatIf) -> str:
    """A what-if's label as the note prints it, e.g. 'peak rate x1.5 (60 req/s)'. [text]

    Parameters
    ----------
    plan : Plan
        The plan as written: a dtype what-if that changes nothing is marked '(already)'.
    s : Scenario
        The plan's numbers.
    w : WhatIf
        The what-if to describe.

    Returns
    -------
    str
        Its changes joined by '; ', or 'as planned' when it changes nothing.
    """
    parts = []
    if w.rate_x != 1.0:
        parts.append(f"peak rate x{w.rate_x:g} ({s.peak_rps * w.rate_x:g} req/s)")
    if w.prompt_p95_x != 1.0:
        parts.append(f"p95 prompts reach {_fmt_tokens(s.prompt_p95 * w.prompt_p95_x)} tokens (x{w.prompt_p95_x:g})")
    if w.itl_x != 1.0:
        way = "halved" if w.itl_x == 0.5 else "doubled" if w.itl_x == 2.0 else f"x{w.itl_x:g}"
        itl = s.itl_s * w.itl_x
        parts.append(f"inter-token target {way} ({itl:g} s, {1 / itl:g} tokens/s)")
    for label, field in (("fp8 KV cache", "kv_dtype"), ("fp8 weights", "weights_dtype")):
        value = getattr(w, field)
        if value is not None:
            text = label if value == "fp8" else f"{value} {label.split(' ', 1)[1]}"
            parts.append(text + (" (already)" if getattr(plan.model, field) == value else ""))
    if w.prefix_reuse is not None:
        parts.append(f"prefix reuse {w.prefix_reuse:.0%}")
    if w.average_utilisation is not None:
        parts.append(f"average utilisation {w.average_utilisation:.0%}")
    return "; ".join(parts) or "as planned"
