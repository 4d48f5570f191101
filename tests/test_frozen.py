"""The slot copy is dataclasses.replace: the same object, field for field, for the classes the hot loops copy."""

from __future__ import annotations

import dataclasses

import pytest

from xlplan import frozen
from xlplan.io.planfile import reference_plan
from xlplan.plan.replica_at_tp import replica
from xlplan.plan.scenario import resolve


def test_a_scenario_and_a_replica_copied_by_slot_equal_replace():
    s = resolve(reference_plan())
    changes = {"prefill_mfu": 0.31, "decode_mfu": 0.27, "step_overhead_s": 0.004}
    assert frozen.replaced(s, **changes) == dataclasses.replace(s, **changes)
    r = replica(s, 2)
    assert frozen.replaced(r, bandwidth_efficiency=0.7) == dataclasses.replace(r, bandwidth_efficiency=0.7)
    assert frozen._slots(type(s)) is not None and frozen._slots(type(r)) is not None  # the fast path was taken


def test_an_unknown_field_is_refused_as_replace_refuses_it():
    with pytest.raises(TypeError):
        frozen.replaced(resolve(reference_plan()), no_such_field=1.0)


def test_a_class_with_post_init_goes_through_replace():
    @dataclasses.dataclass(frozen=True)
    class Checked:
        x: float

        def __post_init__(self):
            if self.x < 0:
                raise ValueError("x < 0")

    assert frozen._slots(Checked) is None
    with pytest.raises(ValueError):
        frozen.replaced(Checked(1.0), x=-1.0)  # __post_init__ still runs
