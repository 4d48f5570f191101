"""The validation report: every check at the shipped defaults and held out (by deployment, by model, by source),
calibration within a deployment, the README's tables.

The default efficiencies are fitted on the corpus (``xlplan/data/efficiencies.yaml``), so a check of a corpus row at
those defaults is **in-sample**: the row helped fit what predicts it. The honest figure, the headline everywhere (this
table, ``xlplan validate``, ``benchmarks/bench_accuracy.py``), is **leave one deployment out**: each row predicted
with the defaults refitted without its model × GPU × engine (:mod:`xlplan.evidence.held_out`); leaving its model out
and its source out sit beside it, and the in-sample figure, labelled. ``python scripts/validation_table.py`` rewrites
the README's tables with :func:`markdown` and :func:`by_group_markdown`.
"""

from __future__ import annotations

import functools
import json
import math
import statistics

from xlplan.evidence.held_out import point_errors
from xlplan.evidence.validation import HEADLINE_KINDS, KINDS, Check, MeasuredRow, Report, headline, validation
from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS, measured_rows

README_BEGIN = "<!-- validation table: begin (python scripts/validation_table.py) -->"
README_END = "<!-- validation table: end -->"
HELD_OUT_BEGIN = "<!-- held-out table: begin (python scripts/validation_table.py) -->"
HELD_OUT_END = "<!-- held-out table: end -->"


def build(rows: list[dict], calibration: bool = True) -> Report:
    """The report for measurement rows: in-sample at the shipped defaults, left out, by source, calibration pairs.

    Parameters
    ----------
    rows : list of dict
        Measurement rows; a file other than the corpus is judged with the corpus added to every fold's training rows.
    calibration : bool
        Also score calibration within each deployment (:func:`xlplan.evidence.validation.within_deployment`).

    Returns
    -------
    Report
        The checks both ways, the left-out medians by source and the calibration pairs; computed once per process
        for the same rows (a memo keyed by their text). [—]
    """
    return _build(json.dumps(rows, sort_keys=True), calibration)


@functools.lru_cache(maxsize=4)
def _build(rows_json: str, calibration: bool) -> Report:
    return validation(measured_rows(json.loads(rows_json)), measured_rows(read_measurements(CORPUS)), calibration)


def build_rows(rows: list[MeasuredRow], calibration: bool = False, by_source: bool = True) -> Report:
    """The report for rows already read (the silicon sample, or it with the corpus), not memoised.

    Parameters
    ----------
    rows : list of MeasuredRow
        Rows as read (:func:`xlplan.io.measurements.measured_rows`, :func:`xlplan.io.silicon_sample.measured_rows`);
        those not in the corpus join every fold's training rows, as in :func:`build`.
    calibration : bool
        Also score calibration within each deployment (every ordered pair of a deployment's runs: thousands of fits
        on the sample, so off by default).
    by_source : bool
        Also leave each source out of the fit (a full refit per source).

    Returns
    -------
    Report
        The checks both ways, the left-out medians by source and the calibration pairs where asked. [—]
    """
    return validation(rows, measured_rows(read_measurements(CORPUS)), calibration, by_source)


def current(rep: Report, checks) -> list[Check]:
    """The checks of rows of current engine releases: what the headline pools. [—]"""
    return [c for c in checks if c.id not in rep.superseded]


def row_counts(checks) -> tuple[int, int, int]:
    """(rows, rows predicted, rows skipped): a row with any predicted figure counts as predicted. [rows]"""
    ids = {c.id for c in checks}
    skipped = {c.id for c in checks if c.skipped} - {c.id for c in checks if not c.skipped}
    return len(ids), len(ids - skipped), len(skipped)


def _worst(checks: list[Check], n: int = 8) -> list[Check]:
    """The checks with the largest |error| (capacity, throughput, latency)."""
    scored = [c for c in checks if c.relative_error is not None and c.kind != "ttft"]
    return sorted(scored, key=lambda c: -abs(c.relative_error))[:n]


WHY = {
    "KV09": "gpt-oss-120b (MXFP4) on one H100 at 0.95: vLLM's non-KV memory for this model (201k vocabulary, MXFP4 "
            "kernels' workspaces) is ~5 GiB above our activation and non-torch estimate",
    "TR17": "Llama 4 Maverick on TensorRT-LLM ran attention data-parallel with an unstated expert-parallel size; "
            "predicted as TP 8 without EP",
    "TR03": "Llama 4 Scout, the same unstated attention-DP / EP layout; 2,048 outputs at a batch TensorRT-LLM caps below "
            "what the cache holds",
    "TR04": "20,000-token prompts at FP4 on one B200: prefill-bound, where our attention at the 16-bit peak is optimistic",
    "GS24": "DeepSeek-R1 (MLA, 256 experts) at TP 8 on vLLM 0.11 without expert parallelism: its MoE path runs well "
            "below the roofline",
    "TR01": "Llama 4 Scout at FP4 on one B200, the unstated attention-DP / EP layout again",
    "GS06": "32,000-token prompts, gpt-oss-120b: prefill-bound; its sliding-window layers cost less than we charge",
    "TR12": "Qwen3-30B-A3B at FP4 on one B200 with 2,048 outputs: the batch TensorRT-LLM actually ran is not stated",
    "VN04": "128-token prompts with 4-token outputs, 1,000 at once through the OpenAI server: the time is the server's "
            "per-request path (tokenising, scheduling, HTTP), a term the model does not have",
    "VN08": "the same 128/4 drain on Qwen3-32B: the server's per-request path, not the GPU",
    "SGN04": "the same 128/4 drain on SGLang: the server's per-request path, not the GPU",
    "TRD04": "DeepSeek-R1 with attention data-parallel and EP 8 at batch 128 per rank: the MoE all-to-all and MLA "
             "kernels run well below the roofline the model charges",
    "MS05": "MLPerf Server on 8 H100 PCIe cards: the submitter's layout is not stated, and the model takes the one that "
            "serves most offline (eight TP 1 replicas)",
    "MS04": "MLPerf Server on 4 H100 NVL cards: the submitter's layout is not stated, and the model takes the one that "
            "serves most offline (four TP 1 replicas)",
    "MS11": "MLPerf Server on MI300X with FP16 weights under vLLM 0.4: a release older than the defaults describe",
}
"""Why the worst rows miss, for the README table (each read from the row's stated conditions)."""

TARGETS = {"capacity": 0.05, "throughput and latency": 0.10, "leave one source out": 0.07, "leave one deployment out": 0.07}
"""The accuracy targets the table is held against (issue 11's; its held-out target holds for every held-out fold). [fraction]"""


def _pct(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


def _median(checks: list[Check], pick) -> float | None:
    errs = [abs(c.relative_error) for c in checks if c.relative_error is not None and pick(c)]
    return statistics.median(errs) if errs else None


def held_out_median(rep: Report, checks, kinds: tuple[str, ...] = HEADLINE_KINDS, pick=None) -> float | None:
    """Median |error| over points (a point's repeats once) of current releases' checks of ``kinds``. [fraction]"""
    sel = [c for c in current(rep, checks) if pick is None or pick(c)]
    errs = point_errors(sel, list(rep.rows), kinds)
    return statistics.median(errs) if errs else None


def held_out_lines(rep: Report) -> list[str]:
    """The headline held out by deployment, by model beside it, the shipped defaults' figure labelled."""
    if not rep.by_deployment:
        return []
    beside = "in-sample for the corpus' rows" if rep.corpus else "in-sample for the corpus' rows, out of sample for the rest"
    lines = [(f"headline (leave one deployment out: each row predicted with the default table refitted without its "
              f"model × GPU × engine; current releases, each point once): throughput and inter-token latency "
              f"{_pct(held_out_median(rep, rep.by_deployment))}")]
    for kind in ("throughput", "latency", "ttft"):
        d = held_out_median(rep, rep.by_deployment, (kind,))
        if d is not None:
            lines.append(f"median |error|, {kind}: {_pct(d)} leave one deployment out · "
                         f"{_pct(held_out_median(rep, rep.by_model, (kind,)))} leave one model out · "
                         f"{_pct(held_out_median(rep, rep.in_sample, (kind,)))} at the shipped defaults ({beside})")
    return lines


GROUPS = (("engine", lambda m: m.conditions.engine),
          ("GPU", lambda m: m.conditions.gpu.name),
          ("dense or MoE", lambda m: "MoE" if m.conditions.model.num_experts else "dense"))
"""How the README's held-out table groups rows. [—]"""


def by_group_markdown(rep: Report) -> str:
    """The held-out figures by engine, GPU and dense/MoE, each labelled, as a Markdown table. [text]"""
    of = {m.id: m for m in rep.rows if m.conditions is not None}
    lines = [("| group | figures scored (a point once) | throughput + TPOT, leave one deployment out | leave one model "
              "out | at the shipped defaults | TTFT, leave one deployment out |"), "|---|---|---|---|---|---|"]
    for name, key in GROUPS:
        for value in sorted({key(m) for m in of.values()}):
            def pick(c, key=key, value=value):
                return c.id in of and key(of[c.id]) == value
            n = len(point_errors([c for c in current(rep, rep.by_deployment) if pick(c)], list(rep.rows),
                                 (*HEADLINE_KINDS, "ttft")))
            if not n:
                continue
            lines.append(f"| {name}: {value} | {n:,} | {_pct(held_out_median(rep, rep.by_deployment, pick=pick))} | "
                         f"{_pct(held_out_median(rep, rep.by_model, pick=pick))} | "
                         f"{_pct(held_out_median(rep, rep.in_sample, pick=pick))} | "
                         f"{_pct(held_out_median(rep, rep.by_deployment, ('ttft',), pick))} |")
    return "\n".join(lines) + "\n"


def summary_lines(rep: Report) -> list[str]:
    """The report's headline as text lines: held out by deployment first, by model and in-sample beside it, leave one
    source out, calibration after."""
    lines = held_out_lines(rep)
    lines += [(f"leave one source out (each row predicted with defaults fitted without its source; current "
               f"engine releases): throughput and inter-token latency {_pct(headline(current(rep, rep.left_out)))}")]
    if rep.superseded:
        lines.append(f"  with the {len(rep.superseded)} rows of engine releases older than the defaults describe (validated, "
                     f"not fitted): {_pct(headline(rep.left_out))}")
    beside = ("in-sample (the defaults were fitted on these rows)" if rep.corpus else
              "at the shipped defaults (fitted on the corpus; the rows not in it are out of sample there too)")
    ins, out = current(rep, rep.in_sample), current(rep, rep.left_out)
    for kind in KINDS:
        a, b = _median(ins, lambda c, k=kind: c.kind == k), _median(out, lambda c, k=kind: c.kind == k)
        if a is not None:
            lines.append(f"median |error|, {kind}: {_pct(b)} left out by source · {_pct(a)} {beside}" if kind != "capacity" else
                         f"median |error|, capacity: {_pct(a)} (no efficiency enters; in-sample and left out are the same)")
    for p in rep.calibration:
        lines.append(f"calibration within a deployment, {p.label}: {p.pairs} pairs, median |error| {_pct(p.default_median)} "
                     f"at the defaults → {_pct(p.calibrated_median)} calibrated; {p.improved} improved, {p.unchanged} "
                     f"unchanged, {p.worse} worse ({p.worse_by_5_points} by more than 5 points)")
    return lines


def markdown(rep: Report) -> str:
    """The README's validation table: the left-out headline, both figures by kind and category, calibration, worst rows."""
    ins, out = current(rep, rep.in_sample), current(rep, rep.left_out)
    cap = _median(ins, lambda c: c.kind == "capacity")
    lines = ["| against the targets | median \\|error\\| | target | met |", "|---|---|---|---|"]
    rows = [(("**headline**: throughput and inter-token latency, each deployment (model × GPU × engine) left out of the "
             "fit, each point once"), held_out_median(rep, rep.by_deployment), "leave one deployment out"),
            ("throughput and inter-token latency, each model left out of the fit", held_out_median(rep, rep.by_model),
             "leave one deployment out"),
            ("throughput and inter-token latency, each source left out of the fit", headline(out), "leave one source out")]
    if rep.superseded:
        rows.append((f"the same with the {len(rep.superseded)} rows of older engine releases too (validated, not fitted)",
                     headline(rep.left_out), "leave one source out"))
    rows += [("KV capacity at plan time (no efficiency enters)", cap, "capacity"),
             (("throughput and inter-token latency in-sample (fitted on these rows; not the headline)" if rep.corpus else
               "throughput and inter-token latency at the shipped defaults (fitted on the corpus; not the headline)"),
              headline(ins), "throughput and latency")]
    for label, value, key in rows:
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            lines.append(f"| {label} | {value:.1%} | {TARGETS[key]:.0%} | {'yes' if value <= TARGETS[key] else 'no'} |")
    if rep.superseded:
        lines += ["", (f"Below, rows of current engine releases only: {len(rep.superseded)} rows of releases older than the "
                       "defaults describe (vLLM before 0.8, SGLang before 0.5) are validated but neither fitted nor pooled; "
                       "`xlplan validate` lists each.")]
    beside = "in-sample" if rep.corpus else "at the shipped defaults"
    lines += ["", f"| figure | checks | left out by source | {beside} |", "|---|---|---|---|"]
    for kind in KINDS:
        n = sum(1 for c in ins if c.kind == kind and c.relative_error is not None)
        if n:
            lines.append(f"| {kind} | {n} | {_pct(_median(out, lambda c, k=kind: c.kind == k))} | "
                         f"{_pct(_median(ins, lambda c, k=kind: c.kind == k))} |")
    lines += ["", f"| category (throughput, latency, capacity) | checks | left out by source | {beside} |", "|---|---|---|---|"]
    for cat in sorted({c.category for c in ins if c.relative_error is not None}):
        def pick(c, cat=cat):
            return c.category == cat and c.kind != "ttft"
        n = sum(1 for c in ins if pick(c) and c.relative_error is not None)
        if n:
            lines.append(f"| {cat} | {n} | {_pct(_median(out, pick))} | {_pct(_median(ins, pick))} |")
    rows_n, predicted_n, skipped_n = row_counts(rep.in_sample)
    sources = len({c.source for c in rep.in_sample})
    lines += ["", (f"{rows_n} rows from {sources} source{'s' if sources != 1 else ''}: {predicted_n} predicted, "
                  f"{skipped_n} skipped with the reason (`xlplan validate` lists them).")]
    if rep.calibration:
        lines += ["", ("| calibration within a deployment (same GPU, model, engine) | pairs | defaults | calibrated | improved "
                      "| unchanged | worse | worse by > 5 points |"), "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {p.label} | {p.pairs} | {_pct(p.default_median)} | {_pct(p.calibrated_median)} | {p.improved} | "
                  f"{p.unchanged} | {p.worse} | {p.worse_by_5_points} |" for p in rep.calibration]
    if rep.sources:
        lines += ["", "| left out (default efficiencies fitted on the others) | runs | median \\|error\\| |", "|---|---|---|"]
        lines += [f"| {s.source} | {s.runs} | {s.median_error:.1%} |" for s in rep.sources]
    at = {(c.id, c.metric): c for c in ins}
    lines += ["", "| worst rows (left out) | figure | predicted | in-sample | measured | error | why |",
              "|---|---|---|---|---|---|---|"]
    for c in _worst(out):
        i = at.get((c.id, c.metric))
        lines.append(f"| {c.id} | {c.metric} | {c.predicted:,.4g} | {i.predicted:,.4g} | {c.measured:,.4g} | "
                     f"{c.relative_error:+.0%} | {WHY.get(c.id, '')} |" if i else "")
    return "\n".join(line for line in lines) + "\n"
