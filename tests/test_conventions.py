"""Meta-tests: conventions users rely on."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from xlplan.catalog import specs
from xlplan.schema import plan as plan_mod
from xlplan.schema import result

UNIT_MARK = "["


def _models(module):
    return [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == module.__name__]


@pytest.mark.parametrize("model", _models(plan_mod) + _models(specs) + _models(result), ids=lambda m: m.__name__)
def test_every_field_has_description_with_unit_or_is_a_section(model):
    for name, field in model.model_fields.items():
        assert field.description, f"{model.__name__}.{name} has no description"
        annotation = str(field.annotation)
        is_section = any(t.__name__ in annotation for t in _models(plan_mod) + _models(result) if t is not model)
        if not is_section:
            assert UNIT_MARK in field.description, f"{model.__name__}.{name}: no [unit] in {field.description!r}"


@pytest.mark.slow
def test_import_xlplan_loads_no_heavy_modules():
    code = ("import sys, xlplan, xlplan.decide.planner, xlplan.io.planfile; from xlplan.decide.planner import plan; "
            "from xlplan.io.planfile import reference_plan; plan(reference_plan()); "
            "print(sorted(m for m in ('openpyxl', 'pandas', 'numpy', 'typer') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_published_schema_is_current():
    committed = Path(__file__).parents[1] / "docs" / "plan.schema.json"
    assert json.loads(committed.read_text(encoding="utf-8")) == plan_mod.plan_json_schema(), "run: xlplan schema -o docs/plan.schema.json --force"


def test_published_output_schema_is_current_and_plan_json_reads_back_by_it(capsys):
    # the output's schema (docs/plan-output.schema.json) is what PlanOutput says, and what plan --json prints reads
    # back as a PlanOutput of schema version 2 whose fleet is the Answer's
    from xlplan.cli import main
    from xlplan.schema.result import OUTPUT_SCHEMA_VERSION, PlanOutput

    committed = json.loads((Path(__file__).parents[1] / "docs" / "plan-output.schema.json").read_text(encoding="utf-8"))
    assert committed == PlanOutput.model_json_schema(), "run: xlplan schema --result -o docs/plan-output.schema.json --force"
    assert main(["plan", "--json", "--no-verify"]) == 0
    out = PlanOutput.model_validate_json(capsys.readouterr().out)
    assert out.schema_version == OUTPUT_SCHEMA_VERSION == 2 and out.fleet.with_redundancy == out.answer.with_redundancy


def test_units_constants():
    from xlplan.units import GB, GIB

    # a GiB/GB mix-up is a 7.4% error
    assert GIB / GB == pytest.approx(1.0737, abs=1e-4)
