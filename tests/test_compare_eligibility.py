"""Which hardware a buyer can act on (issue 24): `compare` ranks datacenter parts at the plan's own weights format,
by the plan's way of paying, says a missing price and ranks it last, and puts a change of weights format on a line of
its own.

The truths checked come from outside the engine: the GeForce driver licence's "No Datacenter Deployment" clause
(section 2.1.3, nvidia.com/drivers/geforce-license), the reference plan's own bf16 weights, and which GPUs the
catalog's ownership.yaml gives a node price and power for (a bought fleet has an owned cost only there).
"""

from __future__ import annotations

import json

import yaml

from xlplan import catalog
from xlplan.cli import main
from xlplan.decide.hardware_choice import choose
from xlplan.io.planfile import reference_plan
from xlplan.schema.plan import Plan

# a few GPUs keep each run short: a datacenter H100 (the plan's), an AMD part, the GeForce RTX 5090 that ranked
# first before (4-bit weights at a marketplace price), and the GH200, which has neither a rental price nor a node price
FEW = ["h100-sxm", "mi300x", "rtx-5090", "gh200-96gb"]


def _buy_plan() -> Plan:
    data = reference_plan().model_dump(exclude_none=True)
    data["costs"] = {"mode": "buy", "usd_per_kwh": 0.1, "hardware_ops_usd_per_month": 1000}
    return Plan.model_validate(data)


def test_default_first_line_is_a_datacenter_part_at_the_plans_weights_format(capsys):
    # The reference plan serves bf16 weights (its model section); with no --gpus every catalog GPU is tried, and the
    # first ranked row and the recommendation's first line must be a part the licence lets a buyer run in a
    # datacenter, at bf16 weights: never a GeForce card, never a quantised checkpoint.
    assert reference_plan().model.weights_dtype == "bf16"
    assert main(["compare", "--verify-top", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    first = out["options"][0]
    assert first["eligible"] is True and first["weights_dtype"] == "bf16" and first["format_change"] == ""
    assert catalog.get_gpu(first["gpu"]).datacenter is True
    assert not any(o["eligible"] is False for o in out["options"])  # GeForce cards are out of the default ranking
    assert all(o["weights_dtype"] == "bf16" for o in out["options"])
    line = out["recommendation_lines"][0]
    assert line.startswith("Cheapest datacenter GPU at the plan's bf16 weights: " + first["gpu_name"])
    assert "GeForce" not in line


def test_all_shows_the_rtx_5090_marked_not_for_datacenter_use(capsys):
    # --all adds the rest after the ranked ones, each marked: the RTX 5090 is a GeForce card (licence clause 2.1.3)
    assert main(["compare", "--gpus", ",".join(FEW), "--verify-top", "0", "--all", "--json"]) == 0
    options = json.loads(capsys.readouterr().out)["options"]
    geforce = [o for o in options if o["gpu"] == "rtx-5090"]
    assert geforce and all(o["eligible"] is False and not o["ranked"] for o in geforce)
    assert all("No Datacenter Deployment" in o["eligibility_source"] for o in geforce)
    assert all(any("not for datacenter use" in c for c in o["caveats"]) for o in geforce)
    # ranked ones first: no unranked row comes before a ranked one (the plan's own row counts as ranked)
    flags = [o["ranked"] or o["is_plan"] for o in options]
    assert flags == sorted(flags, reverse=True)
    # and in the table each is marked in words
    assert main(["compare", "--gpus", ",".join(FEW), "--verify-top", "0", "--all"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if "RTX 5090" in r and r.startswith("│")]
    assert rows and all("not for datacenter use" in r for r in rows)


def test_a_buy_plan_ranks_priced_options_first_and_says_missing_prices():
    # Bought, an option has an owned cost only where ownership.yaml gives its node price and power (or the plan does,
    # for its own GPU): the H100 SXM has both; the MI300X and the GH200 have neither, so their cost is missing: shown,
    # never $0, never first, ranked after every priced option.
    assert {"capex_usd_per_node", "kw_per_gpu"} <= set(catalog.ownership_for("h100-sxm"))
    assert not {"capex_usd_per_node", "kw_per_gpu"} & set(catalog.ownership_for("mi300x"))
    c = choose(_buy_plan(), FEW, verify_top=0)
    ranked = [o for o in c.options if o.feasible]
    priced = [o.usd_per_mtok is not None for o in ranked]
    assert priced == sorted(priced, reverse=True) and priced[0]
    missing = [o for o in ranked if o.usd_per_mtok is None]
    assert {o.gpu for o in missing} >= {"mi300x", "gh200-96gb"}
    assert all(o.monthly_usd is None and "capex_usd_per_node" in o.reason for o in missing)
    assert all(o.payment_mode == "buy" for o in c.options)
    assert any(line.startswith("Price missing for a fleet bought") for line in c.recommendation)
    # the owned cost's quote is dated as ownership.yaml dates it
    h100 = next(o for o in c.options if o.gpu == "h100-sxm" and o.usd_per_mtok is not None and not o.is_plan)
    assert h100.price_date == str(catalog.ownership_for("h100-sxm")["capex_usd_per_node"]["date"])


def test_the_format_change_is_its_own_line_apart_from_the_gpu_line():
    # The GPU line keeps the plan's bf16 weights; changing the weights to fp8 is said on a line of its own, on the
    # plan's own GPU (the H100 SXM has FP8 tensor cores), with the quality caveat of quantised weights.
    c = choose(reference_plan(), ["h100-sxm", "mi300x"], verify_top=0)
    gpu_line, format_line = c.recommendation[0], c.recommendation[1]
    assert gpu_line.startswith("Cheapest datacenter GPU at the plan's bf16 weights")
    assert "fp8 weights" not in gpu_line and " in fp8" not in gpu_line
    assert format_line.startswith("Changing the weights format to fp8 on the plan's NVIDIA H100 SXM 80GB")
    assert "evaluate quality" in format_line
    assert all(o.weights_dtype == "bf16" for o in c.options)  # the format option is not a row of the ranking
    assert c.format_options and all(o.gpu == "h100-sxm" and o.format_change == f"{o.weights_dtype} weights (a format change)"
                                    for o in c.format_options)
    assert all(any(x.startswith("quality:") for x in o.caveats) for o in c.format_options if o.feasible)


def test_the_first_lines_caveats_name_licence_and_dated_price():
    # The recommendation's caveats: the licence the part is eligible under and its price with the date its catalog
    # note gives (the MI300X's TensorWave price note is dated 2026-05-18 in gpus.yaml)
    c = choose(reference_plan(), ["h100-sxm", "mi300x"], verify_top=0)
    caveats = next(line for line in c.recommendation if line.startswith("Caveats of the first line"))
    first = next(o for o in c.options if o.ranked and o.usd_per_mtok is not None)
    assert "licence: may be deployed in a datacenter" in caveats
    date = catalog.price_date(catalog.get_gpu(first.gpu).price_note) if not first.is_plan else ""
    assert (f"dated {date}" in caveats) if date else True
    assert first.price_date == date


def test_json_keeps_every_field_it_had(tmp_path, capsys):
    # the JSON is a public interface: fields are only added
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(reference_plan().model_dump(exclude_none=True, mode="json")))
    assert main(["compare", str(f), "--gpus", "h100-sxm", "--verify-top", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out["recommendation"], str) and isinstance(out["options"], list)
    for key in ("gpu", "gpu_name", "weights_dtype", "kv_dtype", "is_plan", "feasible", "reason", "usd_per_mtok", "price_note",
                "eligible", "eligibility_source", "format_change", "ranked", "payment_mode", "price_date", "caveats"):
        assert key in out["options"][0], key
    assert "format_options" in out and "recommendation_lines" in out
