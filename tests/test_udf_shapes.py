"""Every Excel function × every shape Excel hands it, through xlwings' Office.js dispatch (Server and Lite).

Office.js sends every argument as a 2-D matrix (xlwings declares each parameter ``dimensionality: matrix``):
a number ``[[40]]``; a blank cell ``[[null]]`` or ``[[""]]``; an error cell as an error object
``{"type": "Error", "basicValue": "#DIV/0!", ...}`` (Excel's ErrorCellValue); a row ``[[a, b, c]]``; a column
``[[a], [b], [c]]``; a block ``[[a, b], [c, d]]``; a number stored as text ``[["40"]]``; a date as its serial or as
``{"type": "FormattedNumber", "basicValue": 45658, ...}``. For each function and each argument, each shape must give
either a correct answer — the shape of the input, each cell the function's answer for that cell's value — or one
line that names the function and the argument.
"""

from __future__ import annotations

import asyncio
import math

import pytest
import xlwings

from udfs import functions as U

DIV0 = {"type": "Error", "basicType": "Error", "basicValue": "#DIV/0!", "errorType": "Div0"}
DATE = {"type": "FormattedNumber", "basicValue": 45658.0, "numberFormat": "m/d/yyyy"}  # 2025-01-01

# A good call of every function (the runbook's reference figures), argument by argument.
GOOD: dict[str, list] = {
    "littles_law": [40, 15],
    "time_in_system": [300, 300, 0.05, 300, 0.0],
    "kv_bytes_per_token": ["llama-3.1-8b", "bf16"],
    "kv_gib_per_conversation": ["llama-3.1-8b", 2300, "bf16"],
    "weights_gib": ["llama-3.1-8b", "bf16"],
    "params_from_config": ["llama-3.1-8b", "total"],
    "kv_budget_gib": ["h100-sxm", "llama-3.1-8b", 0.9, 3.0, "vllm", 4.76, 1, 79.18, "bf16"],
    "memory_gpus": [600, 0.281, 53.73, 1, 1],
    "prefill_tflops": [40, "llama-3.1-8b", 2000, 2000, 2000, 0.0],
    "decode_tflops": [40, "llama-3.1-8b", 300, 300, 300],
    "compute_gpus": [1561.5, "h100-sxm", 0.4, 1, "bf16"],
    "max_decode_batch": ["llama-3.1-8b", "h100-sxm", 0.05, 2150, 1, "bf16", "bf16", 0.4, 0.6, "bf16", 0.0, 0.0],
    "latency_gpus": [600, 150, 1],
    "queueing_replicas": [40, 7.38, 0.91, 95, 0, 1.0],
    "binding_constraint": [4, 4, 3],
    "fleet": [4, 4, 3, 1, 1, 8],
    "billed_gpus": [7, 8, "rent_per_node"],
    "monthly_cost": [5, 3, 730],
    "tokens_per_month": [40, 2000, 2000, 300, 300, 0.4, 2000, 300, 730],
    "cost_per_mtok": [10950, 9.67e10],
    "api_monthly_cost": [9.67e10, 0.25, 0.75, 2000, 2000, 300, 300, 2000, 300],
    "breakeven_tokens": [10950, 0.315, 0],
    "max_rate": [4, None],
    "gpu_spec": ["h100-sxm", "memory_gib"],
    "model_spec": ["llama-3.1-8b", "hidden_size"],
    "capacity_note": [None],
    "sensitivities": [None],
}
# A second valid value for each argument, for ranges (text arguments get another catalog entry or option).
OTHER = {"llama-3.1-8b": "qwen3-8b", "h100-sxm": "h200", "bf16": "fp8", "total": "active", "memory_gib": "hbm_tbps",
         "hidden_size": "num_hidden_layers"}
TABLES = {("params_from_config", 0), ("max_rate", 1), ("capacity_note", 0), ("sensitivities", 0)}


def officejs(name: str, *args):
    data = {"func_name": name, "args": list(args), "version": xlwings.__version__, "client": "Office.js", "runtime": "1.4",
            "culture_info_name": "en-US", "date_format": "M/d/yyyy"}
    from xlwings.pro.udfs_officejs import custom_functions_call

    return asyncio.run(custom_functions_call(data, U))


def call(name: str, args: list):
    """(result, None) or (None, message)."""
    try:
        return officejs(name, *[None if a is None else a if isinstance(a, list) else [[a]] for a in args]), None
    except U.UDFError as e:
        return None, str(e)


def params(name: str) -> list[str]:
    import inspect

    return list(inspect.signature(getattr(U, name).__wrapped__).parameters)


def test_every_function_is_in_the_matrix():
    assert set(GOOD) == set(U.public_udfs())


def _cases():
    for name, args in GOOD.items():
        for i, v in enumerate(args):
            if (name, i) in TABLES:
                continue
            for shape in ("error", "blank", "blank_text", "row", "column", "block", "text_number", "date"):
                if shape == "text_number" and not isinstance(v, int | float):
                    continue  # a number stored as text, for numeric arguments only
                yield pytest.param(name, i, shape, id=f"{name}-{params(name)[i]}-{shape}")


def _other(v):
    if isinstance(v, str):
        return OTHER.get(v, v)
    return v * 2 if v else 1


def _scalar(name, args, i, value):
    a = list(args)
    a[i] = value
    result, message = call(name, a)
    if message is not None:
        return "#VALUE!"
    if name == "fleet":
        return [r[0] for r in result]  # its one answer spills down as three rows
    return result[0][0]


def _marked(case):
    """A case of MAX_RATE's GPU count runs capacity's search (a second or more for a date or a range): slow."""
    name, i, _ = case.values
    slow = name == "max_rate" and params(name)[i] == "gpus"
    return pytest.param(*case.values, id=case.id, marks=pytest.mark.slow) if slow else case


@pytest.mark.parametrize("name, i, shape", [_marked(c) for c in _cases()])
def test_function_by_argument_by_shape(name, i, shape):
    args = GOOD[name]
    param = params(name)[i]
    good, message = call(name, args)
    assert message is None, message
    v = args[i]
    a = list(args)
    if shape == "error":
        a[i] = [[DIV0]]
        result, message = call(name, a)
        assert message is not None and message.startswith(name.upper() + ": ") and param in message and "#DIV/0!" in message
        assert "\n" not in message
        return
    if shape in ("blank", "blank_text"):
        a[i] = [[None]] if shape == "blank" else [[""]]
        result, message = call(name, a)
        default = U.__dict__[name].__wrapped__.__defaults__
        n_required = len(params(name)) - len(default or ())
        if i >= n_required:  # optional: the same answer as leaving it out (its default)
            b = list(args)
            b[i] = None
            assert (result, message) == call(name, b)
        else:
            assert message is not None and param in message and "empty" in message and "\n" not in message
        return
    if shape == "text_number":
        a[i] = [[repr(float(v))]]
        assert call(name, a) == (good, None)
        return
    if shape == "date":
        a[i] = [[DATE]]
        result, message = call(name, a)
        if message is None:  # a date is its serial number in Excel: the answer for 45658
            assert result == call(name, [*args[:i], 45658.0, *args[i + 1:]])[0]
        else:
            assert message.startswith(name.upper() + ": ") and param in message and "\n" not in message
        return
    # ranges: the answer has the input's shape; each cell is the function's answer for that cell alone
    w = _other(v)
    grid = {"row": [[v, w, v]], "column": [[v], [w], [v]], "block": [[v, w], [w, v]]}[shape]
    a[i] = grid
    result, message = call(name, a)
    assert message is None, message
    expected = [[_scalar(name, args, i, x) for x in row] for row in grid]
    if name == "fleet":  # a row per input, its three numbers across
        expected = [cell if isinstance(cell, list) else ["#VALUE!"] * 3 for row in expected for cell in row]
    assert _same(result, expected)


def _same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and a.get("type") == "Error":
        return b == "#VALUE!"
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=1e-12)
    return a == b


# ---------------------------------------------------------------------------------------------- tables

PLAN_ROWS = [["forecast.peak_rps", 80.0], ["promise.itl_s", 0.1]]
# what 4 GPUs sustain at 10 tokens/s by the closed form (the inverse question; see test_udfs.test_max_rate_is_the_capacity_command)
MAX_RATE_AT_ITL_0_1 = U.max_rate(4, PLAN_ROWS)


@pytest.mark.parametrize("table", [
    PLAN_ROWS,  # two columns
    [["Key", "Value"], *PLAN_ROWS],  # with a header row
    [[r[0] for r in PLAN_ROWS], [r[1] for r in PLAN_ROWS]],  # two rows: keys above, values below
    [["Key", *[r[0] for r in PLAN_ROWS]], ["Value", *[r[1] for r in PLAN_ROWS]]],  # transposed, with a header column
    [["promise.itl_s", 0.1]],  # one row
    [["promise.itl_s"], [0.1]],  # one key above its value
])
def test_plan_tables_in_either_orientation_with_or_without_a_header(table):
    assert officejs("max_rate", [[4]], table) == [[MAX_RATE_AT_ITL_0_1]]


def test_config_tables_in_either_orientation():
    cfg = [["model_type", "llama"], ["hidden_size", 4096], ["num_hidden_layers", 32], ["num_attention_heads", 32],
           ["num_key_value_heads", 8], ["intermediate_size", 14336], ["vocab_size", 128256]]
    # Llama-3.1-8B counted from its config: 8,030,261,248 parameters (the runbook's 8.03e9)
    for table in (cfg, [["Field", "Value"], *cfg], [list(r) for r in zip(*cfg)]):
        assert officejs("params_from_config", table) == [[8030261248.0]]


def test_an_error_inside_a_table_names_its_row():
    with pytest.raises(U.UDFError, match=r"MAX_RATE: plan_table: row 2, column 2 holds #N/A"):
        officejs("max_rate", [[4]], [["forecast.peak_rps", 80.0], ["promise.itl_s", {"type": "Error", "basicValue": "#N/A"}]])


# ---------------------------------------------------------------------------------------------- honest values


def test_p95_below_p50_is_an_error_everywhere_both_are_taken():
    for name, args in (("time_in_system", [300, 200, 0.05]), ("prefill_tflops", [40, "llama-3.1-8b", 2000, 1000]),
                       ("decode_tflops", [40, "llama-3.1-8b", 300, 200]),
                       ("tokens_per_month", [40, 2000, 1000, 300, 300]),
                       ("api_monthly_cost", [9.67e10, 0.25, 0.75, 2000, 2000, 300, 200])):
        result, message = call(name, args)
        assert message is not None and "_p95" in message and "below" in message, name


def test_overflow_never_returns_inf_or_nan():
    # 10⁶ req/s (the plausible range's top) × 10³⁰³ s overflows a float: the answer is refused, never inf
    result, message = call("littles_law", [1e6, 1e303])
    assert message is not None and "overflow" in message
    result, message = call("littles_law", [float("inf"), 1])
    assert message is not None and "finite" in message


def test_a_budget_at_or_below_zero_says_the_weights_do_not_fit():
    # a 70B in bf16 on one H100: 0.9 x 79.18 - 131.4 - its activation peak - 0.13 < 0 (vLLM's rule); 0.9 x 79.65 -
    # 131.4 - 3 < 0 (the runbook's)
    for args in (["h100-sxm", "llama-3.1-70b"], ["h100-sxm", 131.4, 0.9, 3.0, "runbook"]):
        result, message = call("kv_budget_gib", args)
        assert message is not None and "the weights do not fit" in message


def test_a_dtype_typo_lists_the_allowed_values():
    result, message = call("weights_gib", ["llama-3.1-8b", "fp6"])
    assert message is not None and "weights_dtype" in message and "bf16" in message and "mxfp4" in message


@pytest.mark.parametrize(("function", "args", "plan_field", "value", "slip"), [
    # promise.itl_s is 0.001 to 1 s per token: 1.5 is past it (xlplan.schema.plausibility's range, its words); 0.5 is in it
    ("max_decode_batch", ["llama-3.1-8b", "h100-sxm", 0.5, 2150, 1, "bf16", "bf16", 0.4, 0.6, "bf16", 0, 0.003], None, None, None),
    ("time_in_system", [300, 300, 1.5], "promise.itl_s", 1.5, "1.5 ms is 0.0015"),
    ("compute_gpus", [1500, "h100-sxm", 0.95], "policy.mfu", 0.95, None),
    ("monthly_cost", [5, 2190], "hardware.usd_per_gpu_hour", 2190, "$2,190 a month is $3.00 an hour"),
])
def test_an_implausible_argument_answers_as_the_plan_file_does(function, args, plan_field, value, slip):
    # an argument that is a plan field by another name is held to that field's plausible range, and the cell's error
    # is the plan file's line with the argument's name: the same field, value, range, reason and likely slip
    from xlplan.schema import plausibility

    result, message = call(function, args)
    if plan_field is None:  # 0.5 s per token is plausible (a slow stream): an answer, no error
        assert message is None and result
        return
    expected = plausibility.finding(plan_field, value)
    assert message.endswith(expected[len(plan_field):]) and message.split(": ")[0] == function.upper()
    if slip:
        assert slip in message


def _readme_functions() -> dict[str, tuple[list[str], bool]]:
    """The README's Excel-functions table: name → (arguments in order, optional ones in brackets; whether it spills)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## The Excel functions (xlwings)"):]
    section = section[:section.index("\n## ")]
    rows = re.findall(r"^\| `([A-Z_]+)\(([^)]*)\)` \| .* \| ([^|]+) \|$", section, re.M)
    table = {name: ([a.strip() for a in args.split(",")] if args else [], spills.strip().startswith("yes"))
             for name, args, spills in rows}
    assert len(table) == len(rows), "a function with two rows"
    return table


def test_the_readme_lists_every_function_with_its_full_signature():
    # the README's table against the registry, as xlwings publishes it to Excel (Office.js metadata from the
    # decorators): every function, every argument in order by the name Excel shows, and which may be left out
    from xlwings.server import custom_functions_meta

    registry = {f["name"]: [f"[{p['name']}]" if p.get("optional", False) else p["name"] for p in f["parameters"]]
                for f in custom_functions_meta(U)["functions"]}
    assert {name: args for name, (args, _) in _readme_functions().items()} == registry


def test_the_readme_says_which_functions_spill():
    # a function spills where a call on single cells answers more than one cell (FLEET's three rows, the note's and the
    # what-ifs' tables): what needs Excel 365/2021's dynamic arrays, or a legacy array formula over a selected range
    for name, (_, spills) in _readme_functions().items():
        result, message = call(name.lower(), GOOD[name.lower()])
        assert message is None, message
        assert spills == (len(result) * max(len(r) for r in result) > 1), name
