import os

# The Excel functions are registered the way xlwings Server and xlwings Lite register them (Office.js), so the
# tests can read their metadata and call them through xlwings' own dispatch. xlwings reads these when imported.
os.environ["XLWINGS_ON_SERVER"] = "true"
os.environ["XLWINGS_LICENSE_KEY"] = "noncommercial"  # xlwings PRO's free licence for noncommercial use

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
