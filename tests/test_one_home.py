"""Each rule has one home: one function, called everywhere, and a scan that finds a second definition.

A rule written twice is a place where two surfaces can disagree. For each rule below the home is named, a
scan of the engine's sources finds no other place that writes its arithmetic, and a hand-worked case checks the home.
The step time's deliberate twins (the fast closure, the compiled kernel, the workbook's formula) are held equal to it on
plans with every engine's defaults.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from xlplan import fleet
from xlplan.decide import schedule_calendar
from xlplan.io.planfile import plan_from_mapping, reference_plan
from xlplan.plan import replica_at_tp
from xlplan.plan.scenario import resolve
from xlplan.serving import folded_step, step_inputs
from xlplan.serving.step import step_time_s
from xlplan.simulate import kernel_state
from xlplan.units import GIB

ROOT = Path(__file__).resolve().parents[1]


def _sites(pattern: str, home: str) -> list[str]:
    """file:line of every match of ``pattern`` in the engine's sources outside ``home`` (comments and docstrings too:
    a second copy written as prose is how a rule starts to drift)."""
    rx = re.compile(pattern)
    out = []
    for path in sorted((ROOT / "xlplan").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == home:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if rx.search(line) and not line.lstrip().startswith(("#", "``", ":")) and '"""' not in line:
                out.append(f"{rel}:{n}")
    return out


# --- rounding up to whole purchasing units: fleet.whole_units ----------------------------------------------------

def test_whole_units_rounds_up_to_the_purchasing_unit():
    # the runbook: 5 GPUs with N+1 on nodes of 8 buy one node; 9 buy two; by the GPU, 7 are 7; float noise is no unit
    assert fleet.whole_units(5, 8) == 8 and fleet.whole_units(9, 8) == 16 and fleet.whole_units(7, 1) == 7
    assert fleet.whole_units(8 * (1 + 1e-12), 8) == 8


def test_no_second_purchasing_unit_rounding():
    # a ceil over the node size, or a tolerance constant of its own, anywhere but fleet.py
    assert _sites(r"ceil\([^)]*gpus_per_node", "xlplan/fleet.py") == []
    assert _sites(r"^\s*_?[A-Z_]*ROUND[A-Z_]* = ", "xlplan/fleet.py") == []


# --- the plan's price, else the catalog's: Hardware.quoted_price ---------------------------------------------------

def test_quoted_price_is_the_plans_else_the_catalogs():
    p = reference_plan()  # $3/GPU-hour stated by the plan
    assert p.hardware.quoted_price() == (3.0, "plan")
    data = p.model_dump(exclude_none=True)
    data["hardware"].pop("usd_per_gpu_hour")
    q = plan_from_mapping(data, "test")
    assert q.hardware.quoted_price() == (q.hardware.resolve().usd_per_gpu_hour, "catalog")


def test_no_second_price_fallback():
    # "hardware.usd_per_gpu_hour or <the catalog's>", or a catalog price read beside the plan's, outside the home
    assert _sites(r"hardware\.usd_per_gpu_hour or ", "xlplan/schema/hardware.py") == []
    assert _sites(r"resolve\(\)\.usd_per_gpu_hour", "xlplan/schema/hardware.py") == []


# --- the plan's peak in a month: schedule_calendar.month_peak ------------------------------------------------------

def test_month_peak_compounds_and_holds_a_tables_last_entry():
    monthly = SimpleNamespace(peaks_rps=None, monthly=0.10)
    table = SimpleNamespace(peaks_rps=[40.0, 50.0, 60.0], monthly=None)
    # 40 × 1.1² = 48.4; the table's month 5 is its last entry, month −1 its first
    assert schedule_calendar.month_peak(40.0, monthly, 2) == pytest.approx(48.4)
    assert schedule_calendar.month_peak(40.0, table, 5) == 60.0 and schedule_calendar.month_peak(40.0, table, -1) == 40.0
    assert schedule_calendar.month_peak(40.0, None, 7) == 40.0
    peaks, _ = schedule_calendar.plan_growth(40.0, SimpleNamespace(monthly=0.10, peaks_rps=None, months=3, source=""))
    assert peaks == [schedule_calendar.month_peak(40.0, monthly, m) for m in range(3)]


def test_no_second_months_peak():
    # a peak compounded by a monthly growth, outside the calendar
    assert _sites(r"peak\w* \* \(1(\.0)? \+", "xlplan/decide/schedule_calendar.py") == []


# --- the KV tokens a replica holds: replica_at_tp.kv_capacity_tokens -----------------------------------------------

def test_kv_capacity_tokens_by_hand():
    s = resolve(reference_plan())
    # the budget per GPU in bytes over the bytes one token of every layer takes on a shard (one shard at TP 1)
    expected = replica_at_tp.kv_budget_gib(s, 1) * GIB / (s.kv_bytes_per_token_layer * s.layers)
    assert replica_at_tp.kv_capacity_tokens(s, 1) == pytest.approx(expected, rel=1e-12)
    assert replica_at_tp.kv_capacity_tokens(s, 1, kv_gib=-3.0) == 0.0  # a budget below zero holds nothing


def test_no_second_kv_token_count():
    assert _sites(r"GIB[^\n]*/ *\(?[^\n]*kv_bytes_per_token_layer", "xlplan/plan/replica_at_tp.py") == []
    assert _sites(r"kv_bytes_per_token_layer \* s\.layers / ", "xlplan/plan/replica_at_tp.py") == []


# --- the step time and its twins -----------------------------------------------------------------------------------

ENGINES = ("runbook", "vllm", "sglang", "trtllm")


def _plan(engine: str, moe: bool):
    data = reference_plan().model_dump(exclude_none=True)
    data["policy"] = {"engine": engine} | ({"expert_parallel": 2} if moe else {})
    if moe:
        data["model"] = {"name": "qwen3-30b-a3b", "weights_dtype": "bf16", "kv_dtype": "bf16"}
    return resolve(plan_from_mapping(data, "test"))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("moe", [False, True], ids=["dense", "moe"])
def test_the_step_times_twins_equal_it_on_each_engines_defaults(engine, moe):
    # the fast closure equals step_time_s to rounding; the compiled step equals the closure to the bit
    s = _plan(engine, moe)
    rng = np.random.default_rng(11)
    for tp in (1, 2):
        r = replica_at_tp.replica(s, tp)
        f = folded_step.step_time_fn(r)
        c = np.array([float(folded_step.step_constants(r)[x]) for x in folded_step.STEP_CONSTANTS])
        for _ in range(20):
            b, pre = float(rng.integers(0, 300)), float(rng.integers(0, 8192))
            load = step_inputs.mixed_step(b, 1800.0, pre, pre * pre / 2, pre * pre / 2, 0.0, r.window)
            args = (load.decode_tokens, load.decode_keys, load.decode_keys_window, load.prefill_tokens, load.prefill_keys,
                    load.prefill_keys_window, load.kv_tokens, load.kv_tokens_window)
            assert f(*args) == pytest.approx(step_time_s(r, load), rel=1e-12)
            assert kernel_state.step_s(c, *args) == f(*args)


TWINS = {"xlplan/serving/folded_step.py:step_time_fn", "xlplan/simulate/kernel_state.py:step_s",
         "xlplan/excel/formulas.py:step_time"}


@pytest.mark.slow
def test_no_second_step_time():
    # the step's time is defined in serving/step.py; any other function named for a step's time is one of its three
    # named twins, or a caller that times a particular step by calling step_time_s or its fast twin (predict.step_s,
    # the queueing path's percentile step through the closed form's step, the Excel functions' decode step)
    found, twins = [], set()
    for path in sorted((ROOT / "xlplan").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.FunctionDef) and re.fullmatch(r"_?\w*step_(?:time|s)\w*", node.name)):
                continue
            where = f"{rel}:{node.name}"
            if where in TWINS or where == "xlplan/serving/step.py:step_time_s":
                twins.add(where)
                continue
            calls = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                     for n in ast.walk(node) if isinstance(n, ast.Call)}
            # closed_form_step_fn hands back the fast twin as its step_time (prefill apart for SGLang): a caller too
            if not calls & {"step_time_s", "step_time_fn", "closed_form_step_fn"}:
                found.append(where)
    assert twins == TWINS | {"xlplan/serving/step.py:step_time_s"}
    assert found == []


def _cached(book, name: str):
    """The cached value of a workbook's defined name (the Excel-grammar engine hands names upper-cased)."""
    ref = {k.upper(): v for k, v in book.names.items()}[name.upper()]
    title, coord = ref.rsplit("!", 1)
    cell = book.get(title.strip("'").replace("''", "'")).cells[coord.replace("$", "")]
    return cell.cached if cell.formula else cell.value


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("moe", [False, True], ids=["dense", "moe"])
def test_the_workbooks_step_formula_equals_the_step_time_on_each_engines_defaults(engine, moe):
    # the Excel twin: formulas.step_time evaluated by the Excel-grammar engine over the workbook's own named inputs
    # equals step_time_s at the same mixed step (37 decodes over 1,800-token contexts beside a 300-token chunk)
    import formulas

    from xlplan.excel import formulas as F
    from xlplan.excel.book import figures
    from xlplan.excel.layout import build

    data = reference_plan().model_dump(exclude_none=True)
    data["policy"] = {"engine": engine} | ({"expert_parallel": 2} if moe else {})
    if moe:
        data["model"] = {"name": "qwen3-30b-a3b", "weights_dtype": "bf16", "kv_dtype": "bf16"}
    fig = figures(plan_from_mapping(data, "test"))
    book = build(fig)
    r = fig.replica
    load = step_inputs.mixed_step(37.0, 1800.0, 300.0, 45000.0, 45000.0, 900.0, r.window)
    args = (load.decode_tokens, load.decode_keys, load.decode_keys_window, load.prefill_tokens, load.prefill_keys,
            load.prefill_keys_window, load.kv_tokens, load.kv_tokens_window)
    func = formulas.Parser().ast("=" + F.step_time("TP", "EPUsed", "KVShards", *(repr(float(a)) for a in args)))[1].compile()
    got = float(func(*(_cached(book, n) for n in func.inputs)))
    assert got == pytest.approx(step_time_s(r, load), rel=1e-12)
