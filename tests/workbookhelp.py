"""Helpers for the workbook tests: LibreOffice recalculation and the named outputs compared with the engine."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import io
import json
import math
import os
import pickle
import re
import shutil
import zipfile
from pathlib import Path

import openpyxl
import pytest

from xlplan.excel import layout
from xlplan.excel.book import figures
from xlplan.excel.cells import date_serial
from xlplan.excel.export import workbook_for
from xlplan.excel.writer import workbook_bytes
from xlplan.io import libreoffice
from xlplan.io.libreoffice import soffice
from xlplan.io.outputs import write_outputs
from xlplan.io.planfile import plan_to_yaml
from xlplan.schema.plan import Plan

# Every defined name the README documents as an output, and where `xlplan plan --json` has the same figure.
NAMED_OUTPUTS: dict[str, tuple] = {
    "PeakRate": ("inputs", "peak_rps"),
    "PromptP50": ("inputs", "prompt_tokens", "p50"),
    "PromptP95": ("inputs", "prompt_tokens", "p95"),
    "PromptP99": ("inputs", "prompt_tokens", "p99"),
    "OutputP50": ("inputs", "output_tokens", "p50"),
    "OutputP95": ("inputs", "output_tokens", "p95"),
    "OutputP99": ("inputs", "output_tokens", "p99"),
    "PromptMean": ("inputs", "prompt_tokens", "mean"),
    "OutputMean": ("inputs", "output_tokens", "mean"),
    "PromptSecondMoment": ("inputs", "prompt_tokens", "second_moment"),
    "TTFTTarget": ("inputs", "ttft_s"),
    "ITLTarget": ("inputs", "itl_s"),
    "AvgUtilisation": ("inputs", "average_utilisation"),
    "GPUUSDPerHour": ("runbook_method", "cost", "usd_per_gpu_hour"),
    "MFU": ("compute", "mfu"),
    "ParamsTotal": ("model", "params_total"),
    "ParamsActive": ("model", "params_active"),
    "WeightsGiB": ("model", "weights_gib"),
    "KVBytesPerToken": ("model", "kv_bytes_per_token"),
    "PeakTFLOPS": ("model", "peak_tflops"),
    "ComputeDtype": ("model", "compute_dtype"),
    "Concurrency": ("concurrency",),
    "TimeInSystem": ("time_in_system_s",),
    "ConversationTokens": ("memory", "conversation_tokens"),
    "KVPerConversationGiB": ("memory", "kv_gib_per_conversation"),
    "KVTotalGiB": ("memory", "kv_gib_total"),
    "WeightsGiBPerGPU": ("memory", "weights_gib_per_gpu"),
    "KVBudgetGiB": ("memory", "kv_budget_gib_per_gpu"),
    "ConversationsPerReplica": ("memory", "conversations_per_replica"),
    "MemoryGPUsExact": ("memory", "gpus_exact"),
    "MemoryGPUs": ("memory", "gpus"),
    "PrefillTFLOPS": ("compute", "prefill_tflops"),
    "DecodeTFLOPS": ("compute", "decode_tflops"),
    "DemandTFLOPS": ("compute", "demand_tflops"),
    "ComputeGPUsExact": ("compute", "gpus_exact"),
    "ComputeGPUs": ("compute", "gpus"),
    "MaxDecodeBatch": ("latency", "max_decode_batch"),
    "DecodeStepAtLoad": ("latency", "decode_step_s"),
    "TTFTP95": ("latency", "ttft_p95_s"),
    "TTFTMet": ("latency", "ttft_ok"),
    "LatencyGPUsExact": ("latency", "gpus_exact"),
    "LatencyGPUs": ("latency", "gpus"),
    "Binding": ("runbook_method", "binding",),
    "TP": ("runbook_method", "fleet", "tp"),
    "FleetLoad": ("runbook_method", "fleet", "load"),
    "FleetWithRedundancy": ("runbook_method", "fleet", "with_redundancy"),
    "FleetPurchased": ("runbook_method", "fleet", "purchased"),
    "BilledGPUs": ("runbook_method", "cost", "billed_gpus"),
    "MonthlyCostUSD": ("runbook_method", "cost", "monthly_usd"),
    "TokensPerMonth": ("runbook_method", "cost", "tokens_per_month"),
    "CostPerMTokUSD": ("runbook_method", "cost", "usd_per_mtok"),
    "APIBlendedUSDPerMTok": ("runbook_method", "cost", "api_usd_per_mtok_blended"),
    "APIMonthlyCostUSD": ("runbook_method", "cost", "api_monthly_usd"),
    "BreakevenTokensPerMonth": ("runbook_method", "cost", "breakeven_tokens_per_month"),
}

SENSITIVITY_COLUMNS = {"I": "load", "J": "fleet", "K": "purchased", "L": "binding", "M": "monthly_usd", "N": "usd_per_mtok"}


_FIGURES: dict[tuple[str, str], object] = {}
"""Per test process: a plan's figures by (its JSON, verify). The writers only read them, so a plan's workbooks (native,
UDF, with or without caches) are laid out from one computation of its figures, as the CLI lays out each of its own."""


def plan_figures(plan: Plan, verify: bool | str = False):
    """:func:`xlplan.excel.book.figures` of the plan, computed once per test process."""
    key = (plan.model_dump_json(), repr(verify))
    if key not in _FIGURES:
        _FIGURES[key] = figures(plan, verify=verify)
    return _FIGURES[key]


def build(plan: Plan, formulas: str = "native", namespace: str = "", verify: bool | str = False, traffic=None):
    """The workbook of a plan as the CLI builds it: the engine's figures (:func:`xlplan.excel.book.figures`), then the writer."""
    return layout.build(plan_figures(plan, verify), formulas, traffic, namespace)


def workbook_for_plan(plan: Plan, formulas: str = "native", verify: bool | str = False) -> bytes:
    """The .xlsx bytes of a plan's workbook, as ``xlplan workbook`` writes them."""
    return workbook_for(plan_figures(plan, verify), formulas)


def _shared(kind: str, data: bytes) -> Path | None:
    """Where this session keeps what an engine made of a file with these bytes, or None outside a session's shared
    folder (tests/conftest.py makes one for every run, shared by its workers)."""
    root = os.environ.get("XLPLAN_TEST_SHARED")
    if not root:
        return None
    return Path(root) / f"{kind}-{hashlib.sha256(data).hexdigest()}"


def recalculate(files: list[Path], outdir: Path) -> list[Path]:
    """:func:`xlplan.io.libreoffice.recalculate`, once per session for each distinct file: a workbook with the same
    bytes as one LibreOffice already recalculated in this run (another test's, on any worker) takes that output, a
    copy written to ``outdir``. LibreOffice's output depends on nothing but the file, so no check is lost."""
    outdir.mkdir(parents=True, exist_ok=True)
    keys = {f: _shared("libreoffice", f.read_bytes()) for f in files}
    todo = [f for f in files if keys[f] is None or not keys[f].exists()]
    made = dict(zip(todo, libreoffice.recalculate(todo, outdir))) if todo else {}
    write_outputs([(keys[f], out.read_bytes()) for f, out in made.items() if keys[f] is not None])  # whole or absent
    for f in files:
        if f not in made:
            made[f] = outdir / f"{f.stem}.xlsx"
            shutil.copyfile(keys[f], made[f])
    return [made[f] for f in files]


def rebuilt(path: Path):
    """The workbook the engine builds from a file's inputs (:func:`xlplan.excel.reader.read_workbook`, then its
    figures and layout), once per session for each distinct file: a pure function of the file's bytes, so another
    worker's rebuild of the same bytes is taken (pickled in the session's shared folder)."""
    from xlplan.excel.reader import read_workbook

    data = path.read_bytes()
    key = _shared("rebuilt", data)
    if key is not None and key.exists():
        return pickle.loads(key.read_bytes())
    book = layout.build(plan_figures(read_workbook(path)))
    if key is not None:
        write_outputs([(key, pickle.dumps(book))])
    return book


def evaluate_many(files: list[Path], udfs: bool = False) -> list[dict]:
    """:func:`excelgrammar.evaluate_many`, once per session for each distinct file (and with or without the add-in):
    the values the Excel-grammar engine gave a file with the same bytes earlier in this run, on any worker."""
    from excelgrammar import evaluate

    out = []
    for f in files:
        key = _shared(f"excel-grammar-{int(udfs)}", f.read_bytes())
        if key is not None and key.exists():
            out.append(pickle.loads(key.read_bytes()))
            continue
        values = evaluate(f, udfs)
        if key is not None:
            write_outputs([(key, pickle.dumps(values))])
        out.append(values)
    return out


def edited_copies(book, folder: Path, edits: dict) -> list[Path]:
    """A copy of the book's workbook per edit ({stem: {defined name: value}}), each input set by openpyxl as a user's
    script would and saved (without computed values): folder/<stem>.xlsx, in the edits' order."""
    out, data = [], workbook_bytes(book)  # laid out once: half a second a copy
    for stem, changes in edits.items():
        path = folder / f"{stem}.xlsx"
        path.write_bytes(data)
        wb = openpyxl.load_workbook(path)
        for name, value in changes.items():
            (title, ref), = wb.defined_names[name].destinations
            wb[title][ref.replace("$", "")].value = value
        wb.save(path)
        _same_bytes_for_same_edits(path)
        out.append(path)
    return out


_CORE_TIMES = re.compile(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*(</dcterms:)")


def _same_bytes_for_same_edits(path: Path) -> None:
    """openpyxl stamps a saved file with the time (each zip entry's, and the core properties' modified): rewritten
    here to one fixed time, so the same edits give the same bytes on every worker and the engines' outputs of it are
    shared (:func:`recalculate`, :func:`evaluate_many`). No formula or value reads the stamps."""
    with zipfile.ZipFile(path) as z:
        entries = [(info, z.read(info)) for info in z.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in entries:
            if info.filename == "docProps/core.xml":
                data = _CORE_TIMES.sub(rb"\g<1>2026-01-01T00:00:00Z\g<2>", data)
            z.writestr(zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0)), data,
                       compress_type=zipfile.ZIP_DEFLATED)


def require_libreoffice() -> str:
    """The soffice path; skips where LibreOffice is missing, but fails in CI (CI=true), which installs it."""
    path = soffice()
    if path is None:
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail("LibreOffice is missing but CI=true: .ci/run must install libreoffice-calc-nogui")
        pytest.skip("LibreOffice not installed (CI installs it; here: apt-get install -y libreoffice-calc-nogui)")
    return path


def engine_json(plan: Plan, folder: Path, stem: str) -> dict:
    """What `xlplan plan PLAN --json` prints for the plan, run through the CLI's own entry point."""
    from xlplan.cli import main

    path = folder / f"{stem}.yaml"
    path.write_text(plan_to_yaml(plan), encoding="utf-8")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["plan", str(path), "--json", "--no-verify"])  # the workbooks compared are built without the simulation
    assert rc == 0, f"xlplan plan {path} --json exited {rc}"
    return json.loads(buf.getvalue())


def _dig(d, path):
    for p in path:
        d = d[p]
    return d


def agrees(found, expected, rel=1e-9) -> bool:
    """LibreOffice's value against the engine's, 1e-9 relative (or 1e-12 absolute: a fitted σ of 1.3e-16 against 2.7e-16
    where p50 = p95 = p99 is zero in both, to the float's rounding); text, booleans and the words for no value exactly.
    A date openpyxl read from a date-formatted number is that number, its serial (the engine caches the serial)."""
    if isinstance(found, dt.date):
        found = date_serial(found)
    if expected is None:
        return found in (None, "", "n/a", "none")
    if isinstance(expected, bool) or isinstance(found, bool):  # a boolean stays one: not 1, not "TRUE" or "1" as text
        return type(found) is type(expected) and found == expected
    if isinstance(expected, (int, float)) and isinstance(found, (int, float)):
        if math.isinf(expected):
            return False
        return abs(found - expected) <= max(rel * abs(expected), 1e-12)
    if expected == "" and found is None:
        return True
    return found == expected


def recalc_and_compare(plans: dict[str, Plan], folder: Path, engines: tuple[str, ...] = ("libreoffice", "excel"),
                       verify: tuple[str, ...] = ()) -> list[str]:
    """Build each plan's workbook without caches, evaluate them with each spreadsheet engine — LibreOffice (one headless
    run for all) and the Excel-grammar engine (`formulas`) — and list every disagreement: named outputs against
    `xlplan plan --json`, sensitivity rows against its what-ifs, and every formula cell against the cached value the
    exporter writes. Plans named in ``verify`` are built as `plan --verify` writes them (tab 4's simulated block)."""
    folder.mkdir(parents=True, exist_ok=True)
    books, files, jsons = {}, [], {}
    for stem, plan in plans.items():
        books[stem] = build(plan, verify=stem in verify)
        f = folder / f"{stem}.xlsx"
        f.write_bytes(workbook_bytes(books[stem], caches=False))
        files.append(f)
        jsons[stem] = engine_json(plan, folder, stem)
    readers = {}
    if "libreoffice" in engines:
        outs = recalculate(files, folder / "recalculated")
        readers["LibreOffice"] = [_openpyxl_reader(out) for out in outs]
    if "excel" in engines:
        from excelgrammar import value

        readers["Excel-grammar"] = [lambda t, c, v=v: value(v, t, c) for v in evaluate_many(files)]
    problems = []
    for engine, per_book in readers.items():
        for (stem, book), read in zip(books.items(), per_book):
            problems += [f"{engine}: {p}" for p in compare_book(stem, book, read, jsons[stem])]
    return problems


def _openpyxl_reader(path):
    wb = openpyxl.load_workbook(path, data_only=True)
    return lambda title, coord: wb[title][coord].value


def name_ref(book, name: str) -> tuple[str, str]:
    """(sheet title, 'B7') of a workbook-scope defined name."""
    ref = book.names[name]
    title, _, coord = ref.rpartition("!")
    return title.strip("'").replace("''", "'"), coord.replace("$", "")


def compare_book(stem: str, book, read, js: dict) -> list[str]:
    """Disagreements between one evaluated workbook (``read(title, coord)``) and the engine's figures."""
    problems = []
    for name, path in NAMED_OUTPUTS.items():
        got = read(*name_ref(book, name))
        exp = _dig(js, path)
        if isinstance(exp, float) and math.isinf(exp):
            exp = None
        if not agrees(got, exp):
            problems.append(f"{stem}: {name} {got!r} vs engine {exp!r}")
    first = _first_whatif_row(book)
    for k, s in enumerate(js["sensitivities"]):
        for col, key in SENSITIVITY_COLUMNS.items():
            got = read("6 Sensitivities", f"{col}{first + k}")
            exp = s[key] if s["feasible"] else "infeasible"
            if not agrees(got, exp):
                problems.append(f"{stem}: what-if {s['change']!r} {key} {got!r} vs engine {exp!r}")
    for title, coord, cell in book.formula_cells():
        got = read(title, coord)
        if not agrees(got, cell.cached):
            problems.append(f"{stem}: {title}!{coord} {cell.value[:60]} {got!r} vs cache {cell.cached!r}")
    return problems


def _first_whatif_row(book) -> int:
    sheet = book.get("6 Sensitivities")
    rows = sorted(int(c[1:]) for c, cell in sheet.cells.items() if c.startswith("I") and c[1:].isdigit() and cell.formula)
    return rows[0]
