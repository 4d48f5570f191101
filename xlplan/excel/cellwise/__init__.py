"""The engine's steps as spreadsheet-sized functions: numbers and catalog names in, one answer out.

The Excel functions in ``udfs/`` are one call each into this package, so a cell's
answer is the engine's. Each function composes the domain modules
(:mod:`~xlplan.serving.concurrency`, :mod:`~xlplan.serving.memory`, :mod:`~xlplan.serving.compute`,
:mod:`~xlplan.serving.latency`, :mod:`~xlplan.fleet`, :mod:`~xlplan.money.cost`) on catalog
look-ups; none has a formula of its own. Lengths are always given as
percentiles, so a superlinear cost sees the fitted distribution, never the mean.

The functions live by path in :mod:`~xlplan.excel.cellwise.inputs` (catalog look-ups, lengths),
:mod:`~xlplan.excel.cellwise.memory`, :mod:`~xlplan.excel.cellwise.compute`, :mod:`~xlplan.excel.cellwise.latency`,
:mod:`~xlplan.excel.cellwise.fleet` and :mod:`~xlplan.excel.cellwise.cost`.

References
----------
Runbook, document 14, "From a forecast to a purchase order", steps 3-7.
"""
