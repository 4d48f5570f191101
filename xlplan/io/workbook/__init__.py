"""The capacity-note workbook: layout, writer, reader and checker (openpyxl; LibreOffice optional)."""

from xlplan.io.workbook.layout import SIX_TABS, SUPPORT_TABS, build

__all__ = ["SIX_TABS", "SUPPORT_TABS", "build"]
