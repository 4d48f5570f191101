"""Charts from the specs the tabs declare: a scatter (lines with markers) or a column chart, built with openpyxl.

A spec is a plain dict: ``kind`` ('scatter' or 'bar'), ``title``, ``x_title``, ``y_title``, the ``x`` range
``(column, first row, last row)`` and the ``series``; the rest (formats, bounds, legend, size) is optional.
"""

from __future__ import annotations

SERIES_COLOURS = ("1F77B4", "FF7F0E", "2CA02C", "D62728", "9467BD", "8C564B", "7F7F7F")
"""Line colours of a chart's series in order, each distinct (a chart style shades one colour)."""


def column_index(letter: str) -> int:
    """The 1-based index of a column letter ('A' is 1). [1]"""
    from openpyxl.utils import column_index_from_string

    return column_index_from_string(letter)


def _series_specs(ch: dict) -> list[dict]:
    """The chart's series as dicts: ``(column, title row, last row)`` tuples become ``{"col", "rows"}``."""
    return [s if isinstance(s, dict) else {"col": s[0], "rows": (s[1], s[2])} for s in ch["series"]]


def _values_and_title(ws, spec: dict):
    """A series' value range and its title (the title row's cell): the rows after the title row, or from
    ``values_from`` where rows lie between the title and the values (a units row)."""
    from openpyxl.chart import Reference
    from openpyxl.chart.series import SeriesLabel, StrRef
    from openpyxl.utils import quote_sheetname

    h, end = spec["rows"]
    first = spec.get("values_from", h + 1)
    values = Reference(ws, min_col=column_index(spec["col"]), min_row=first, max_row=end)
    return values, SeriesLabel(strRef=StrRef(f"{quote_sheetname(ws.title)}!{spec['col']}{h}"))


def _bar_chart(ws, specs: list[dict], xref, horizontal: bool = False):
    """A column chart: each series a column of values over the x range's categories; ``horizontal``: bars, the first
    category at the top and the labels at the left edge, clear of bars below zero (a tornado)."""
    from openpyxl.chart import BarChart, Series

    chart = BarChart()
    for spec in specs:
        values, title = _values_and_title(ws, spec)
        series = Series(values)
        series.tx = title
        chart.series.append(series)
    chart.set_categories(xref)
    if horizontal:
        chart.type = "bar"
        chart.gapWidth = 50
        chart.x_axis.scaling.orientation = "maxMin"
        chart.x_axis.tickLblPos = "low"
        chart.x_axis.tickLblSkip = 1  # every bar named: a spreadsheet otherwise drops every other label to fit
    return chart


def _scatter_series(ws, ch: dict, spec: dict, i: int, xref):
    """One scatter series: its values over its own x range (else the chart's), colour, dash and marker."""
    from openpyxl.chart import Reference, Series

    own_x = spec.get("x")
    xs = Reference(ws, min_col=column_index(own_x[0]), min_row=own_x[1], max_row=own_x[2]) if own_x else xref
    values, title = _values_and_title(ws, spec)
    series = Series(values, xs)
    series.tx = title
    colour = spec.get("colour", SERIES_COLOURS[i % len(SERIES_COLOURS)])
    series.graphicalProperties.line.solidFill = colour
    series.graphicalProperties.line.width = 22000  # EMU: about 1.75 pt
    if spec.get("dash"):
        series.graphicalProperties.line.prstDash = spec["dash"]
    series.marker.symbol = spec.get("marker", ch.get("marker", "circle"))
    if series.marker.symbol != "none":
        series.marker.size = 5
        series.marker.graphicalProperties.solidFill = colour
        series.marker.graphicalProperties.line.solidFill = colour
    series.smooth = False
    return series


def _axes(chart, ch: dict) -> None:
    """Both axes shown, with number formats (``x_format``, ``y_format``), bounds (``x_min``, ``x_max``, ``y_min``)
    and major units where the spec gives them."""
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    for axis, key in ((chart.x_axis, "x"), (chart.y_axis, "y")):
        if ch.get(f"{key}_format"):
            axis.number_format = ch[f"{key}_format"]
            axis.numFmt.sourceLinked = False
        if ch.get(f"{key}_min") is not None:
            axis.scaling.min = ch[f"{key}_min"]
        if ch.get(f"{key}_max") is not None:
            axis.scaling.max = ch[f"{key}_max"]
        if ch.get(f"{key}_major") is not None:
            axis.majorUnit = ch[f"{key}_major"]


def chart(ws, ch: dict):
    """A scatter (lines with markers) or a column chart (``horizontal``: a bar chart) from a spec.

    ``series`` are ``(column, title row, last row)`` over the chart's ``x`` range, or dicts with ``col``, ``rows``
    (title row, last row), and optionally ``values_from`` (the first value row, where a units row lies between), their
    own ``x`` range, a ``colour``, ``dash`` ('dash', 'sysDot'...) and ``marker``. Axis number formats (``x_format``,
    ``y_format``), bounds (``x_min``, ``x_max``, ``y_min``) and the legend (``legend``: a position, or None; by default one only where there is more than one series) are optional.
    """
    from openpyxl.chart import Reference, ScatterChart

    xcol, x0, x1 = ch["x"]
    xref = Reference(ws, min_col=column_index(xcol), min_row=x0, max_row=x1)
    specs = _series_specs(ch)
    if ch.get("kind") == "bar":
        out = _bar_chart(ws, specs, xref, ch.get("horizontal", False))
    else:
        out = ScatterChart()
        for i, spec in enumerate(specs):
            out.series.append(_scatter_series(ws, ch, spec, i, xref))
    out.title = ch["title"]
    out.style = 13
    out.x_axis.title = ch["x_title"]
    out.y_axis.title = ch["y_title"]
    out.height, out.width = ch.get("height", 9), ch.get("width", 16)
    _axes(out, ch)
    legend = ch.get("legend", "b" if len(specs) > 1 else None)
    if legend is None:
        out.legend = None
    else:
        out.legend.position = legend
    if ch.get("y_log"):  # values spanning decades (an overloaded fleet's TTFT beside a met one)
        out.y_axis.scaling.logBase = 10
    return out
