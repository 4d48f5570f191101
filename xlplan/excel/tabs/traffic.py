"""The traffic sheets: the evidence behind a forecast derived from a log (`xlplan traffic … --workbook`).

A data sheet holds the request rate over time (peak-preserving: each point is the
busiest window of its bucket) and the prompt and output length histograms with
p50/p95/p99 marked, with a chart of each; a chart sheet shows the rate over time.
Values, not formulas: they are measurements, dated by the provenance on 1 Inputs.
"""

from __future__ import annotations

from xlplan.evidence.traffic import TrafficSummary
from xlplan.excel.cells import Book, Cell

MAX_POINTS = 1500
"""Points in the rate series; windows are grouped, keeping each group's busiest. [points]"""
BINS = 40
"""Histogram bins, logarithmic in tokens. [bins]"""


def traffic_sheets(book: Book, s: TrafficSummary, counts, prompt, output, provenance: str) -> None:
    import numpy as np

    sh = book.sheet("Traffic data", "Supporting sheet: the request log behind the forecast — rate over time and length histograms.",
                    widths={"A": 22, "B": 16, "C": 4, "D": 16, "E": 16, "F": 16, "G": 4, "H": 16, "I": 16, "J": 16},
                    values_depend=())  # the log as it was read: a record, which no input moves
    sh.put("A", 1, Cell("Traffic — the log behind the forecast", kind="title"))
    sh.put("A", 2, Cell(f"Supporting sheet. {provenance}.", kind="note"))
    group = max(1, -(-counts.size // MAX_POINTS))
    padded = np.pad(counts, (0, (-counts.size) % group))
    peaks = padded.reshape(-1, group).max(axis=1) / s.window_s
    hours = np.arange(peaks.size) * group * s.window_s / 3600.0
    first = 5
    for col, label in (("A", "Hours since first request"), ("B", f"Busiest {s.window_s:g} s rate [req/s]")):
        sh.put(col, first - 1, Cell(label, kind="header"))
    for k, (h, v) in enumerate(zip(hours, peaks)):
        sh.put("A", first + k, Cell(float(round(h, 6)), kind="static", fmt="0.00"))
        sh.put("B", first + k, Cell(float(v), kind="static", fmt="0.000"))
    last = first + peaks.size - 1
    for title, col0, values, d in (("Prompt", "D", prompt, s.prompt), ("Output", "H", output, s.output)):
        v = np.maximum(np.asarray(values, dtype=float), 1.0)
        edges = np.logspace(np.log10(v.min()), np.log10(v.max() + 1.0), BINS + 1)
        hist, _ = np.histogram(v, bins=edges)
        c1, c2, c3 = col0, chr(ord(col0) + 1), chr(ord(col0) + 2)
        sh.put(c1, first - 1, Cell(f"{title} tokens up to", kind="header"))
        sh.put(c2, first - 1, Cell("Requests", kind="header"))
        sh.put(c3, first - 1, Cell("Percentile", kind="header"))
        for k in range(BINS):
            r = first + k
            sh.put(c1, r, Cell(float(round(edges[k + 1])), kind="static", fmt="#,##0"))
            sh.put(c2, r, Cell(int(hist[k]), kind="static", fmt="#,##0"))
            marks = [q for q, x in (("p50", d.p50), ("p95", d.p95), ("p99", d.p99)) if edges[k] < x <= edges[k + 1]]
            if marks:
                sh.put(c3, r, Cell(" ".join(marks), kind="static"))
        sh.put(c1, first + BINS + 1, Cell(f"p50 {d.p50:,.0f} · p95 {d.p95:,.0f} · p99 {d.p99:,.0f} · mean {d.mean:,.0f} (not for sizing)",
                                        kind="note"))
        sh.charts.append({"kind": "bar", "title": f"{title} lengths (p50/p95/p99 marked in column {c3})", "x_title": "tokens (bin upper edge)",
                          "y_title": "requests", "x": (c1, first, first + BINS - 1), "series": [(c2, first - 1, first + BINS - 1)],
                          "anchor": f"{c1}{first + BINS + 3}", "width": 14})
    book.chartsheets.append({"sheet": "Traffic chart", "data_sheet": sh.title, "kind": "scatter", "marker": "none",
                             "title": f"Request rate over time: peak {s.peak_rps:,.2f} req/s ({s.window_s:g} s window)",
                             "x_title": "hours since the first request", "y_title": "requests/s",
                             "x": ("A", first, last), "series": [("B", first - 1, last)]})
