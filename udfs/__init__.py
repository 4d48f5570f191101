"""xlplan's Excel functions (xlwings): ``udfs.functions`` is the module to register in Excel."""
