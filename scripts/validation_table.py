"""Rewrite the README's validation tables: the corpus' (xlplan/data/measurements.csv), and both corpora held out by
deployment, by model and at the shipped defaults, by engine, GPU and dense/MoE (with the silicon sample).

    python scripts/validation_table.py           # rewrite README.md between the two tables' markers
    python scripts/validation_table.py --check   # exit 1 if either table differs from a fresh one
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


def fresh_held_out() -> str:
    """Both corpora held out by deployment and by model, and at the shipped defaults: the summary, then by group."""
    from xlplan.io.measurements import measured_rows
    from xlplan.io.silicon_sample import measured_rows as sample_rows
    from xlplan.io.silicon_sample import read_sample

    rep = build_rows(measured_rows(read_measurements(CORPUS)) + sample_rows(read_sample()), by_source=False)
    return "\n".join(f"- {line}" for line in held_out_lines(rep)) + "\n\n" + by_group_markdown(rep)


def _between(text: str, begin: str, end: str, body: str) -> str:
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + body + text[stop:]


if __name__ == "__main__":
    text = README.read_text(encoding="utf-8")
    new = _between(_between(text, README_BEGIN, README_END, fresh()), HELD_OUT_BEGIN, HELD_OUT_END, fresh_held_out())
    if "--check" in sys.argv:
        sys.exit(0 if new == text else 1)
    README.write_text(new, encoding="utf-8")
    print(f"wrote the validation table into {README}")
