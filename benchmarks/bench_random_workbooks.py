"""The wider sweep of drawn plans through both spreadsheet engines (the suite's `test_random_plans_recalculate` draws
fewer, to stay within its ten minutes on two cores).

Draws N feasible plans with the suite's own hypothesis strategy (deterministic; the suite draws fewer with
the same strategy), builds each plan's workbook as the CLI does, recalculates them in LibreOffice and in the Excel-grammar engine,
and compares every formula cell with the engine (`tests/workbookhelp.py`'s recalc_and_compare, the suite's own
comparison). Prints the problems, if any, and one line. Run:

    .venv/bin/python benchmarks/bench_random_workbooks.py        # 40 plans
    .venv/bin/python benchmarks/bench_random_workbooks.py 25

Needs LibreOffice. Its last run is committed beside it (bench_random_workbooks.txt).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

N = 40


def main(argv: list[str]) -> int:
    from test_workbook_recalc import _draw_plans
    from workbookhelp import recalc_and_compare

    n = int(argv[0]) if argv else N
    t = time.perf_counter()
    plans = {f"random_{i:02d}": p for i, p in enumerate(_draw_plans(n))}
    with tempfile.TemporaryDirectory() as d:
        problems = recalc_and_compare(plans, Path(d), engines=("libreoffice", "excel"))
    for line in problems[:40]:
        print(line)
    print(f"{n} drawn plans, each workbook recalculated by LibreOffice and the Excel-grammar engine: "
          f"{len(problems)} formula cells disagree with the engine ({time.perf_counter() - t:.0f} s) -> "
          f"{'ok' if not problems else 'FAILED'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
