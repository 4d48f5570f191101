import pytest

from xlplan.io.planfile import reference_plan
from xlplan.planner import plan


@pytest.fixture(scope="session")
def ref_plan():
    """The built-in reference plan: the runbook's worked example."""
    return reference_plan()


@pytest.fixture(scope="session")
def ref(ref_plan):
    """The reference plan's result."""
    return plan(ref_plan)
