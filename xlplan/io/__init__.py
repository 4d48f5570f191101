"""Readers and writers at the edge: plan files, model configs, request logs, scrapes, benchmark results, forecast
tables, the measurements corpus and the silicon sample, the review's history, and every file a command writes (the
workbook's layout is :mod:`xlplan.excel`; the note's words are :mod:`xlplan.report`).

Outside names map to ours here. Every file a user hands the tool is opened through the input layer
(:mod:`xlplan.io.files` for paths, sizes, ``.gz`` and zip limits and encodings; :mod:`xlplan.io.structured` for
safe YAML and strict JSON; :mod:`xlplan.io.tables` for CSV tables with line numbers), and every file a command
writes goes through the output layer (:mod:`xlplan.io.outputs`). Problems are raised as
:class:`xlplan.io.errors.InputError`, one line each, naming the file and the field, line or cell.
"""
