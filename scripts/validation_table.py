"""Rewrite the README's validation table from the corpus (xlplan/data/measurements.csv).

    python scripts/validation_table.py           # rewrite README.md between the validation-table markers
    python scripts/validation_table.py --check   # exit 1 if the README's table differs from a fresh one
"""

from __future__ import annotations

import sys
from pathlib import Path

from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS
from xlplan.report.validation_report import README_BEGIN, README_END, build, markdown

README = Path(__file__).resolve().parents[1] / "README.md"


def fresh() -> str:
    return markdown(build(read_measurements(CORPUS)))


if __name__ == "__main__":
    text = README.read_text(encoding="utf-8")
    start, end = text.index(README_BEGIN) + len(README_BEGIN), text.index(README_END)
    new = text[:start] + "\n" + fresh() + text[end:]
    if "--check" in sys.argv:
        sys.exit(0 if new == text else 1)
    README.write_text(new, encoding="utf-8")
    print(f"wrote the validation table into {README}")
