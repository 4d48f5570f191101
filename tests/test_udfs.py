"""The Excel functions: thin calls into the engine, in Excel's shapes, through xlwings' Office.js dispatch too.

The expected numbers are the reference plan's (the runbook's worked example) as
`xlplan plan --json` prints them, so a UDF and the CLI can never disagree.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import xlwings
from pytest import approx

from udfs import functions as U
from xlplan.cli import main

UDF_SOURCE = Path(U.__file__)
EXPECTED_NAMES = {"LITTLES_LAW", "TIME_IN_SYSTEM", "KV_BYTES_PER_TOKEN", "KV_GIB_PER_CONVERSATION", "WEIGHTS_GIB",
                  "PARAMS_FROM_CONFIG", "KV_BUDGET_GIB", "MEMORY_GPUS", "PREFILL_TFLOPS", "DECODE_TFLOPS", "COMPUTE_GPUS",
                  "LATENCY_GPUS", "BINDING_CONSTRAINT", "FLEET", "BILLED_GPUS", "MONTHLY_COST", "TOKENS_PER_MONTH", "COST_PER_MTOK",
                  "API_MONTHLY_COST", "BREAKEVEN_TOKENS", "MAX_RATE", "GPU_SPEC", "MODEL_SPEC", "CAPACITY_NOTE",
                  "SENSITIVITIES", "MAX_DECODE_BATCH", "QUEUEING_REPLICAS"}


@pytest.fixture(scope="module")
def cli(capsysbinary=None):
    """`xlplan plan --json` for the reference plan."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["plan", "--json"]) == 0
    return json.loads(buf.getvalue())


def officejs(name: str, *args):
    """Call a function the way xlwings Server and Lite do: each argument a 2-D list, empty cells as None."""
    data = {"func_name": name, "args": list(args), "version": xlwings.__version__, "client": "Office.js", "runtime": "1.4",
            "culture_info_name": "en-US", "date_format": "M/d/yyyy"}
    from xlwings.server import custom_functions_call

    return asyncio.run(custom_functions_call(data, U))


def cell(x):
    return [[x]]


def test_littles_law_40_by_15_is_600():
    # the runbook: 40 req/s × 15 s = 600 in flight
    assert U.littles_law(40, 15) == 600
    assert officejs("littles_law", cell(40.0), cell(15.0)) == [[600.0]]


@pytest.mark.slow
def test_reference_plan_through_the_udfs_equals_the_cli(cli):
    method = cli["runbook_method"]  # the functions compute the runbook's method, as the workbook's formulas do
    inp, mem, comp, lat, fl, cost = cli["inputs"], cli["memory"], cli["compute"], cli["latency"], method["fleet"], method["cost"]
    p, o = inp["prompt_tokens"], inp["output_tokens"]
    model, gpu = "llama-3.1-8b", "h100-sxm"
    tis = U.time_in_system(o["p50"], o["p95"], inp["itl_s"], o["p99"])
    assert tis == approx(cli["time_in_system_s"], rel=1e-12)
    conc = U.littles_law(inp["peak_rps"], tis)
    assert conc == approx(cli["concurrency"], rel=1e-12)
    assert U.kv_bytes_per_token(model) == cli["model"]["kv_bytes_per_token"]
    kv = U.kv_gib_per_conversation(model, mem["conversation_tokens"])
    assert kv == approx(mem["kv_gib_per_conversation"], rel=1e-12)
    assert U.weights_gib(model) == approx(cli["model"]["weights_gib"], rel=1e-12)
    assert U.params_from_config(model) == cli["model"]["params_total"]
    assert U.params_from_config(model, "active") == cli["model"]["params_active"]
    budget = U.kv_budget_gib(gpu, model, 0.9, 3.0, "runbook")  # the reference plan pins the runbook's rule
    assert budget == approx(mem["kv_budget_gib_per_gpu"], rel=1e-12)
    assert U.kv_budget_gib(gpu, mem["weights_gib_per_gpu"], 0.9, 3.0, "runbook") == approx(budget, rel=1e-12)
    assert U.memory_gpus(conc, kv, budget) == mem["gpus"] == 4
    prefill = U.prefill_tflops(inp["peak_rps"], model, p["p50"], p["p95"], p["p99"], 0.0, "full")  # the reference's
    decode = U.decode_tflops(inp["peak_rps"], model, o["p50"], o["p95"], o["p99"])
    assert prefill == approx(comp["prefill_tflops"], rel=1e-12) and decode == approx(comp["decode_tflops"], rel=1e-12)
    assert U.compute_gpus(prefill + decode, gpu, comp["mfu"]) == comp["gpus"] == 4
    # the runbook's convention times decode alone, over the mean context a decoding sequence holds: 2,000 + 300/2
    batch = U.max_decode_batch(model, gpu, inp["itl_s"], inp["prompt_tokens"]["mean"] + inp["output_tokens"]["mean"] / 2)
    assert batch == approx(lat["max_decode_batch"], rel=1e-12)
    assert U.latency_gpus(conc, batch) == lat["gpus"]
    assert U.binding_constraint(mem["gpus"], comp["gpus"], lat["gpus"]) == method["binding"] == "both"
    assert U.fleet(mem["gpus"], comp["gpus"], lat["gpus"]) == [[fl["load"]], [fl["with_redundancy"]], [fl["purchased"]]] == [[4], [5], [8]]
    monthly = U.monthly_cost(fl["with_redundancy"], cost["usd_per_gpu_hour"])
    assert monthly == cost["monthly_usd"] == 10950
    tokens = U.tokens_per_month(inp["peak_rps"], p["p50"], p["p95"], o["p50"], o["p95"], inp["average_utilisation"], p["p99"], o["p99"])
    assert tokens == approx(cost["tokens_per_month"], rel=1e-12)
    assert U.cost_per_mtok(monthly, tokens) == approx(cost["usd_per_mtok"], rel=1e-12)
    api = U.api_monthly_cost(tokens, 0.25, 0.75, p["p50"], p["p95"], o["p50"], o["p95"], p["p99"], o["p99"])
    assert api == approx(cost["api_monthly_usd"], rel=1e-12)
    assert U.breakeven_tokens(monthly, cost["api_usd_per_mtok_blended"]) == approx(cost["breakeven_tokens_per_month"], rel=1e-12)
    sens = U.sensitivities()
    assert sens[0][0] == "What-if" and [r[0] for r in sens[1:]] == [s["change"] for s in cli["sensitivities"]]
    assert [r[2] for r in sens[1:]] == [s["fleet"] for s in cli["sensitivities"]]
    note = U.capacity_note()
    assert all(len(r) == 2 for r in note)
    # the runbook's method, labelled, then the closed form's purchase (the note's own rows, not re-derived)
    assert ["Runbook's method", ("4 GPUs for the load (TP 1) + 1 spare replica = 5 with redundancy → 8 purchased "
            "(1 node of 8)")] in note
    assert any(r[0] == "Order" and r[1].startswith("rent 7 GPUs, the fleet with redundancy") for r in note)
    # the queueing path: Erlang C on the engine's service rate and wait target gives the engine's replicas (6)
    q = cli["queueing"]
    assert U.queueing_replicas(inp["peak_rps"], q["service_rps_per_replica"], q["wait_target_s"], inp["percentile"],
                               q["tail_replicas"]) == q["replicas"] == 6
    # a prefill queue needing more (9 replicas, where a whole prompt fits one step) is the larger, so it is the answer
    assert U.queueing_replicas(inp["peak_rps"], q["service_rps_per_replica"], q["wait_target_s"], inp["percentile"],
                               q["tail_replicas"], 1.0, 9) == 9


RUNBOOK_POLICY = [["policy.engine", "runbook"], ["policy.mfu", 0.4], ["policy.attention_flops", "full"],
                  ["policy.latency_step", "decode_only"], ["policy.step_overhead_s", 0.0]]
"""The reference plan's pinned conventions (xlplan/data/reference.yaml's policy line), as plan-table rows."""


def test_max_rate_is_the_capacity_command(capsys):
    # MAX_RATE is the closed form's inverse, all four paths: `capacity --no-verify`; no plan table, the reference plan
    assert main(["capacity", "--gpus", "4", "--no-verify", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert U.max_rate(4) == approx(out["max_peak_rps"], rel=1e-12)
    # a plan table stating the reference's conventions: an 80 req/s forecast does not change what 4 GPUs can carry; a
    # 10 tokens/s promise doubles time in system (30 s) and memory binds; one TP-4 replica splits the 14.96 GiB of
    # weights (3.74 GiB each), leaving 0.9 × 79.65 − 3.74 − 3.0 = 64.94 GiB per GPU: 4 × 64.94 ÷ 0.2808 GiB ÷ 30 s =
    # 30.84 req/s (`xlplan capacity`)
    assert U.max_rate(4, [["forecast.peak_rps", 80.0], *RUNBOOK_POLICY]) == approx(out["max_peak_rps"], rel=1e-12)
    # (the memory path alone, the three linear paths' figure; the closed form's four paths can only be lower)
    weights = 8030261248 * 2 / 2**30 / 4
    from planhelp import replan

    from xlplan.decide.capacity import capacity
    from xlplan.io.planfile import reference_plan
    from xlplan.plan.scenario import resolve

    slow = resolve(replan(reference_plan(), promise={"itl_s": 0.1}))
    assert capacity(slow, 4).max_peak_rps == approx(4 * (0.9 * 81559 / 1024 - weights - 3.0) / 0.28076171875 / 30, rel=1e-9)
    assert U.max_rate(4, [["promise.itl_s", 0.1], *RUNBOOK_POLICY]) <= capacity(slow, 4).max_peak_rps


def test_a_plan_tables_missing_policy_keys_take_the_engines_defaults(tmp_path, capsys):
    # a new user's plan file states no policy (tests/planhelp.py: mistral-7b on L40S, a heavy tail): `xlplan plan`
    # gives it the engine's defaults (vLLM's memory rule, causal attention, the step with prefill), and so does a
    # plan table holding the same keys; MAX_RATE on it is `xlplan capacity --no-verify` on the file
    from planhelp import heavy_tail_plan, replan

    from xlplan.decide.planner import plan
    from xlplan.io.planfile import plan_to_yaml

    new = heavy_tail_plan()
    assert "policy" not in plan_to_yaml(new)
    path = tmp_path / "new.yaml"
    path.write_text(plan_to_yaml(new), encoding="utf-8")
    gpus = plan(new).closed_form.load  # the plan's own closed-form fleet (6: three TP-2 replicas)
    table = [["forecast.peak_rps", 15.0], ["forecast.prompt_tokens.p50", 800.0], ["forecast.prompt_tokens.p95", 1500.0],
             ["forecast.prompt_tokens.p99", 2000.0], ["forecast.output_tokens.p50", 150.0],
             ["forecast.output_tokens.p95", 1200.0], ["forecast.output_tokens.p99", 4000.0], ["promise.ttft_s", 1.0],
             ["promise.itl_s", 0.04], ["model.name", "mistral-7b"], ["hardware.gpu", "l40s"], ["hardware.gpus_per_node", 4.0]]
    assert main(["capacity", str(path), "--gpus", str(gpus), "--no-verify", "--json"]) == 0
    rate = U.max_rate(gpus, table)
    assert rate == approx(json.loads(capsys.readouterr().out)["max_peak_rps"], rel=1e-12)
    # the law, apart from the command: at that rate the closed form still needs the plan's fleet, past it more GPUs
    # (the capacity is bisected to 1e-4 of itself, so 0.1% above is past it); the plan's own 15 req/s fits it
    assert plan(replan(new, forecast={"peak_rps": rate})).closed_form.load == gpus
    assert plan(replan(new, forecast={"peak_rps": rate * 1.001})).closed_form.load > gpus
    assert rate >= new.forecast.peak_rps


def test_kv_budget_is_the_plans_at_each_engines_defaults():
    # KV_BUDGET_GIB(gpu, model, …, engine, blank activation, tp) is the plan's memory.kv_budget_gib_per_gpu, at every
    # TP the plan weighs, for plans that state no policy but the engine: the reference's keys (Llama-3.1-8B on an H100)
    # under each engine; the heavy-tail plan (Mistral-7B on an L40S, where vLLM's default budgets are the smaller
    # 256 sequences and 2,048 tokens); a 70B on H100s (non-torch memory past TP 1)
    from planhelp import heavy_tail_plan, replan

    from xlplan.decide.planner import plan
    from xlplan.io.planfile import reference_plan
    from xlplan.schema.plan import Plan

    new_8b = Plan.model_validate({k: v for k, v in reference_plan().model_dump(exclude_none=True).items() if k != "policy"})
    cases = [*((new_8b, e) for e in ("vllm", "sglang", "trtllm", "runbook")), (heavy_tail_plan(), "vllm"),
             (heavy_tail_plan(), "trtllm"), (replan(new_8b, model={"name": "llama-3.1-70b"}), "vllm")]
    for base, engine in cases:
        r = plan(base if engine == "vllm" else replan(base, policy={"engine": engine}))
        gpu, model = base.hardware.gpu, base.model.name
        chosen = U.kv_budget_gib(gpu, model, 0.9, 3.0, engine, None, r.fleet.tp)  # the degree memory is printed at
        assert chosen == approx(r.memory.kv_budget_gib_per_gpu, rel=1e-12), (model, engine)
        for option in r.tp_options:
            if option.kv_budget_gib_per_gpu > 0:
                assert U.kv_budget_gib(gpu, model, 0.9, 3.0, engine, None, option.tp) == approx(option.kv_budget_gib_per_gpu, rel=1e-12)
            else:  # a 70B's 131.4 GiB of bf16 weights on one H100
                with pytest.raises(U.UDFError, match="the weights do not fit"):
                    U.kv_budget_gib(gpu, model, 0.9, 3.0, engine, None, option.tp)
    # by hand, vLLM's rule for Llama-3.1-8B on one H100 at its defaults (1,024 sequences, 8,192 tokens on a GPU of 70 GiB
    # or more): weights 8,030,261,248 × 2 B ÷ 2³⁰ = 14.9575 GiB; activation peak (38.2 B × 1,024 × 128,256 vocab +
    # 1.34 × 8,192 × 4,096 × 2 B) ÷ 2³⁰ = 4.7562 GiB; 79.18 GiB visible × 0.90 − 14.9575 − 4.7562 − 0.13 non-torch = 51.4183
    assert U.kv_budget_gib("h100-sxm", "llama-3.1-8b") == approx(51.4183, abs=5e-5)
    # the same with the weights and the peak given as numbers; left out, the peak is not silently 0 (0.9 × 79.18 −
    # 14.96 − 0.13 = 56.17 GiB, 9% above what the engine leaves): the cell asks for it
    assert U.kv_budget_gib("h100-sxm", 14.9575, 0.9, 3.0, "vllm", 4.7562) == approx(51.4183, abs=5e-4)
    with pytest.raises(U.UDFError, match="KV_BUDGET_GIB: activation_gib: not given"):
        U.kv_budget_gib("h100-sxm", 14.9575, 0.9, 3.0, "vllm")


def test_prefill_tflops_takes_the_plans_attention_convention():
    # 40 req/s of 2,000-token prompts on Llama-3.1-8B (8,030,261,248 parameters, 32 layers, attention width 4,096):
    # 40 × (2 × N × 2,000 + 4 × 4,096 × 32 × K) ÷ 10¹², with K = 2,000² key pairs by the runbook's full convention
    # (1,368.73) and (2,000² + 2,000) ÷ 2 by the causal one (1,326.81), which a plan that states none takes
    assert U.prefill_tflops(40, "llama-3.1-8b", 2000, 2000, 2000, 0.0, "full") == approx(1368.72787968, rel=1e-12)
    assert U.prefill_tflops(40, "llama-3.1-8b", 2000, 2000, 2000) == approx(1326.8058112, rel=1e-12)
    # and it is the plan's: the heavy-tail plan (no policy) at its own prompt percentiles
    from planhelp import heavy_tail_plan

    from xlplan.decide.planner import plan

    new = heavy_tail_plan()
    f, p = new.forecast, new.forecast.prompt_tokens
    assert U.prefill_tflops(f.peak_rps, new.model.name, p.p50, p.p95, p.p99) == approx(plan(new).compute.prefill_tflops, rel=1e-12)


def test_catalog_lookups_and_did_you_mean():
    # nvidia-smi reports 81,559 MiB for an H100 SXM: 79.65 GiB
    assert U.gpu_spec("h100-sxm", "memory_gib") == approx(81559 / 1024)
    assert U.model_spec("meta-llama/Llama-3.1-8B", "num_hidden_layers") == 32
    with pytest.raises(U.UDFError, match=r"GPU_SPEC: unknown GPU 'h100-sx'; did you mean 'h100-sxm'"):
        U.gpu_spec("h100-sx", "memory_gib")
    with pytest.raises(U.UDFError, match=r"MODEL_SPEC: field: got 'layers'; expected one of"):
        U.model_spec("llama-3.1-8b", "layers")


def test_params_from_a_config_range():
    # the config.json fields of Llama-3.1-8B as a two-column range give its 8,030,261,248 parameters
    config = [["model_type", "llama"], ["num_hidden_layers", 32.0], ["hidden_size", 4096.0], ["num_attention_heads", 32.0],
              ["num_key_value_heads", 8.0], ["intermediate_size", 14336.0], ["vocab_size", 128256.0],
              ["tie_word_embeddings", False], ["head_dim", 128.0]]
    assert U.params_from_config(config) == 8030261248
    assert officejs("params_from_config", config, cell(None)) == [[8030261248.0]]


def test_whole_numbers_from_cells_as_floats():
    # Excel sends 2 as 2.0: a TP of 2.0 is 2 (4 GPUs' worth of cache need 2 replicas of 2)
    assert U.memory_gpus(600, 0.28076171875, 53.73, 2.0, 2.0) == 4
    assert U.fleet(4.0, 4.0, 3.0, 1.0, 1.0, 8.0) == [[4], [5], [8]]


def test_a_column_in_gives_a_column_out():
    assert U.littles_law([40, 80, 20], 15) == [[600], [1200], [300]]  # classic xlwings passes a column as a list
    assert officejs("littles_law", [[40.0], [80.0]], cell(15.0)) == [[600.0], [1200.0]]
    # a bad cell in the range is an error in that cell only
    assert U.littles_law([[40.0], ["n/a"]], 15) == [[600.0], ["#VALUE!"]]
    with pytest.raises(U.UDFError, match="ranges of different shapes"):
        U.littles_law([[1.0], [2.0]], [[1.0], [2.0], [3.0]])


@pytest.mark.parametrize("call, message", [
    (lambda: U.littles_law(-40, 15), "LITTLES_LAW: arrival_rate_rps: got -40; expected a number of at least 0 [requests/s]"),
    (lambda: U.littles_law("forty", 15), "LITTLES_LAW: arrival_rate_rps: got 'forty'; expected a number [requests/s]"),
    (lambda: U.littles_law(None, 15), "LITTLES_LAW: arrival_rate_rps: the cell is empty; expected a number [requests/s]"),
    (lambda: U.compute_gpus(1500, "h100-sx", 0.4), "COMPUTE_GPUS: unknown GPU 'h100-sx'; did you mean 'h100-sxm'?"),
    (lambda: U.compute_gpus(1500, "h100-sxm", 40), "COMPUTE_GPUS: mfu: got 40; expected a number of at most 1 [fraction] (0.40, not 40)"),
    (lambda: U.memory_gpus(600, 0.28, -2), "MEMORY_GPUS: kv_budget_gib: got -2; expected a positive budget [GiB]"),
    (lambda: U.memory_gpus(600, 0.28, 53.7, 1.5), "MEMORY_GPUS: tp: got 1.5; expected a whole number [GPUs]"),
    (lambda: U.kv_bytes_per_token("llama-3.1-8b", "fp6"), "KV_BYTES_PER_TOKEN: kv_dtype: got 'fp6'; expected one of fp32, bf16, fp16, fp8, int8 [dtype]"),
    (lambda: U.max_rate(4, [["forecast.average_utilisation", 40.0]]), "MAX_RATE: forecast.average_utilisation: got 40.0; expected a fraction between 0 and 1 (write 0.40, not 40)"),
    (lambda: U.capacity_note([["model.name", "llama-3.1-405b"], ["hardware.gpu", "l4"], ["hardware.gpus_per_node", 1.0]]), "CAPACITY_NOTE: the weights do not fit"),
])
def test_bad_arguments_give_one_clear_line(call, message):
    with pytest.raises(U.UDFError) as e:
        call()
    assert message in str(e.value)
    assert "Traceback" not in str(e.value) and "\n" not in str(e.value)


def test_office_js_path_registers_every_function_with_help():
    from xlwings.server import custom_functions_meta

    assert os.environ["XLWINGS_ON_SERVER"] == "true"  # set by tests/conftest.py before xlwings was imported
    meta = custom_functions_meta(U)
    names = {f["name"] for f in meta["functions"]}
    assert names == EXPECTED_NAMES
    for f in meta["functions"]:
        assert len(f["description"]) > 20, f["name"]
        assert "." not in f["name"]  # no namespace: =LITTLES_LAW() resolves in every runtime
        for p in f["parameters"]:
            assert re.search(r"\[[^\]]+\]$", p["description"]), (f["name"], p)
    tis = next(f for f in meta["functions"] if f["name"] == "TIME_IN_SYSTEM")
    assert [p.get("optional", False) for p in tis["parameters"]] == [False, False, False, True, True]


@pytest.mark.slow
def test_office_js_calls_equal_plain_calls():
    # empty optional cells arrive as None and take the engine's defaults
    assert officejs("time_in_system", cell(300.0), cell(300.0), cell(0.05), cell(None), cell(None)) == [[U.time_in_system(300, 300, 0.05)]]
    assert officejs("fleet", cell(4.0), cell(4.0), cell(3.0), cell(None), cell(None), cell(None)) == [[4.0], [5.0], [8.0]]
    assert officejs("kv_budget_gib", cell("h100-sxm"), cell("llama-3.1-8b"), cell(None), cell(None)) == [[U.kv_budget_gib("h100-sxm", "llama-3.1-8b")]]
    table = [["forecast.peak_rps", 60.0], ["promise.itl_s", 0.05]]
    assert officejs("sensitivities", table) == U.sensitivities(table)
    with pytest.raises(U.UDFError, match="LITTLES_LAW: arrival_rate_rps: got 'x'"):
        officejs("littles_law", cell("x"), cell(15.0))


def test_every_udf_documented_without_literal_hints_and_without_arithmetic():
    source = UDF_SOURCE.read_text(encoding="utf-8")
    assert "Literal" not in source  # the classic runtime breaks on Literal[...] hints
    tree = ast.parse(source)
    udf_defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and any(
        isinstance(d, ast.Call) and getattr(d.func, "id", "") == "udf" for d in n.decorator_list)}
    assert set(udf_defs) == set(U.public_udfs())
    for name, node in udf_defs.items():
        f = U.public_udfs()[name]
        assert inspect.getdoc(f) and re.search(r"\[[^\]]+\]$", inspect.getdoc(f)), name
        for p in f.__xlfunc__["args"]:
            assert re.search(r"\[[^\]]+\]$", p["doc"]), (name, p["name"])
        arithmetic = [type(n).__name__ for n in ast.walk(node) if isinstance(n, (ast.BinOp, ast.UnaryOp, ast.AugAssign))
                      and not (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not))]
        assert arithmetic == [], f"{name} does arithmetic of its own: {arithmetic}"


def test_importing_the_udfs_loads_no_openpyxl_or_pandas():
    # xlwings Lite runs the engine in Pyodide: nothing compiled beyond pydantic, and no openpyxl or pandas at import
    code = "import sys, xlplan, xlplan.excel.cellwise, xlplan.decide.planner; print(sorted(m for m in ('openpyxl', 'pandas', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_the_wheel_lite_installs_is_pure_python_with_the_functions_and_the_catalog(tmp_path):
    # xlwings Lite installs pure-Python wheels only: build it and check what Pyodide would get
    import zipfile

    root = Path(__file__).parent.parent
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(root)], check=True,
                   capture_output=True)
    wheel, = tmp_path.glob("xlplan-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"udfs/functions.py", "xlplan/excel/cellwise/__init__.py", "xlplan/catalog/gpus.yaml", "xlplan/catalog/models.yaml",
            "xlplan/data/reference.yaml"} <= names
    assert not any(n.endswith((".so", ".pyd")) for n in names)
    lite = (root / "udfs" / "lite" / "main.py").read_text(encoding="utf-8")
    assert "from udfs.functions import *" in lite


def test_classic_windows_gets_the_message_not_a_traceback(monkeypatch):
    # Classic xlwings writes a COM exception's description into the cell (its VBA wrapper: `littles_law = Err.Description`);
    # pywin32 turns any other Python exception into "Unexpected Python Error: Traceback ..." (win32com ErrorUtils.cpp).
    # So on Windows, outside xlwings Server/Lite, a bad argument is raised as pywin32's COMException with our one line.
    import types

    class COMException(Exception):
        def __init__(self, description=None, **kw):
            super().__init__(description)
            self.description = description

    fake = types.ModuleType("win32com.server.exception")
    fake.COMException = COMException
    monkeypatch.setitem(sys.modules, "win32com", types.ModuleType("win32com"))
    monkeypatch.setitem(sys.modules, "win32com.server", types.ModuleType("win32com.server"))
    monkeypatch.setitem(sys.modules, "win32com.server.exception", fake)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("XLWINGS_ON_SERVER", "false")
    with pytest.raises(COMException) as e:
        U.littles_law(-40, 15)
    assert e.value.description == "LITTLES_LAW: arrival_rate_rps: got -40; expected a number of at least 0 [requests/s]"
    assert U.littles_law(40, 15) == 600


@pytest.mark.slow
def test_compute_gpus_takes_the_split_mfus_the_engines_defaults_use(matrix_results):
    # The engine's default conventions fit prefill and decode MFUs apart (e.g. 0.45 and 0.40 on NVIDIA): the compute
    # path is prefill ÷ (peak × prefill MFU) + decode ÷ (peak × decode MFU), rounded up to whole replicas. With one MFU
    # the function would say 2 where the engine says 3 (a new user's 70B fp8 plan). Every matrix plan on the defaults:
    for name, (_plan, r) in matrix_results.items():
        c, m = r.compute, r.model
        tp = r.fleet.tp
        split = U.compute_gpus(c.prefill_tflops, m.peak_tflops, c.prefill_mfu or c.mfu, tp, "bf16",
                               c.decode_tflops, c.decode_mfu or c.mfu)
        assert split == c.gpus, name
        # and by hand: the exact sum, then whole replicas of TP
        exact = c.prefill_tflops / (m.peak_tflops * (c.prefill_mfu or c.mfu)) + c.decode_tflops / (m.peak_tflops * (c.decode_mfu or c.mfu))
        assert exact == pytest.approx(c.gpus_exact, rel=1e-12), name
        assert split == max(1, math.ceil(exact / tp)) * tp, name
    # with the decode left out, the one-MFU form is unchanged: the runbook, 1,561.5 ÷ (989 × 0.40) = 3.95 -> 4
    assert U.compute_gpus(1561.5, "h100-sxm", 0.4) == 4


def test_binding_constraint_names_the_minimum_replica_given_tp():
    # every path one replica of TP 2 (mixtral-8x7b's 87 GiB on H100s: two GPUs however light the load): no path binds,
    # as the engine says; without tp the function keeps its three-path answer ('all')
    assert U.binding_constraint(2, 2, 2, 2) == "minimum replica"
    assert U.binding_constraint(2, 2, 2) == "all"
    assert U.binding_constraint(4, 2, 2, 2) == "memory"


def test_the_notes_array_holds_no_string_past_255_and_loses_no_word():
    # the classic (COM) add-in shows #VALUE! for a string over 255 characters inside an array; the reference plan's
    # note has a sentence of 299, which CAPACITY_NOTE carries on in the rows below, and the parts joined by single
    # spaces give every sentence back
    from udfs.cells import CELL_TEXT_MAX, text_rows
    from udfs.functions import capacity_note
    from xlplan.decide.planner import plan
    from xlplan.io.planfile import reference_plan
    from xlplan.report.note import note_sections

    texts = [t for _, figures, sentences in note_sections(plan(reference_plan())) for t in [*sentences, *(v for _, v in figures)]]
    assert max(map(len, texts)) > CELL_TEXT_MAX  # the case exists on the reference plan
    cells = [c for row in capacity_note() for c in row]
    assert max(len(c) for c in cells if isinstance(c, str)) <= CELL_TEXT_MAX
    for t in texts:
        assert " ".join(text_rows(t)) == t and all(len(p) <= CELL_TEXT_MAX for p in text_rows(t))


def test_whole_numbers_come_back_as_doubles():
    # Excel's numbers are doubles and 32-bit VBA's Long stops at 2^31 - 1 = 2,147,483,647: Llama-3.1-70B's
    # 70.55e9 parameters must reach the cell as a double, and so must a small count (32 layers of Llama-3.1-8B)
    from udfs.functions import model_spec

    total = model_spec("llama-3.1-70b", "total_params")
    assert isinstance(total, float) and total > 2**31
    layers = model_spec("llama-3.1-8b", "num_hidden_layers")
    assert isinstance(layers, float) and layers == 32.0
