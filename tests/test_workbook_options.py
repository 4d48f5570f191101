"""The workbook says what `xlplan compare` says (issue 24): the Summary's which-hardware rows are compare's
recommendation lines, and the Options sheet ranks only GPUs that may be deployed in a datacenter, at the plan's own
weights format, the rest below them marked and unranked.

The truths checked come from outside the writer: the catalog's `datacenter` flag (gpus.yaml, each with its source; a
GeForce card's driver licence forbids datacenter deployment, section 2.1.3), the reference plan's own bf16 weights,
and the lines the CLI prints.
"""

from __future__ import annotations

import json

import pytest
from workbookhelp import build

from xlplan import catalog
from xlplan.cli import main
from xlplan.io.planfile import reference_plan

FLAG = "=SummaryWhichHardwareStale"  # the format line and the rest sit under the GPU line's flag


@pytest.fixture(scope="module")
def book():
    return build(reference_plan())  # the closed form, as `compare --verify-top 0` ranks


def _gpu_of(name: str) -> str:
    """The catalog key of a GPU's display name, as the Options' GPU column writes it (less ' (the plan)')."""
    keys = {catalog.get_gpu(k).name: k for k in catalog.gpu_names()}
    return keys[name.removesuffix(" (the plan)")]


def _summary_lines(book) -> list[str]:
    """The Summary's which-hardware rows: the GPU line beside its flag, then each row under the same flag."""
    title, coord = book.names["SummaryWhichHardwareStale"].split("!")
    sheet = book.get(title.strip("'"))
    r = int(coord.replace("$", "")[1:])
    lines = [sheet.cells[f"A{r}"].value]
    while f"E{r + 1}" in sheet.cells and sheet.cells[f"E{r + 1}"].value == FLAG:
        r += 1
        lines.append(sheet.cells[f"A{r}"].value)
    return lines


def _ranked_rows(sheet) -> list[int]:
    """The Options rows with a rank (an integer in column A), top to bottom."""
    return sorted(int(c[1:]) for c, cell in sheet.cells.items() if c[0] == "A" and isinstance(cell.value, int))


def test_the_which_hardware_sentence_names_a_datacenter_gpu_at_the_plans_weights(book):
    # the reference plan serves bf16 weights (its model section); the first line's GPU must be one the catalog flags
    # for datacenter use (gpus.yaml `datacenter`), at bf16, never the GeForce RTX 5090 in 4-bit weights of before
    assert reference_plan().model.weights_dtype == "bf16"
    first, second, *_ = _summary_lines(book)
    head = "Cheapest datacenter GPU at the plan's bf16 weights: "
    assert first.startswith(head) and "GeForce" not in first
    names = [catalog.get_gpu(k).name for k in catalog.gpu_names()]
    name = max((n for n in names if first[len(head):].startswith(n + " in bf16")), key=len)
    assert catalog.get_gpu(_gpu_of(name)).datacenter is True
    # a change of weights format is a sentence of its own, on the plan's own GPU, with its quality caveat
    assert second.startswith("Changing the weights format to ") and "evaluate quality" in second
    assert "fp8 weights" not in first and " in fp8" not in first  # the GPU line keeps the plan's format (an fp8 cache
    # is a serving setting, not a format change)


def test_the_summary_and_options_lines_are_compares_lines(book, capsys):
    # the CLI's recommendation lines at the closed form (the workbook does not simulate the options), line for line
    assert main(["compare", "--verify-top", "0", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["recommendation_lines"]
    assert _summary_lines(book) == cli
    options = book.get("Options")
    first = min(_ranked_rows(options)) - 3 - len(cli)  # the lines, a blank row, the header and its units
    assert [options.cells[f"A{first + i}"].value for i in range(len(cli))] == cli


def test_no_ineligible_gpu_or_other_format_is_ranked_on_options(book):
    options = book.get("Options")
    ranked = _ranked_rows(options)
    assert [options.cells[f"A{r}"].value for r in ranked] == list(range(1, len(ranked) + 1))
    for r in ranked:  # the catalog's flag is the truth; the plan's format is bf16
        gpu = catalog.get_gpu(_gpu_of(options.cells[f"B{r}"].value))
        assert gpu.datacenter is True and options.cells[f"C{r}"].value == "bf16", r
        assert options.cells[f"O{r}"].value == "yes" and f"P{r}" not in options.cells
    # the rest are kept below, unranked and marked: the RTX 5090 (GeForce) and the other weight formats
    rest = [r for r in range(max(ranked) + 1, max(int(c[1:]) for c in options.cells) + 1) if f"B{r}" in options.cells]
    geforce = [r for r in rest if _gpu_of(options.cells[f"B{r}"].value) == "rtx-5090"]
    assert geforce and all(options.cells[f"O{r}"].value == "no: GeForce licence" for r in geforce)
    assert all(f"A{r}" not in options.cells for r in rest)
    assert all(options.cells[f"C{r}"].value == "bf16" or "a format change" in options.cells[f"P{r}"].value for r in rest)
    # priced before price missing, never 0 (the engine's cached value of each $/M tokens formula)
    cost = [options.cells[f"N{r}"].cached for r in ranked if f"N{r}" in options.cells]
    priced = [c for c in cost if c != "price missing"]
    assert priced == sorted(priced) and 0 not in priced and cost == priced + ["price missing"] * (len(cost) - len(priced))


@pytest.mark.slow  # the whole catalog solved twice
def test_the_workbooks_ranking_is_compares_for_a_format_compare_never_varies():
    # The workbook ranks from `compare --all`; its ranked rows must be the default ranking's for any weights format,
    # also one compare never tries on other GPUs (fp16: the reference model's weights as another checkpoint stores them)
    from xlplan.decide.hardware_choice import choose
    from xlplan.schema.plan import Plan

    data = reference_plan().model_dump(exclude_none=True)
    data["model"]["weights_dtype"] = "fp16"
    p = Plan.model_validate(data)
    every, default = choose(p, verify_top=0, include_all=True), choose(p, verify_top=0)
    key = [(o.gpu, o.weights_dtype, o.kv_dtype) for o in default.options if o.ranked]
    assert len(key) > 1 and [(o.gpu, o.weights_dtype, o.kv_dtype) for o in every.options if o.ranked] == key
    assert every.recommendation == default.recommendation
