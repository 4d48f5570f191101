"""The workbook's tabs, one module each: the rows a tab holds, as formulas over 1 Inputs and the figures computed once."""
