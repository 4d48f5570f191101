"""Reading the user's benchmark results into runs: vLLM, GuideLLM and genai-perf (AIPerf) formats.

- ``vllm bench serve --save-result`` JSON: ``max_concurrency``, ``completed``, ``total_input_tokens``,
  ``total_output_tokens``, ``output_throughput``, ``mean_ttft_ms``, ``mean_itl_ms``;
- GuideLLM's report JSON: ``benchmarks[]`` with ``config.strategy`` (or ``args.strategy``)
  ``{"type_": "concurrent", "streams": N}`` and ``metrics`` whose ``successful.mean`` give
  ``time_to_first_token_ms``, ``inter_token_latency_ms``, ``output_tokens_per_second``,
  ``prompt_token_count``, ``output_token_count``;
- NVIDIA genai-perf's ``profile_export_genai_perf.json`` (and AIPerf's ``profile_export_aiperf.json``):
  top-level metrics with ``avg`` (``time_to_first_token``, ``inter_token_latency``,
  ``output_token_throughput``, ``input_sequence_length``, ``output_sequence_length``) and the
  concurrency in ``input_config`` (``concurrency``, or ``loadgen.concurrency``).

Every field the fit uses is checked, naming the field: a text, a boolean, NaN, a zero
or a negative where a positive figure belongs is an error, never a run silently left
out of the fit. Given the plan's model, a result file for another model is a warning
(the ``warnings`` of :class:`Runs`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from xlplan.evidence.calibrate import Run
from xlplan.io import files, structured
from xlplan.io.errors import InputError

EXPECTED = ("expected `vllm bench serve --save-result` JSON, a GuideLLM report JSON, or genai-perf's "
            "profile_export_genai_perf.json")
RESULT_FILE = "a benchmark result (JSON)"
MAX_FIGURE = 1e12
"""Largest value a result field may hold (tokens, ms, tokens/s, concurrency). [—]"""


class Runs(list):
    """The runs read from result files (a list of :class:`~xlplan.evidence.calibrate.Run`), with ``warnings``: one line per
    thing the caller should show, e.g. a result for another model than the plan's. [text]"""

    warnings: list[str]

    def __init__(self, runs=(), warnings=()):
        super().__init__(runs)
        self.warnings = list(warnings)


class _Fields:
    """Reads one object's figures, collecting a problem per bad field."""

    def __init__(self, src: str, prefix: str = ""):
        self.src, self.prefix, self.problems = src, prefix, []

    def figure(self, d: dict, key: str, unit: str, required: bool = False, what: str = "") -> float | None:
        """A positive, finite figure; None where absent or null (a problem when ``required``). [unit]"""
        v = d.get(key) if isinstance(d, dict) else None
        name = f"{self.prefix}{what or key}"
        if v is None:
            if required:
                self.problems.append(f"{name}: missing; expected a positive number [{unit}]")
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.problems.append(f"{name}: got {v!r}; expected a positive number [{unit}]")
            return None
        if not math.isfinite(v) or not 0 < v <= MAX_FIGURE:
            self.problems.append(f"{name}: got {v!r}; expected a positive number of at most {MAX_FIGURE:g} [{unit}]")
            return None
        if unit == "ms" and v < MIN_MS:  # no engine's token gap or first token is under half a millisecond
            self.problems.append(f"{name}: got {v:g}; expected milliseconds, at least {MIN_MS:g} — was it seconds? "
                                 f"{v:g} s is {v * 1000:g} ms")
            return None
        return float(v)

    def raise_any(self) -> None:
        if self.problems:
            raise InputError(self.src, self.problems)


MIN_MS = 0.5
"""Smallest latency a result states in milliseconds: a token gap or a first token under half a millisecond is a figure
written in seconds (0.012 for 12 ms). [ms]"""


def _vllm(d: dict, src: str) -> list[Run]:
    f = _Fields(src)
    done = f.figure(d, "completed", "requests", required=True)
    if d.get("max_concurrency") is None:
        conc = None
        f.problems.append("max_concurrency: missing; expected a run with --max-concurrency (a fixed concurrency)")
    else:
        conc = f.figure(d, "max_concurrency", "requests")
    isl = f.figure(d, "total_input_tokens", "tokens", required=True)
    osl = f.figure(d, "total_output_tokens", "tokens", required=True)
    ttft = f.figure(d, "mean_ttft_ms", "ms")
    itl = f.figure(d, "mean_itl_ms", "ms")
    thr = f.figure(d, "output_throughput", "tokens/s")
    f.raise_any()
    prompts, failed = d.get("num_prompts"), d.get("failed") or 0
    if isinstance(prompts, int) and isinstance(failed, int) and done + failed != prompts:  # the totals are the completed requests'
        raise InputError(src, [(f"completed: got {done:,.0f} with failed {failed:,} of num_prompts {prompts:,}; expected "
                                "completed + failed = num_prompts, as vllm bench serve writes them (a hand-edited or "
                                "truncated results file? its token totals would divide into impossible mean lengths)")])
    return [Run(src, conc, isl / done, osl / done, ttft / 1e3 if ttft else None, itl / 1e3 if itl else None, thr)]


def _mean(metrics: dict, name: str):
    """(the metric's mean, its dotted name) in GuideLLM's layout."""
    m = metrics.get(name) if isinstance(metrics, dict) else None
    m = m.get("successful", m) if isinstance(m, dict) else m
    return (m if isinstance(m, dict) else {}), f"metrics.{name}.successful.mean"


def _node(d, *keys) -> dict:
    """The mapping at a path of keys; {} where any step is missing or not a mapping."""
    for key in keys:
        d = d.get(key) if isinstance(d, dict) else None
    return d if isinstance(d, dict) else {}


def _guidellm(d: dict, src: str) -> list[Run]:
    runs = []
    for k, b in enumerate(d["benchmarks"]):
        if not isinstance(b, dict):
            raise InputError(src, [f"benchmarks[{k}]: got {type(b).__name__}; expected a benchmark object"])
        strategy = _node(b, "config", "strategy") or _node(b, "args", "strategy")
        if strategy.get("type_") != "concurrent":
            continue
        f = _Fields(src, f"benchmarks[{k}].")
        conc = f.figure(strategy, "streams", "requests", required=True, what="config.strategy.streams")
        m = _node(b, "metrics")
        values = {}
        for key, unit, required in (("prompt_token_count", "tokens", True), ("output_token_count", "tokens", True),
                                    ("time_to_first_token_ms", "ms", False), ("inter_token_latency_ms", "ms", False),
                                    ("output_tokens_per_second", "tokens/s", False)):
            node, name = _mean(m, key)
            values[key] = f.figure(node, "mean", unit, required, what=name)
        f.raise_any()
        ttft, itl = values["time_to_first_token_ms"], values["inter_token_latency_ms"]
        runs.append(Run(f"{src}#{k}", conc, values["prompt_token_count"], values["output_token_count"],
                        ttft / 1e3 if ttft else None, itl / 1e3 if itl else None, values["output_tokens_per_second"]))
    if not runs:
        raise InputError(src, ["GuideLLM report with no concurrent benchmarks; expected --profile concurrent runs (a fixed number of streams)"])
    return runs


def _genai_perf(d: dict, src: str) -> list[Run]:
    cfg = _node(d, "input_config")
    f = _Fields(src)
    loadgen = _node(cfg, "loadgen")
    conc = f.figure(cfg, "concurrency", "requests", what="input_config.concurrency") if "concurrency" in cfg else \
        f.figure(loadgen, "concurrency", "requests", required=True, what="input_config.loadgen.concurrency")
    values = {}
    for key, unit, required in (("input_sequence_length", "tokens", True), ("output_sequence_length", "tokens", True),
                                ("time_to_first_token", "ms", False), ("inter_token_latency", "ms", False),
                                ("output_token_throughput", "tokens/s", False)):
        values[key] = f.figure(_node(d, key), "avg", unit, required, what=f"{key}.avg")
    if conc is None and not f.problems:
        f.problems.append("input_config.concurrency: missing; expected a run with --concurrency")
    f.raise_any()
    ttft, itl = values["time_to_first_token"], values["inter_token_latency"]
    return [Run(src, conc, values["input_sequence_length"], values["output_sequence_length"], ttft / 1e3 if ttft else None,
                itl / 1e3 if itl else None, values["output_token_throughput"])]


def _result_model(d: dict) -> str | None:
    """The model a result file says it benchmarked, where it says. [text]"""
    candidates = [d.get("model_id"), d.get("model"), d.get("tokenizer_id"), _node(d, "input_config").get("model"),
                  _node(d, "input_config", "endpoint").get("model_names"), _node(d, "args").get("model"),
                  _node(d, "config").get("model")]
    benchmarks = d.get("benchmarks") if isinstance(d.get("benchmarks"), list) else []
    for b in benchmarks:
        for section in ("worker", "args", "config", "backend"):
            candidates += [_node(b, section).get("backend_model"), _node(b, section).get("model")]
    for c in candidates:
        if isinstance(c, list) and c and isinstance(c[0], str):
            c = c[0]
        if isinstance(c, str) and c.strip():
            return c.strip()
    return None


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower().rsplit("/", 1)[-1].removesuffix("-instruct"))


def same_model(a: str, b: str) -> bool:
    """Whether two model names (catalog keys, Hugging Face ids, aliases) name the same model. [bool]

    Examples
    --------
    >>> same_model("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct")
    True
    >>> same_model("llama-3.1-8b", "Qwen/Qwen3-8B")
    False
    """
    from xlplan import catalog

    try:
        return catalog.model_key(a) == catalog.model_key(b)
    except catalog.UnknownNameError:
        pass
    x, y = _normalise(a), _normalise(b)
    return bool(x and y) and (x == y or x in y or y in x)


def read_results(paths: list[str | Path], plan_model: str | None = None) -> Runs:
    """Runs from benchmark result files, each format recognised by its keys.

    Parameters
    ----------
    paths
        vLLM, GuideLLM or genai-perf result files. [path]
    plan_model
        The plan's model (a catalog name, Hugging Face id or inline name); a file for another model is a warning. [text]

    Returns
    -------
    Runs
        The runs (a list), with ``warnings`` to show. [—]

    Raises
    ------
    InputError
        A missing or unreadable file, another format, or a field the fit uses that is missing, not a number,
        not finite, zero or negative, naming the field.
    """
    runs = Runs()
    for p in map(Path, paths):
        src = str(p)
        d = structured.read_json(p, RESULT_FILE, files.RESULTS_MAX_BYTES)
        if isinstance(d, dict) and "output_throughput" in d and "mean_itl_ms" in d:
            runs += _vllm(d, src)
        elif isinstance(d, dict) and isinstance(d.get("benchmarks"), list):
            runs += _guidellm(d, src)
        elif isinstance(d, dict) and isinstance(d.get("inter_token_latency"), dict):
            runs += _genai_perf(d, src)
        else:
            keys = ", ".join(map(str, list(d)[:8])) if isinstance(d, dict) else type(d).__name__
            raise InputError(src, [f"a result file of another format (keys: {keys}); {EXPECTED}"])
        model = _result_model(d)
        if plan_model and model and not same_model(plan_model, model):
            runs.warnings.append(f"{src}: model {model!r} is not the plan's model {plan_model!r}; expected a benchmark of the "
                                 "plan's model (the fit would describe another model)")
    return runs
