"""The workbook: its figures computed once (book), its tabs laid out as formulas over 1 Inputs, written, read back and
checked; and the cell side of the Excel functions (cellwise).
"""
