"""Benchmark: hostile files are refused quickly (issue 13: "a bomb of either kind is refused in under 5 s").

- a YAML alias bomb (nine levels of nine aliases: 9^9 = 387 million strings if expanded) as a plan file;
- a workbook whose first sheet's XML inflates to 300 MiB (deflated to ~300 KiB), read by `xlplan read`;
- a gzipped request log that inflates to 1 GiB of zeros (~1 MiB on disk), read by `xlplan traffic`.

Each must end with exit status 2 and a message, in under 5 s. Run:

    .venv/bin/python benchmarks/bench_bombs.py
"""

from __future__ import annotations

import contextlib
import gzip
import io
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from xlplan.cli import main
from xlplan.excel.book import figures
from xlplan.excel.export import workbook_for
from xlplan.io.planfile import reference_plan

TARGET_S = 5.0
MIB = 2**20


def alias_bomb(folder: Path) -> Path:
    path = folder / "bomb.yaml"
    levels = "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    path.write_text("a: &a [x, x, x, x, x, x, x, x, x]\n" + levels, encoding="utf-8")
    return path


def workbook_bomb(folder: Path, inflated_mib: int = 300) -> Path:
    path = folder / "bomb.xlsx"
    src = zipfile.ZipFile(io.BytesIO(workbook_for(figures(reference_plan()))))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == "xl/worksheets/sheet1.xml":
                row = b'<row r="1"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row>'
                part = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                part.compress_type = zipfile.ZIP_DEFLATED
                with dst.open(part, "w", force_zip64=True) as out:
                    for _ in range(inflated_mib):
                        out.write(row * (MIB // len(row)))
            else:
                dst.writestr(info, src.read(info.filename))
    return path


def gzip_bomb(folder: Path, inflated_mib: int = 1024) -> Path:
    path = folder / "bomb.csv.gz"
    zeros = b"0" * MIB
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b"timestamp,prompt_tokens,completion_tokens\n")
        for _ in range(inflated_mib):
            f.write(zeros)
    return path


def refused_in(args: list[str]) -> tuple[float, int, str]:
    err = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(args)
    return time.perf_counter() - t, rc, err.getvalue().strip()


def run() -> int:
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = [("YAML alias bomb (9^9)", ["plan", str(alias_bomb(folder))]),
                 ("workbook, sheet XML inflating to 300 MiB", ["read", str(workbook_bomb(folder))]),
                 ("gzipped log inflating to 1 GiB", ["traffic", str(gzip_bomb(folder))])]
        for name, args in cases:
            seconds, rc, message = refused_in(args)
            worst = max(worst, seconds if rc == 2 else float("inf"))
            print(f"{name:45s} {seconds:6.2f} s  exit {rc}  {message[:110]}")
    print(f"worst {worst:.2f} s (target < {TARGET_S:g} s): {'ok' if worst < TARGET_S else 'TOO SLOW'}")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(run())
