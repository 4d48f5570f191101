"""Render one PNG per tab of the reference workbook for the README (needs LibreOffice and poppler's pdftoppm).

    python scripts/render_workbook_pictures.py [--out docs/workbook]

Each tab is printed on its own (the others hidden) through the same PDF path as
`xlplan workbook --pdf`, and the first page is turned into a PNG.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import tempfile
from pathlib import Path

import openpyxl

from xlplan.io.libreoffice import to_pdf
from xlplan.io.planfile import reference_plan
from xlplan.io.workbook import SIX_TABS
from xlplan.io.workbook.export import workbook_for_plan


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("docs/workbook"))
    ap.add_argument("--dpi", type=int, default=110)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    data = workbook_for_plan(reference_plan())
    with tempfile.TemporaryDirectory() as tmp:
        for i, title in enumerate(SIX_TABS, start=1):
            wb = openpyxl.load_workbook(io.BytesIO(data))
            for ws in wb.worksheets:
                ws.sheet_state = "visible" if ws.title == title else "hidden"
            wb.active = wb.sheetnames.index(title)
            src = Path(tmp) / f"tab{i}.xlsx"
            wb.save(src)
            pdf = to_pdf(src, Path(tmp) / "pdf")
            stem = args.out / f"tab{i}"
            subprocess.run(["pdftoppm", "-png", "-r", str(args.dpi), "-f", "1", "-l", "1", "-singlefile", str(pdf), str(stem)], check=True)
            print(f"{stem}.png  {title}")


if __name__ == "__main__":
    main()
