"""The validation report: every check, the medians by kind and category, leave-one-source-out, and the README's table.

``python scripts/validation_table.py`` rewrites the README's table from the corpus with :func:`markdown`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from xlplan.io.measurements import KINDS, Check, medians, run_of, source_group

README_BEGIN = "<!-- validation table: begin (python scripts/validation_table.py) -->"
README_END = "<!-- validation table: end -->"


@dataclass(frozen=True)
class SourceOut:
    """One source predicted with default efficiencies fitted without it."""

    source: str
    runs: int
    median_error: float  # [fraction]


def leave_one_source_out(rows: list[dict]) -> list[SourceOut]:
    """Refit the default efficiency table on every source but one; predict that one's throughput and latency rows."""
    from xlplan.calibrate import fit_defaults, residuals
    from xlplan.predict import Efficiencies

    pairs = [(source_group(r.get("source", "")), run_of(r)) for r in rows]
    pairs = [(g, r) for g, r in pairs if r is not None]
    out = []
    for g in sorted({g for g, _ in pairs}):
        train = [r for h, r in pairs if h != g]
        test = [r for h, r in pairs if h == g]
        if not train:
            continue
        errs = [abs(math.exp(x) - 1.0) for x in residuals(test, Efficiencies(), table=fit_defaults(train))]
        out.append(SourceOut(g, len(test), statistics.median(errs)))
    return out


def loso_median(rows: list[dict]) -> float:
    """Median |error| over every throughput and latency figure, each predicted without its own source. [fraction]"""
    from xlplan.calibrate import fit_defaults, residuals
    from xlplan.predict import Efficiencies

    pairs = [(source_group(r.get("source", "")), run_of(r)) for r in rows]
    pairs = [(g, r) for g, r in pairs if r is not None]
    errs = []
    for g in sorted({g for g, _ in pairs}):
        fold = fit_defaults([r for h, r in pairs if h != g])
        errs += [abs(math.exp(x) - 1.0) for x in residuals([r for h, r in pairs if h == g], Efficiencies(), table=fold)]
    return statistics.median(errs) if errs else float("nan")


def worst(checks: list[Check], n: int = 8) -> list[Check]:
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
}
"""Why the worst rows miss, for the README table (each read from the row's stated conditions)."""

TARGETS = {"capacity": 0.05, "throughput and latency": 0.10, "leave one source out": 0.07}
"""The accuracy targets the table is held against (issue 11). [fraction]"""


def markdown(checks: list[Check], loso: list[SourceOut] | None = None, loso_pooled: float | None = None) -> str:
    """The README's validation table: medians by kind and category, sources, leave-one-source-out, the worst rows."""
    med = medians(checks)
    predicted = [c for c in checks if not c.skipped]
    tl = [abs(c.relative_error) for c in predicted if c.kind in ("throughput", "latency")]
    lines = ["| against the targets | median \\|error\\| | target | met |", "|---|---|---|---|"]
    for label, value in (("KV capacity at plan time", med.get("capacity")),
                         ("throughput and inter-token latency", statistics.median(tl) if tl else None),
                         ("leave one source out (throughput and latency)", loso_pooled)):
        key = "capacity" if label.startswith("KV") else "throughput and latency" if label.startswith("throughput") else "leave one source out"
        if value is not None:
            lines.append(f"| {label} | {value:.1%} | {TARGETS[key]:.0%} | {'yes' if value <= TARGETS[key] else 'no'} |")
    lines += ["", "| figure | checks | median \\|error\\| |", "|---|---|---|"]
    for kind in KINDS:
        n = sum(1 for c in predicted if c.kind == kind)
        if n:
            lines.append(f"| {kind} | {n} | {med[kind]:.1%} |")
    lines += ["", "| category | checks | median \\|error\\| |", "|---|---|---|"]
    for cat in sorted({c.category for c in predicted}):
        n = sum(1 for c in predicted if c.category == cat and c.kind != "ttft")
        if n and cat in med:
            errs = [abs(c.relative_error) for c in predicted if c.category == cat and c.kind != "ttft"]
            lines.append(f"| {cat} | {n} | {statistics.median(errs):.1%} |")
    rows = {c.id for c in checks}
    skipped = {c.id for c in checks if c.skipped} - {c.id for c in predicted}
    lines += ["", (f"{len(rows)} rows from {len({c.source for c in checks})} sources: {len(rows - skipped)} predicted, "
                  f"{len(skipped)} skipped with the reason (`xlplan validate` lists them).")]
    if loso:
        lines += ["", "| left out (default efficiencies fitted on the others) | runs | median \\|error\\| |", "|---|---|---|"]
        lines += [f"| {s.source} | {s.runs} | {s.median_error:.1%} |" for s in loso]
    lines += ["", "| worst rows | figure | predicted | measured | error | why |", "|---|---|---|---|---|---|"]
    for c in worst(checks):
        lines.append(f"| {c.id} | {c.metric} | {c.predicted:,.4g} | {c.measured:,.4g} | {c.relative_error:+.0%} | "
                     f"{WHY.get(c.id, '')} |")
    return "\n".join(lines) + "\n"
