"""Read the measurements corpus' ``parallelism`` prose once into the layout grammar's six columns.

    python scripts/structure_layouts.py           # fill tp, pp, attention_dp, moe_tp, moe_ep, replicas where blank
    python scripts/structure_layouts.py --check   # exit 1 where a filled row differs from what its prose reads

The grammar is :mod:`xlplan.io.layouts` (AIConfigurator's, ``xlplan/data/silicon_sample.md``). A row whose prose states
no layout ("vendor-chosen") keeps the columns blank: the reader then takes the layout as not stated. The prose column
stays beside them as the source wrote it. Standard library and xlplan only.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from xlplan.io.layouts import COLUMNS, from_prose
from xlplan.io.measurement_table import _num

CORPUS = Path(__file__).resolve().parents[1] / "xlplan" / "data" / "measurements.csv"


def structured(text: str) -> tuple[str, list[str]]:
    """The corpus with its layout columns filled from the prose (after ``parallelism``), and the rows that differ."""
    reader = csv.DictReader(io.StringIO(text))
    fields = list(reader.fieldnames or [])
    rows = list(reader)
    if not set(COLUMNS) <= set(fields):
        at = fields.index("parallelism") + 1
        fields = fields[:at] + list(COLUMNS) + fields[at:]
    differ = []
    for r in rows:
        count = _num(r.get("gpu_count"))
        layout, _ = from_prose(r.get("parallelism") or "", r.get("settings") or "", int(count) if count else None)
        cells = layout.cells() if layout is not None else dict.fromkeys(COLUMNS, "")
        if any((r.get(c) or "") and r.get(c) != cells[c] for c in COLUMNS):
            differ.append(f"{r['id']}: columns {[r.get(c) for c in COLUMNS]} but the prose reads {list(cells.values())}")
        for c in COLUMNS:
            r[c] = r.get(c) or cells[c]
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue(), differ


if __name__ == "__main__":
    text = CORPUS.read_text(encoding="utf-8")
    new, differ = structured(text)
    if "--check" in sys.argv:
        for line in differ:
            print(line)
        sys.exit(1 if differ else 0)
    CORPUS.write_text(new, encoding="utf-8")
    print(f"wrote the layout columns into {CORPUS}")
