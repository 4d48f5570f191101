"""MLPerf Inference's LLM benchmarks as defined: model, dataset and its mean lengths, at the edge.

``xlplan/data/mlperf_benchmarks.csv`` holds each datacenter LLM benchmark's definition from MLCommons' public
reference implementation and its documentation (the source and a quote on every row): the model, the dataset, its
samples and mean prompt and output lengths, and the Server scenario's p99 latency limits. Only definitions are held,
never a submitted result. An MLPerf row that states no lengths (a submitter runs the benchmark's dataset) is
predicted at its benchmark's mean lengths (:func:`xlplan.io.measurements.mlperf_lengths`).
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "data" / "mlperf_benchmarks.csv"
"""The benchmark definitions that ship with xlplan (every row with its source and quote)."""


@dataclass(frozen=True)
class Benchmark:
    """One MLPerf LLM benchmark's definition. Units in the field comments."""

    benchmark: str  # MLCommons' name, e.g. 'llama2-70b' [text]
    model: str  # xlplan's catalog key [text]
    mean_input_tokens: float | None  # the dataset's mean prompt; None: not published in the definition [tokens]
    mean_output_tokens: float | None  # the reference's mean output; None: not published [tokens]
    source: str  # [text]
    server_ttft_p99_s: float | None = None  # the Server scenario's p99 TTFT limit; None: no Server scenario [s]
    server_tpot_p99_s: float | None = None  # the Server scenario's p99 time-per-output-token limit [s]


@functools.lru_cache(maxsize=1)
def benchmarks() -> tuple[Benchmark, ...]:
    """Every benchmark of the shipped table whose model is in the catalog, its mean lengths where published. [—]"""
    def mean(cell: str) -> float | None:
        return float(cell) if cell.strip() else None

    with open(BENCHMARKS, newline="", encoding="utf-8") as f:
        return tuple(Benchmark(r["benchmark"], r["model_key"], mean(r["mean_input_tokens"]),
                               mean(r["mean_output_tokens"]), r["source_url"],
                               _seconds(mean(r["server_ttft_p99_ms"])), _seconds(mean(r["server_tpot_p99_ms"])))
                     for r in csv.DictReader(f) if r["model_key"].strip())


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1e3


def benchmark_for(model_key: str, text: str) -> Benchmark | None:
    """The benchmark an MLPerf row of ``model_key`` ran: of the model's benchmarks, the one whose name the row's text
    names (``llama2-70b-interactive``), else the model's plain one. [Benchmark]

    Parameters
    ----------
    model_key : str
        The row's model, xlplan's catalog key. [text]
    text : str
        The row's settings, dataset and model columns, where a benchmark's name may be given. [text]

    Returns
    -------
    Benchmark or None
        None where no benchmark of the model is defined in the table.

    Examples
    --------
    >>> benchmark_for("llama-2-70b", "MLPerf llama2-70b: OpenOrca").benchmark
    'llama2-70b'
    """
    mine = [b for b in benchmarks() if b.model == model_key]
    t = text.lower()
    named = [b for b in mine if re.search(rf"(?<![\w-]){re.escape(b.benchmark)}(?![\w-])", t)]
    if named:
        return max(named, key=lambda b: len(b.benchmark))
    plain = sorted(mine, key=lambda b: len(b.benchmark))
    return plain[0] if plain else None
