"""Rewrite the README's validation tables: the corpus' (xlplan/data/measurements.csv), and both corpora held out by
deployment, by model and at the shipped defaults, by engine, GPU and dense/MoE (with the silicon sample).

    python scripts/validation_table.py           # rewrite README.md between the two tables' markers
    python scripts/validation_table.py --check   # exit 1 if either table differs from a fresh one, or coverage falls

``--check`` also holds the silicon sample's coverage: of its 3,619 aggregated rows (mode agg, counted from the file)
at least 70% are predicted, each of those also scored with its deployment left out, and every row not predicted
says why. ``.ci/run`` runs it after the suite: the held-out report replays every row three times (about a minute on
one core), too heavy for the suite's ten minutes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS
from xlplan.report.validation_report import (
    HELD_OUT_BEGIN,
    HELD_OUT_END,
    README_BEGIN,
    README_END,
    build,
    build_rows,
    by_group_markdown,
    held_out_lines,
    markdown,
)

README = Path(__file__).resolve().parents[1] / "README.md"


def fresh() -> str:
    return markdown(build(read_measurements(CORPUS)))


def held_out_report():
    """Both corpora predicted at the shipped defaults and held out by deployment and by model. [Report]"""
    from xlplan.io.measurements import measured_rows
    from xlplan.io.silicon_sample import measured_rows as sample_rows
    from xlplan.io.silicon_sample import read_sample

    return build_rows(measured_rows(read_measurements(CORPUS)) + sample_rows(read_sample()), by_source=False)


def fresh_held_out(rep=None) -> str:
    """Both corpora held out by deployment and by model, and at the shipped defaults: the summary, then by group."""
    rep = rep if rep is not None else held_out_report()
    return "\n".join(f"- {line}" for line in held_out_lines(rep)) + "\n\n" + by_group_markdown(rep)


SAMPLE_AGGREGATED_ROWS = 3619
"""The silicon sample's aggregated rows (mode agg), as its README (xlplan/data/silicon_sample.md) counts them. [rows]"""

MIN_PREDICTED_SHARE = 0.70
"""The least share of them predicted (the rest skipped, each saying why). [fraction]"""


def coverage_faults(rep) -> list[str]:
    """What the held-out report leaves out of the sample that it should not: too few aggregated rows predicted, a
    predicted row not scored with its deployment left out, or a row skipped without a reason. [text]"""
    from xlplan.io import silicon_sample

    agg = {r["id"] for r in silicon_sample.read_sample() if r["mode"] == "agg"}
    faults = [] if len(agg) == SAMPLE_AGGREGATED_ROWS else [f"{len(agg)} aggregated rows, expected {SAMPLE_AGGREGATED_ROWS}"]
    predicted = {c.id for c in rep.in_sample if c.id in agg and c.relative_error is not None}
    left_out = {c.id for c in rep.by_deployment if c.id in agg and c.relative_error is not None}
    if len(predicted) < MIN_PREDICTED_SHARE * len(agg):
        faults.append(f"{len(predicted)} of {len(agg)} aggregated rows predicted, under {MIN_PREDICTED_SHARE:.0%}")
    if left_out != predicted:
        faults.append(f"{len(predicted ^ left_out)} rows predicted in sample but not left out by deployment, or the reverse")
    unsaid = [c.id for c in rep.in_sample if c.id in agg and c.id not in predicted and not c.skipped]
    if unsaid:
        faults.append(f"{len(unsaid)} rows neither predicted nor skipped with a reason, e.g. {unsaid[0]}")
    return faults


def _between(text: str, begin: str, end: str, body: str) -> str:
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + body + text[stop:]


if __name__ == "__main__":
    text = README.read_text(encoding="utf-8")
    rep = held_out_report()
    new = _between(_between(text, README_BEGIN, README_END, fresh()), HELD_OUT_BEGIN, HELD_OUT_END, fresh_held_out(rep))
    if "--check" in sys.argv:
        stale = "README.md's validation tables are stale: run python scripts/validation_table.py"
        faults = coverage_faults(rep) + ([] if new == text else [stale])
        for fault in faults:
            print(f"validation_table: {fault}", file=sys.stderr)
        sys.exit(1 if faults else 0)
    README.write_text(new, encoding="utf-8")
    print(f"wrote the validation table into {README}")
