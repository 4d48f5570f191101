"""Render one PNG per sheet of the reference workbook for the README (needs LibreOffice and poppler's pdftoppm).

    python scripts/render_workbook_pictures.py [--out docs/workbook]

The Summary, the six tabs and Options come from the reference plan; Schedule from the reference plan with 10% growth
a month and a 90-day lead time (the reference has no growth section). Each sheet is printed on its own (the others
hidden in the package, charts kept) through the same PDF path as `xlplan workbook --pdf`; its first page becomes a PNG.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from xlplan.excel.book import figures
from xlplan.excel.common import SIX_TABS
from xlplan.excel.export import workbook_for
from xlplan.excel.writer import with_sheets_shown
from xlplan.io.libreoffice import to_pdf
from xlplan.io.planfile import reference_plan
from xlplan.schema.plan import Plan


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("docs/workbook"))
    ap.add_argument("--dpi", type=int, default=110)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ref = reference_plan()
    data = workbook_for(figures(ref))
    grown = ref.model_dump(exclude_none=True)
    grown["growth"] = {"monthly": 0.10, "months": 12, "lead_time_days": 90, "start": "2027-01"}
    with_growth = workbook_for(figures(Plan.model_validate(grown)))
    sheets = [("summary", "Summary", data)] + [(f"tab{i}", t, data) for i, t in enumerate(SIX_TABS, start=1)] + \
        [("options", "Options", data), ("schedule", "Schedule", with_growth)]
    with tempfile.TemporaryDirectory() as tmp:
        for stem_name, title, xlsx in sheets:
            src = Path(tmp) / f"{stem_name}.xlsx"
            src.write_bytes(with_sheets_shown(xlsx, frozenset({title})))
            pdf = to_pdf(src, Path(tmp) / "pdf")
            stem = args.out / stem_name
            subprocess.run(["pdftoppm", "-png", "-r", str(args.dpi), "-f", "1", "-l", "1", "-singlefile", str(pdf), str(stem)], check=True)
            print(f"{stem}.png  {title}")


if __name__ == "__main__":
    main()
