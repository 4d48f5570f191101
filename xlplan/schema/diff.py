"""The typed result of `xlplan diff`: which inputs of a plan changed, by whom and from where, and what changed in consequence.

Like the plan's result, these models know nothing of how they are shown: the command prints them, ``--json`` dumps them.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from xlplan.schema.record import _Out

DIFF_SCHEMA_VERSION = 1
"""The layout of ``xlplan diff --json`` (:class:`PlanDiff`): 1, the first with a version (docs/versioning.md). [—]"""


class InputChange(_Out):
    """One plan field whose value differs between the two plans, with the owner and the source of its section."""

    path: str = Field(description="The field's dotted path in the plan, e.g. forecast.prompt_tokens.p95. [text]")
    unit: str = Field(description="Its unit, as its description in the plan's schema gives it ('' for text and choices). [text]")
    old: Any = Field(description="Its value in the old plan (None: not given). [unit]")
    new: Any = Field(description="Its value in the new plan (None: not given). [unit]")
    owner_section: str | None = Field(description="Which owners.<section> answers for it (forecast, promise, pricing or model), "
                                                   "mapped as the workbook's inputs are; None for the plan's own name, date and accepted fields. [text]")
    owner: str | None = Field(description="The old plan's owner of that section. [text]")
    new_owner: str | None = Field(default=None, description="The new plan's owner, where it differs from the old. [text]")
    source: str | None = Field(description="The old plan's sources.<section>, and the section's own source "
                                           "(costs.source, api.source, growth.source) where it has one. [text]")
    new_source: str | None = Field(default=None, description="The new plan's source, where it differs from the old. [text]")


class Compared(_Out):
    """One figure of the answer in the old plan and the new, and whether it changed."""

    unit: str = Field(description="The figure's unit ('' for text). [text]")
    old: Any = Field(description="The old plan's figure (None: the plan cannot be met, or has no such figure). [unit]")
    new: Any = Field(description="The new plan's figure. [unit]")
    changed: bool = Field(description="Whether the two differ. [bool]")


class Consequences(_Out):
    """What the changed inputs change in the Answer: the fleet, the binding constraint, the bill and the order dates."""

    method: str = Field(description="How both plans were answered: 'closed form' (not simulated) or 'verified' "
                                    "(each Answer simulated at peak, as `xlplan plan` verifies it). [text]")
    feasible: Compared = Field(description="Whether each plan can be met on its hardware, with the reason where not.")
    source: Compared = Field(description="Where each Answer's fleet comes from (answer.source): 'verified' or 'closed form'. [text]")
    load: Compared = Field(description="GPUs the peak needs (the Answer's load). [GPUs]")
    with_redundancy: Compared = Field(description="The Answer's fleet with redundancy. [GPUs]")
    purchased: Compared = Field(description="Rounded up to whole purchasing units. [GPUs]")
    order: Compared = Field(description="What to order, as the Answer line says it (answer.order). [text]")
    settings: Compared | None = Field(default=None, description="The settings to deploy in the engine's own flags "
                                                               "(answer.settings): the TP degree and step budget the "
                                                               "configuration search chose. Added within version 1 of "
                                                               "this JSON; absent from older output. [text]")
    binding: Compared = Field(description="The Answer's binding path: the closed form's (memory, compute, latency, queueing). [text]")
    runbook_binding: Compared = Field(description="The binding constraint by the runbook's method (memory, compute, latency, both). [text]")
    monthly_usd: Compared = Field(description="The monthly bill of the Answer's fleet. [USD/month]")
    usd_per_mtok: Compared = Field(description="Cost per million tokens at the average utilisation. [USD/Mtok]")
    order_dates: Compared | None = Field(default=None, description="Where both plans have a growth section: each month "
                                                                   "that needs new GPUs, 'YYYY-MM: N new GPUs, order by YYYY-MM-DD', "
                                                                   "as `xlplan schedule` dates them; None otherwise. [text]")
    schedule_note: str = Field(default="", description="Why the order dates are not compared, or how the schedules were "
                                                       "sized. [text]")


class PlanDiff(_Out):
    """`xlplan diff OLD NEW`: the inputs that changed, then what changed in consequence."""

    schema_version: int = Field(default=DIFF_SCHEMA_VERSION, description="The layout of this JSON (docs/versioning.md): "
                                "raised when a change breaks a reader. [—]")
    inputs_changed: list[InputChange] = Field(description="Every plan field that differs, in the plan's order.")
    consequences: Consequences = Field(description="The answer of each plan, figure by figure.")
    differs: bool = Field(description="Whether anything differs, an input or a figure (the command's exit status 1). [bool]")
