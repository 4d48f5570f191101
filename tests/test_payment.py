"""How the fleet is paid for, in one setting (costs.mode): what the Answer orders, and what its bill counts.

Truths: the runbook's bill is "GPUs × $/GPU-hour × 730 h" (document 14, step 7: 5 × $3 × 730 = $10,950); rented per
GPU, the GPUs billed are the fleet with redundancy; rented by the node or bought, whole purchasing units (the runbook's
"a node of 8"). The verified fleet of the reference plan (6 for the load, 7 with one replica lost) is the planner's,
read from its result; each test derives the bill from it by that arithmetic.
"""

from __future__ import annotations

import pytest
import yaml
from planhelp import replan

from xlplan import fleet
from xlplan.cli import main
from xlplan.decide import schedule
from xlplan.decide.planner import plan as run_plan
from xlplan.io.planfile import read_plan, reference_plan
from xlplan.plan.scenario import resolve
from xlplan.report.note import render_text
from xlplan.schema.plan import Plan


def test_renting_per_gpu_orders_and_bills_the_fleet_with_redundancy(ref):
    # the reference plan rents per GPU (the default): the Answer rents its fleet with redundancy, and the bill is
    # that count x $3 x 730 h
    a = ref.answer
    assert ref.inputs is not None and a.paid_as == "rent_per_gpu"
    assert a.billed_gpus == a.with_redundancy and a.order == f"rent {a.with_redundancy} GPUs"
    assert a.monthly_usd == pytest.approx(a.with_redundancy * 3.0 * 730)
    line = render_text(ref).splitlines()[3]
    assert f": rent {a.with_redundancy} GPUs;" in line and f"~${a.with_redundancy * 3 * 730:,}/month" in line
    assert " buy " not in line  # nothing is bought


@pytest.mark.slow
def test_renting_per_node_bills_whole_nodes():
    # the same fleet rented by the node (instances of 8): ceil(7 / 8) = 1 node, 8 GPUs x $3 x 730 h = $17,520
    r = run_plan(replan(reference_plan(), costs={"mode": "rent_per_node"}))
    a = r.answer
    nodes = -(-a.with_redundancy // 8)
    assert a.billed_gpus == nodes * 8 == a.purchased
    assert a.order == ("rent 1 node of 8" if nodes == 1 else f"rent {nodes} nodes of 8 ({nodes * 8} GPUs)")
    assert a.monthly_usd == pytest.approx(nodes * 8 * 3.0 * 730)
    assert f": {a.order};" in render_text(r).splitlines()[3]


def test_order_words_by_unit():
    # a unit of one GPU is counted in GPUs whether rented or bought; several nodes name the GPUs they hold
    assert fleet.order_words("rent_per_node", 3, 3, 1) == "rent 3 GPUs"
    assert fleet.order_words("buy", 1, 1, 1) == "buy 1 GPU"
    assert fleet.order_words("rent_per_node", 9, 16, 8) == "rent 2 nodes of 8 (16 GPUs)"
    assert fleet.order_words("rent_per_gpu", 1, 8, 8) == "rent 1 GPU"


@pytest.mark.parametrize("old, mode", [
    ({"hardware": {"billing": "purchased"}}, "rent_per_node"),
    ({"hardware": {"billing": "rented"}}, "rent_per_gpu"),
    ({"costs": {"mode": "rent"}}, "rent_per_gpu"),
    ({"hardware": {"billing": "purchased"}, "costs": {"mode": "rent"}}, "rent_per_node"),
    ({"hardware": {"billing": "rented"}, "costs": {"mode": "buy", "usd_per_kwh": 0.09, "hardware_ops_usd_per_month": 0}}, "buy"),
])
def test_older_plan_files_read_with_a_migration(tmp_path, capsys, old, mode):
    # hardware.billing and costs.mode: rent were the two settings before one said how the fleet is paid for
    data = reference_plan().model_dump(exclude_none=True, mode="json")
    data.pop("costs", None)
    for section, fields in old.items():
        data[section] = {**data.get(section, {}), **fields}
    f = tmp_path / "old.yaml"
    f.write_text(yaml.safe_dump(data))
    before = f.read_bytes()
    p = read_plan(f)
    assert p.costs.mode == mode and "billing" not in p.hardware.model_dump()
    err = capsys.readouterr().err
    billing = old.get("hardware", {}).get("billing")
    if billing and mode != "buy":
        assert f"hardware.billing: {billing} is read as costs.mode: {mode}" in err
    elif billing:  # buying billed every GPU bought whatever the billing said
        assert f"hardware.billing: {billing} is left out: costs.mode: buy bills every GPU bought" in err
    else:
        assert "costs.mode: rent is read as rent_per_gpu" in err
    assert f.read_bytes() == before  # the user's file is left as written


@pytest.mark.parametrize("billing, mode", [("purchased", "rent_per_gpu"), ("rented", "rent_per_node")])
def test_an_older_setting_that_contradicts_todays_is_refused_by_name(tmp_path, capsys, billing, mode):
    # the file says two things: which one is meant is the user's to say (it silently billed the older one)
    data = reference_plan().model_dump(exclude_none=True, mode="json")
    data["hardware"]["billing"], data["costs"] = billing, {"mode": mode}
    f = tmp_path / "both.yaml"
    f.write_text(yaml.safe_dump(data))
    assert main(["plan", str(f), "--no-verify"]) == 2
    err = capsys.readouterr().err
    assert f"hardware.billing: got '{billing}' beside costs.mode: {mode}" in err and "remove hardware.billing" in err


def test_an_unknown_payment_mode_is_named_with_the_choices(tmp_path, capsys):
    data = reference_plan().model_dump(exclude_none=True, mode="json")
    data["costs"] = {"mode": "lease"}
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(data))
    assert main(["plan", str(f), "--no-verify"]) == 2
    err = capsys.readouterr().err
    assert "costs.mode" in err and "rent_per_gpu" in err and "rent_per_node" in err and "buy" in err


def test_a_dip_month_bills_what_each_way_of_paying_holds():
    # peaks 40, 10, 40 req/s with nodes of 8: renting per GPU holds each month's fleet with redundancy, renting by the
    # node that month's whole nodes, buying every GPU bought so far (the first month's node stays bought in the dip)
    held = {}
    for mode in ("rent_per_gpu", "rent_per_node"):
        s = resolve(replan(reference_plan(), costs={"mode": mode}))
        out = schedule.schedule(s, [40.0, 10.0, 40.0], "2027-01", 30, verify="none")
        held[mode] = out.months
    gpu, node = held["rent_per_gpu"], held["rent_per_node"]
    assert [m.purchased for m in gpu] == [m.with_redundancy for m in gpu]
    assert [m.purchased for m in node] == [-(-m.with_redundancy // 8) * 8 for m in node]
    for months in (gpu, node):
        assert [m.monthly_usd for m in months] == pytest.approx([m.purchased * 3.0 * 730 for m in months])
        # the dip's GPUs come back in the third month: new GPUs are those beyond the month before's
        assert months[2].new_gpus == months[2].purchased - months[1].purchased
    assert schedule.held_gpus("buy", 2, 8, 16) == 16


def test_plan_schema_lists_the_three_ways_to_pay():
    schema = Plan.model_json_schema()
    costs = schema["$defs"]["Costs"]["properties"]["mode"]
    assert set(costs["enum"]) == {"rent_per_gpu", "rent_per_node", "buy"} and costs["default"] == "rent_per_gpu"
    assert "billing" not in schema["$defs"]["Hardware"]["properties"]


@pytest.mark.slow
def test_an_older_workbooks_billing_cell_is_read_as_the_payment_setting(tmp_path, ref_plan):
    # a workbook built before Paid as held 'Billing' (rented | purchased) and 'CostMode' (rent | buy): purchased and
    # rent read as renting by the node, as an older plan file's do
    import openpyxl
    from openpyxl.workbook.defined_name import DefinedName
    from workbookhelp import workbook_for_plan

    from xlplan.excel.reader import read_workbook

    path = tmp_path / "old.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    wb = openpyxl.load_workbook(path)
    (title, ref), = wb.defined_names["CostMode"].destinations
    wb[title][ref.replace("$", "")].value = "rent"
    wb[title]["Z1"].value = "purchased"
    wb.defined_names["Billing"] = DefinedName("Billing", attr_text=f"'{title}'!$Z$1")
    wb.save(path)
    assert read_workbook(path).costs.mode == "rent_per_node"


def test_a_growth_table_reads_back_from_its_own_dump():
    # peaks month by month give the schedule's length: 3 peaks are 3 months, so a plan written out with every field
    # (months included) reads back; it was refused ('months: got 12; peaks_rps gives 3')
    p = replan(reference_plan(), growth={"peaks_rps": [40.0, 10.0, 40.0], "lead_time_days": 30})
    assert p.growth.months == 3
    assert Plan.model_validate(p.model_dump()) == p


def test_a_payback_past_the_life_reads_never_pays_back():
    # a server at $1,000,000 and the catalog's network share of $15,060 (2024-08), 5-year life: renting the same 8 GPUs
    # at $3/h is 8 x 3 x 730 = $17,520 a month; running them 8 x 0.9375 kW typical x 1.54 x $0.09 x 730 = $758.84 of
    # power + 8 x 1.275 kW contracted x $184.06 = $1,877.41 of colocation + $1,000 of operations = $3,636.25; the capex
    # takes 1,015,060 / (17,520 - 3,636.25) = 73.11 months, past 60
    p = replan(reference_plan(), costs={"mode": "buy", "capex_usd_per_node": 1_000_000, "usd_per_kwh": 0.09,
                                        "hardware_ops_usd_per_month": 1000})
    r = run_plan(p)
    o = r.answer.ownership
    assert o.rent_monthly_usd == pytest.approx(17520.0)
    assert o.payback_months == pytest.approx(1_015_060 / (17520 - (8 * 0.9375 * 1.54 * 0.09 * 730 + 8 * 1.275 * 184.06 + 1000)))
    text = render_text(r)
    assert "renting the same 8 GPUs at $3/h: $17,520 / month; buying never pays back within its 5-year life" in text
    assert "buying pays back in" not in text
