"""Opening a user's .xlsx: every way the file can be wrong (a folder, a legacy .xls, a password, a damaged package,
an XML bomb) becomes one clear line."""

from __future__ import annotations

import zipfile
from pathlib import Path

from xlplan.io import files
from xlplan.io.errors import InputError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
WORKBOOK_FILE = "an .xlsx workbook (try `xlplan template`)"

def open_workbook(path: str | Path, data_only: bool = False):
    """Open an .xlsx with openpyxl, turning every way a file can be wrong into a clear InputError."""
    import openpyxl
    from openpyxl.xml import DEFUSEDXML

    path = files.check_input(path, WORKBOOK_FILE, files.WORKBOOK_MAX_BYTES)
    src = str(path)
    with open(path, "rb") as f:
        head = f.read(8)
    if head == OLE_MAGIC:
        raise InputError(src, [_ole_problem(path)])
    if not zipfile.is_zipfile(path):
        raise InputError(src, [("not a valid .xlsx (not a zip package: corrupt, truncated or another format); "
                               "expected a workbook saved by Excel or LibreOffice as .xlsx")])
    files.check_zip_package(path, WORKBOOK_FILE)
    if not DEFUSEDXML:  # pragma: no cover - defusedxml is a dependency of the excel extra
        raise InputError(src, ["defusedxml is not installed; expected it, so that untrusted workbooks are parsed safely"])
    try:
        return openpyxl.load_workbook(path, data_only=data_only)
    except Exception as e:  # openpyxl raises many kinds on a damaged package
        cause: BaseException | None = e
        while cause is not None:
            if type(cause).__module__.startswith("defusedxml"):
                raise InputError(src, [(f"refused: its XML declares entities or a DTD ({type(cause).__name__}), as an XML bomb "
                                       "does; expected plain spreadsheet XML as Excel and LibreOffice write it")]) from None
            cause = cause.__cause__ or cause.__context__
        reason = str(e).strip() or type(e).__name__
        raise InputError(src, [(f"not a readable .xlsx ({type(e).__name__}: {reason[:200]}); "
                               "expected a workbook saved by Excel or LibreOffice as .xlsx")]) from None


def _ole_problem(path: Path) -> str:
    try:
        import olefile

        with olefile.OleFileIO(str(path)) as ole:
            if ole.exists("EncryptionInfo"):
                return ("password-protected (encrypted) workbook; expected an unprotected .xlsx: open it, "
                        "remove the password (File > Info > Protect Workbook) and save")
    except Exception:  # not even a valid OLE file
        return "a damaged legacy Office file; expected an .xlsx workbook"
    return "a legacy Excel 97-2003 .xls; expected .xlsx: open it and save as Excel Workbook (.xlsx)"
