"""What the monthly review reads from a plan file: the GPUs in service, the orders placed and the plan's own triggers.

Part of the plan file's schema; import the models from :mod:`xlplan.schema.plan`, their public home. ``xlplan review``
compares the re-plan from measured traffic with ``installed`` and ``orders`` (the orders to place, move or cancel) and
evaluates ``triggers`` on the measured figures.

References
----------
Runbook, document 14, "Questions": review capacity "monthly against measurement, and immediately when any input
changes"; build versus buy: "stay on the API until we cross that volume … revisit quarterly with the measured number".
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, field_validator, model_validator

from xlplan.schema.fields import _Section

TriggerMetric = Literal["tokens_per_month", "peak_rps", "prompt_p50", "prompt_p95", "prompt_p99", "output_p50",
                        "output_p95", "output_p99", "average_utilisation", "prefix_reuse"]
"""The measured figures a trigger may watch, each in its own unit (tokens/month, requests/s, tokens, fraction). [text]"""

MONTH = r"^\d{4}-(0[1-9]|1[0-2])$"
DAY = r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"


def _real_day(v: str) -> str:
    try:
        dt.date.fromisoformat(v)
    except ValueError:
        raise ValueError(f"expected a day of the calendar, YYYY-MM-DD ({v} does not exist)") from None
    return v


class Installed(_Section):
    """The GPUs in service today, which the re-plan's fleet is compared with."""

    gpus: int = Field(ge=0, le=10_000_000, description="GPUs in service, spares included. [GPUs]")
    since: str | None = Field(default=None, pattern=MONTH, description="Month they have been in service since, YYYY-MM. [month]")


class Order(_Section):
    """An order placed and not yet delivered."""

    gpus: int = Field(gt=0, le=10_000_000, description="GPUs ordered. [GPUs]")
    placed: str = Field(pattern=DAY, description="Day the order went out, YYYY-MM-DD. [date]")
    delivery: str = Field(pattern=MONTH, description="Month the GPUs go into service, YYYY-MM. [month]")
    source: str = Field(default="", description="Purchase order, quote or contract it rests on. [text]")

    @field_validator("placed", mode="after")
    @classmethod
    def _placed_is_a_day(cls, v: str) -> str:
        return _real_day(v)

    @model_validator(mode="after")
    def _delivered_after_placed(self) -> Order:
        if self.delivery < self.placed[:7]:
            raise ValueError(f"delivery {self.delivery} is before the month the order was placed ({self.placed}); "
                             "expected delivery in that month or later")
        return self


class Trigger(_Section):
    """A pre-agreed consequence: when a measured figure passes a value, what to do ("re-plan if p95 prompts pass 4,000")."""

    metric: TriggerMetric = Field(description="The measured figure watched: tokens_per_month, peak_rps, prompt_p50/p95/p99, "
                                              "output_p50/p95/p99, average_utilisation or prefix_reuse. [text]")
    above: float | None = Field(default=None, ge=0, description="Fires when the measured figure is above this, in the metric's "
                                                                "unit (tokens/month, requests/s, tokens, fraction). [unit of metric]")
    below: float | None = Field(default=None, ge=0, description="Fires when the measured figure is below this, in the metric's "
                                                                "unit. [unit of metric]")
    action: str = Field(min_length=1, description="What the plan says to do when it fires (\"move off the API\", \"re-plan\"). [text]")

    @model_validator(mode="after")
    def _one_bound(self) -> Trigger:
        if (self.above is None) == (self.below is None):
            raise ValueError("give exactly one of above or below (the value the measured figure passes)")
        return self

    @property
    def value(self) -> float:
        """The value the measured figure passes, whichever way it was given. [unit of metric]"""
        return self.above if self.above is not None else self.below
