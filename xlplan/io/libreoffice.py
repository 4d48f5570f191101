"""Headless LibreOffice: forced recalculation of .xlsx files, and PDF export.

LibreOffice's default for .xlsx is never to recalculate on load (it trusts the
cached values), so a private user profile sets ``OOXMLRecalcMode`` to 0
("always"). Many files convert in one start, which is most of the cost.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from xlplan.io.errors import InputError

RECALC_ALWAYS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""

LOCALE = """<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooSetupSystemLocale" oor:op="fuse"><value>{}</value></prop></item>
"""
"""The profile's setting of the locale LibreOffice formats and parses numbers in (a BCP 47 tag such as de-DE), in
place of the system's."""

TIMEOUT_S = 300
"""Longest a conversion may take. [s]"""


def soffice() -> str | None:
    """Path of the LibreOffice binary, or None when it is not installed."""
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    for p in ("/usr/bin/soffice", "/usr/lib/libreoffice/program/soffice", "/Applications/LibreOffice.app/Contents/MacOS/soffice"):
        if os.path.exists(p):
            return p
    return None


INSTALL = "expected `soffice` on PATH (apt-get install -y libreoffice-calc-nogui)"


def require(option: str) -> None:
    """Refuse an option that needs LibreOffice where it is not installed, in one line naming the option (before
    anything is computed or written)."""
    if soffice() is None:
        raise InputError(option, [f"needs LibreOffice, which is not installed; {INSTALL}"])


def _convert(files: list[Path], outdir: Path, target: str, locale: str | None = None) -> list[Path]:
    binary = soffice()
    if binary is None:
        raise InputError("LibreOffice", [f"not found; {INSTALL}"])
    with tempfile.TemporaryDirectory(prefix="xlplan-lo-") as profile:
        user = Path(profile) / "user"
        user.mkdir()
        settings = RECALC_ALWAYS if locale is None else RECALC_ALWAYS.replace("</oor:items>", LOCALE.format(escape(locale)) + "</oor:items>")
        (user / "registrymodifications.xcu").write_text(settings, encoding="utf-8")
        cmd = [binary, f"-env:UserInstallation={Path(profile).as_uri()}", "--headless", "--norestore", "--nolockcheck",
               "--convert-to", target, "--outdir", str(outdir), *map(str, files)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise InputError("LibreOffice", [f"conversion took longer than {TIMEOUT_S} s"]) from None
    ext = target.split(":", 1)[0]
    out = [outdir / (f.stem + "." + ext) for f in files]
    missing = [str(p) for p in out if not p.exists()]
    if missing:
        raise InputError("LibreOffice", [f"did not write {', '.join(missing)}: {proc.stderr.strip() or proc.stdout.strip()}"])
    return out


def recalculate(files: list[Path], outdir: Path, locale: str | None = None) -> list[Path]:
    """Open each .xlsx in headless LibreOffice, recalculate every formula, save it as .xlsx in ``outdir``; in
    ``locale`` (a tag such as de-DE) where given, else in the system's."""
    outdir.mkdir(parents=True, exist_ok=True)
    return _convert(files, outdir, "xlsx:Calc MS Excel 2007 XML", locale)


def to_pdf(file: Path, outdir: Path) -> Path:
    """Export a workbook to PDF (every visible sheet, each as its print setup says)."""
    outdir.mkdir(parents=True, exist_ok=True)
    return _convert([file], outdir, "pdf:calc_pdf_Export")[0]
