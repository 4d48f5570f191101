"""xlplan's Excel functions: the engine in a cell, through xlwings.

Written once with xlwings' ``func`` and ``arg`` decorators: xlwings maps them to
classic Windows UDFs (COM), to xlwings Server (Office.js) and to xlwings Lite
(Pyodide). Each function checks its arguments and makes one call into
:mod:`xlplan.cellwise` or the planner; none has arithmetic of its own. Bad
arguments raise :class:`UDFError` with one clear line (Excel shows ``#VALUE!``
with that message); a column of inputs gives a column of answers.
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import math
import sys
import typing

from xlwings import XlwingsError, arg, func

from xlplan import cellwise, concurrency, engines
from xlplan.io.errors import InputError
from xlplan.plan import Forecast, Hardware, Policy
from xlplan.specs import ComputeDtype, KVDtype, WeightDtype

_POLICY = Policy.model_fields
_HARDWARE = Hardware.model_fields
MFU = 0.40  # the runbook's planning figure (engine 'runbook')
MEMORY_UTILISATION = _POLICY["memory_utilisation"].default
OVERHEAD_GIB = _POLICY["overhead_gib"].default
ENGINES = engines.ENGINES  # runbook, vllm, sglang, trtllm: the plan's own choices
ATTENTION_FLOPS = typing.get_args(_POLICY["attention_flops"].annotation)  # full, causal
BANDWIDTH_EFFICIENCY = 0.60  # the runbook's planning figure (engine 'runbook')
REDUNDANCY = _POLICY["redundancy"].default
GPUS_PER_NODE = _HARDWARE["gpus_per_node"].default
HOURS_PER_MONTH = _HARDWARE["hours_per_month"].default
AVERAGE_UTILISATION = Forecast.model_fields["average_utilisation"].default
ERROR_IN_A_CELL = "#VALUE!"
"""What one failing cell of a range call holds (Office.js, runtime 1.4+, turns it into Excel's #VALUE! error)."""

WEIGHT_DTYPES = typing.get_args(WeightDtype)
KV_DTYPES = typing.get_args(KVDtype)
COMPUTE_DTYPES = typing.get_args(ComputeDtype)

EXCEL_ERRORS = frozenset({"#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!", "#SPILL!", "#CALC!",
                          "#GETTING_DATA", "#FIELD!", "#BLOCKED!", "#CONNECT!", "#BUSY!", "#UNKNOWN!"})
"""Excel's error values as xlwings hands them over with ``err_to_str`` (classic and Office.js alike)."""


class UDFError(XlwingsError, ValueError):
    """A bad argument or an impossible plan, said in one line: the function, the argument, what was found and expected.

    Derived from :class:`xlwings.XlwingsError` so xlwings Server answers HTTP 400 with this message (a plain
    exception is a 500 that the client retries three times and shows as "An error occurred."), and from
    :class:`ValueError` for Python callers.
    """


def _bad(param: str, value, expected: str) -> UDFError:
    if _blank(value):
        return UDFError(f"{param}: the cell is empty; expected {expected}")
    shown = f"{value:g}" if isinstance(value, float) else repr(value)
    return UDFError(f"{param}: got {shown}; expected {expected}")


def _excel_error(value) -> str | None:
    """The Excel error a cell holds ('#DIV/0!'), whether xlwings passed it as text or as an Office.js error object."""
    if isinstance(value, dict) and value.get("type") == "Error":
        return str(value.get("basicValue") or value.get("errorType") or "#VALUE!")
    if isinstance(value, str) and value.strip().upper() in EXCEL_ERRORS:
        return value.strip().upper()
    return None


def _held_error(param: str, value) -> None:
    err = _excel_error(value)
    if err is not None:
        raise UDFError(f"{param}: the cell holds {err}; expected a value (fix the cell it comes from)")


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _num(param: str, value, unit: str, *, above=None, at_least=None, at_most=None, optional=False):
    """A number from a cell: floats and ints, numbers stored as text, date serials; bounds and finiteness checked."""
    _held_error(param, value)
    if _blank(value):
        if optional:
            return None
        raise _bad(param, value, f"a number [{unit}]")
    if isinstance(value, _dt.datetime | _dt.date):  # classic xlwings passes a date cell as a datetime; Office.js as its serial
        from xlwings.utils import datetime_to_xlserial

        value = datetime_to_xlserial(value if isinstance(value, _dt.datetime) else _dt.datetime(value.year, value.month, value.day))
    if isinstance(value, str):  # a number stored as text: Excel's own arithmetic takes it, so do we
        try:
            value = float(value.strip().replace(",", ""))
        except ValueError:
            raise _bad(param, value, f"a number [{unit}]") from None
    if isinstance(value, bool) or not isinstance(value, int | float) and type(value).__name__ not in ("float64", "int64"):
        raise _bad(param, value, f"a number [{unit}]")
    value = float(value)
    if not math.isfinite(value):
        raise _bad(param, value, f"a finite number [{unit}]")
    if above is not None and not value > above:
        raise _bad(param, value, f"a number above {above:g} [{unit}]")
    if at_least is not None and not value >= at_least:
        raise _bad(param, value, f"a number of at least {at_least:g} [{unit}]")
    if at_most is not None and not value <= at_most:
        hint = " (0.40, not 40)" if unit == "fraction" else ""
        raise _bad(param, value, f"a number of at most {at_most:g} [{unit}]{hint}")
    return value


def _whole(param: str, value, unit: str, *, at_least: int = 1) -> int:
    """A whole number from a cell; 3.0 from Excel is 3."""
    x = _num(param, value, unit, at_least=at_least)
    if not x.is_integer():
        raise _bad(param, value, f"a whole number [{unit}]")
    return int(x)


def _text(param: str, value, expected: str) -> str:
    _held_error(param, value)
    if not isinstance(value, str) or not value.strip():
        raise _bad(param, value, expected)
    return value.strip()


def _choice(param: str, value, allowed: tuple[str, ...]) -> str:
    """One of ``allowed`` words, case and spaces forgiven; blank is an error naming the choices."""
    word = _text(param, value, f"one of {', '.join(allowed)} [text]").strip().lower()
    if word not in allowed:
        raise _bad(param, value, f"one of {', '.join(allowed)} [text]")
    return word


def _dtype(param: str, value, allowed: tuple[str, ...]) -> str:
    """A precision name, checked against the allowed list (a typo lists them)."""
    text = _text(param, value, f"one of {', '.join(allowed)} [dtype]").lower()
    if text not in allowed:
        raise _bad(param, value, f"one of {', '.join(allowed)} [dtype]")
    return text


def _fraction(param: str, value, *, optional=False):
    return _num(param, value, "fraction", above=0.0, at_most=1.0, optional=optional)


def _ordered(p50: float, p95: float, p99: float | None, what: str) -> None:
    """Percentiles must rise: p50 <= p95 <= p99."""
    if p95 < p50:
        raise UDFError(f"{what}_p95: got {p95:g}, below {what}_p50 {p50:g}; expected p50 <= p95 <= p99")
    if p99 is not None and p99 < p95:
        raise UDFError(f"{what}_p99: got {p99:g}, below {what}_p95 {p95:g}; expected p50 <= p95 <= p99")


def _finite(value):
    """An answer fit for a cell: never inf or NaN (Excel would show #NUM! with no reason)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UDFError(f"the answer is {value} (the inputs overflow a floating-point number); expected smaller inputs")
    return value


# ---------------------------------------------------------------------------------------------- shapes


def _grid(value) -> list[list]:
    """Any argument as a 2-D list: a scalar is 1×1; a flat list (a plain Python caller's column) is n×1."""
    if isinstance(value, list | tuple):
        if value and all(isinstance(r, list | tuple) for r in value):
            return [list(r) for r in value]
        return [[v] for v in value]
    return [[value]]


def _scalar_or_grid(value):
    """A 1×1 range is its one value (a blank one is 'not given'); a larger range stays a 2-D list."""
    if isinstance(value, list | tuple):
        g = _grid(value)
        if len(g) == 1 and len(g[0]) == 1:
            v = g[0][0]
            return None if _blank(v) else v
        return g
    return value


def _table_rows(param: str, value, is_key) -> list[list]:
    """A key/value table as (key, value) rows, from a range in either orientation, with or without a header row.

    ``is_key`` tells a real key from a header or a value; the orientation whose first line holds more keys wins.
    """
    g = _grid(value)
    for r, row in enumerate(g, start=1):
        for c, cell in enumerate(row, start=1):
            err = _excel_error(cell)
            if err is not None:
                raise UDFError(f"{param}: row {r}, column {c} holds {err}; expected a key or a value")
    width = max((len(r) for r in g), default=0)
    if width < 2 and len(g) < 2:
        raise _bad(param, value, "a two-column range of keys and values")
    first_col = [r[0] for r in g]
    first_row = g[0]
    by_rows = sum(1 for v in first_col if is_key(v))
    by_cols = sum(1 for v in first_row if is_key(v))
    if width == 2 and by_rows >= by_cols:
        rows = g
    elif len(g) == 2 and by_cols > 0:
        rows = [list(p) for p in zip(*g)]
    elif width >= 2:
        rows = g
    else:
        raise _bad(param, value, "a two-column range of keys and values (or two rows: keys above, values below)")
    if rows and not is_key(rows[0][0]) and isinstance(rows[0][0], str) and (len(rows[0]) < 2 or isinstance(rows[0][1], str) or rows[0][1] is None):
        rows = rows[1:]  # a header row such as "Key | Value"
    return [[r[0], r[1] if len(r) > 1 else None] for r in rows if not _blank(r[0])]


def _com_error(message: str) -> Exception:
    """Classic xlwings on Windows writes a COM exception's description into the cell; any other exception arrives
    as "Unexpected Python Error: Traceback ...". So there, raise pywin32's COMException carrying our one line."""
    try:
        from win32com.server.exception import COMException
    except ImportError:
        return UDFError(message)
    return COMException(description=message)


def _classic() -> bool:
    import os

    return sys.platform.startswith("win") and os.environ.get("XLWINGS_ON_SERVER", "").lower() not in ("true", "1", "yes")


def udf(tables: tuple[str, ...] = (), rows3: bool = False, **docs: str):
    """Register an Excel function: every parameter documented (with its unit), errors made one clear line.

    ``tables`` names parameters that take a whole range (a plan table, a config); any other parameter given a
    range — a row, a column or a block — makes the function answer cell by cell in the same shape (a bad cell
    gets #VALUE! alone). ``rows3`` marks a function whose one answer is three numbers (FLEET): they spill down for
    a single input, and across, a row per input, for a range.

    Every argument reaches Python as a 2-D list (``ndim=2``) with Excel errors as text (``err_to_str``), so a row
    stays a row and #DIV/0! is named rather than read as a blank.
    """

    def wrap(f):
        sig = inspect.signature(f)
        params = list(sig.parameters)
        if set(params) != set(docs):
            raise TypeError(f"{f.__name__}: document exactly its parameters {params}, got {sorted(docs)}")
        defaults = [p.default for p in sig.parameters.values()]
        table_idx = {params.index(t) for t in tables}
        name = f.__name__.upper()

        def checked(*args):
            try:
                return _finite(f(*args))
            except UDFError as e:
                message = str(e)
                raise UDFError(message if message.startswith(name) else f"{name}: {message}") from None
            except InputError as e:
                raise UDFError(f"{name}: {'; '.join(e.problems)}") from None
            except (ValueError, LookupError, ArithmeticError) as e:
                raise UDFError(f"{name}: {e}") from None
            except Exception as e:  # never a traceback in a cell
                raise UDFError(f"{name}: internal error ({type(e).__name__}: {e})") from None

        @functools.wraps(f)
        def guarded(*args):
            args = list(args) + [inspect.Parameter.empty] * (len(params) - len(args))
            call = []
            for i, a in enumerate(args):
                if a is inspect.Parameter.empty:
                    call.append(defaults[i])
                elif i in table_idx:
                    call.append(a)
                else:
                    v = _scalar_or_grid(a)
                    call.append(defaults[i] if v is None and defaults[i] is not inspect.Parameter.empty else v)
            try:
                return _spread(checked, call, table_idx, rows3)
            except UDFError as e:
                if _classic():
                    raise _com_error(str(e)) from None
                raise

        g = guarded
        for p in params:
            g = arg(p, ndim=2, err_to_str=True, doc=docs[p])(g)
        return func(g)

    return wrap


def _spread(f, args: list, table_idx: set[int], rows3: bool):
    """Call ``f`` once, or once per cell when some argument is a range (all ranges the same shape)."""
    ranged = [i for i, a in enumerate(args) if isinstance(a, list) and i not in table_idx]
    if not ranged:
        return f(*args)
    shape = (len(args[ranged[0]]), len(args[ranged[0]][0]))
    for i in ranged:
        if (len(args[i]), max(len(r) for r in args[i])) != shape or any(len(r) != shape[1] for r in args[i]):
            raise UDFError(f"ranges of different shapes ({shape[0]}x{shape[1]} and {len(args[i])}x{len(args[i][0])}); "
                           "expected every range argument to have the same rows and columns")
    out = []
    for r in range(shape[0]):
        cells = []
        for c in range(shape[1]):
            call = [args[i][r][c] if i in ranged else a for i, a in enumerate(args)]
            try:
                cells.append(f(*call))
            except UDFError:
                cells.append([ERROR_IN_A_CELL] * 3 if rows3 else ERROR_IN_A_CELL)
        out.append(cells)
    if rows3:  # a row per input, the three numbers across (FLEET's one answer spills down as [[a], [b], [c]])
        return [[v[0] if isinstance(v, list) else v for v in cell] for row in out for cell in row]
    return out


def _name_or_num(param: str, value, unit: str, expected_name: str):
    """A catalog name, or a number standing for the figure it would give (e.g. a GPU or its memory in GiB)."""
    _held_error(param, value)
    if isinstance(value, str):
        try:
            float(value.strip().replace(",", ""))
        except ValueError:
            return _text(param, value, expected_name)
    return _num(param, value, unit, above=0.0)


# ---------------------------------------------------------------------------------------------- step 3


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]", time_in_system_s="Mean time a request occupies a slot. [s]")
def littles_law(arrival_rate_rps, time_in_system_s):
    """Requests in flight by Little's Law: arrival rate × time in system (40 req/s × 15 s = 600). [requests]"""
    return concurrency.littles_law(_num("arrival_rate_rps", arrival_rate_rps, "requests/s", at_least=0.0),
                                   _num("time_in_system_s", time_in_system_s, "s", at_least=0.0))


@udf(output_p50="Median output length. [tokens]", output_p95="95th-percentile output length. [tokens]",
     itl_s="Inter-token latency target. [s/token]", output_p99="99th-percentile output length; may be blank. [tokens]",
     ttft_s="Time to first token to add; 0 as the runbook does. [s]")
def time_in_system(output_p50, output_p95, itl_s, output_p99=None, ttft_s=0.0):
    """Mean time in system: the fitted mean output × the inter-token target (+ TTFT) (300 × 0.05 = 15 s). [s]"""
    p50, p95 = _num("output_p50", output_p50, "tokens", above=0.0), _num("output_p95", output_p95, "tokens", above=0.0)
    p99 = _num("output_p99", output_p99, "tokens", above=0.0, optional=True)
    _ordered(p50, p95, p99, "output")
    return cellwise.time_in_system_s(p50, p95, _num("itl_s", itl_s, "s/token", above=0.0, at_most=2.0), p99, _num("ttft_s", ttft_s, "s", at_least=0.0))


# ---------------------------------------------------------------------------------------------- model


@udf(model="Catalog model name, Hugging Face id or alias, e.g. llama-3.1-8b. [text]",
     kv_dtype="KV-cache precision: bf16, fp16, fp8 or int8. [dtype]")
def kv_bytes_per_token(model, kv_dtype="bf16"):
    """KV cache per token with every layer full-length (Llama-3.1-8B bf16: 131,072 B). [bytes/token]"""
    return cellwise.kv_bytes_per_token(_text("model", model, "a model name [text]"), _dtype("kv_dtype", kv_dtype, KV_DTYPES))


@udf(model="Catalog model name, Hugging Face id or alias. [text]",
     conversation_tokens="Prompt plus output tokens the cache is sized at (p50 + p50 in the runbook). [tokens]",
     kv_dtype="KV-cache precision: bf16, fp16, fp8 or int8. [dtype]")
def kv_gib_per_conversation(model, conversation_tokens, kv_dtype="bf16"):
    """KV cache one conversation holds; sliding-window layers hold at most their window (2,300 tokens: 0.281 GiB). [GiB]"""
    return cellwise.kv_gib_per_conversation(_text("model", model, "a model name [text]"),
                                            _num("conversation_tokens", conversation_tokens, "tokens", at_least=0.0),
                                            _dtype("kv_dtype", kv_dtype, KV_DTYPES))


@udf(model="Catalog model name, Hugging Face id or alias. [text]",
     weights_dtype="Weight precision: bf16, fp16, fp8, int8, int4, mxfp4, nvfp4. [dtype]")
def weights_gib(model, weights_dtype="bf16"):
    """Weight footprint of the whole model; embeddings stay 16-bit in quantised checkpoints (Llama-3.1-8B bf16: 14.96 GiB). [GiB]"""
    return cellwise.weights_gib(_text("model", model, "a model name [text]"), _dtype("weights_dtype", weights_dtype, WEIGHT_DTYPES))


@udf(tables=("config",), config="A model name, or a two-column range of config.json fields and values (e.g. hidden_size | 4096). [text]",
     which="'total' (in memory) or 'active' (per token, MoE). [text]")
def params_from_config(config, which="total"):
    """Parameters derived from the config: counted layer by layer (Llama-3.1-8B: 8,030,261,248). [parameters]"""
    which = _text("which", which, "'total' or 'active' [text]").lower()
    if which not in ("total", "active"):
        raise _bad("which", which, "'total' or 'active' [text]")
    if isinstance(_scalar_or_grid(config), list):
        from xlplan.io.hf_config import spec_from_hf_config

        rows = _table_rows("config", config, _is_config_key)
        fields = {str(r[0]).strip(): r[1] for r in rows}
        for k, v in fields.items():
            if isinstance(v, float) and v.is_integer():
                fields[k] = int(v)
        return float(cellwise.params(spec_from_hf_config(fields, "config range"), which))
    return float(cellwise.params(_text("config", _scalar_or_grid(config), "a model name or a two-column range [text]"), which))


def _is_config_key(v) -> bool:
    """A config.json field name (hidden_size, num_hidden_layers...), not a header or a value."""
    from xlplan.io.hf_config import KNOWN_FIELDS

    return isinstance(v, str) and v.strip() in KNOWN_FIELDS


# ---------------------------------------------------------------------------------------------- step 4


@udf(gpu="Catalog GPU name (e.g. h100-sxm) or its memory as the driver reports it. [GiB]",
     weights_gib_per_gpu="This GPU's share of the weights. [GiB]",
     memory_utilisation="Fraction of memory the server may use (vLLM gpu_memory_utilization; 0.90, not 90). [fraction]",
     overhead_gib="The runbook's overhead per GPU, its rule only. [GiB]",
     engine="Whose memory rule: runbook, vllm, sglang or trtllm (the plan's policy.engine). [text]",
     activation_gib="The engine's activation peak or workspace, vLLM and TensorRT-LLM only. [GiB]",
     tp="GPUs per replica; non-torch memory grows past one. [GPUs]",
     visible_gib="Memory CUDA can allocate; blank: the catalog's, or the driver's total less its reserve. [GiB]")
def kv_budget_gib(gpu, weights_gib_per_gpu, memory_utilisation=MEMORY_UTILISATION, overhead_gib=OVERHEAD_GIB, engine="runbook",
                  activation_gib=0.0, tp=1, visible_gib=None):
    """KV room per GPU by the engine's memory rule (runbook: 0.9 × 79.65 − 14.96 − 3.0 = 53.73). [GiB]"""
    g = _name_or_num("gpu", gpu, "GiB", "a GPU name or its memory [GiB]")
    weights, util = _num("weights_gib_per_gpu", weights_gib_per_gpu, "GiB", at_least=0.0), _fraction("memory_utilisation", memory_utilisation)
    overhead = _num("overhead_gib", overhead_gib, "GiB", at_least=0.0)
    rule = _choice("engine", engine, ENGINES)
    activation = _num("activation_gib", activation_gib, "GiB", at_least=0.0)
    visible = _num("visible_gib", visible_gib, "GiB", above=0.0, optional=True)
    budget = cellwise.kv_budget_gib(g, weights, util, overhead, rule, activation, _whole("tp", tp, "GPUs"), visible)
    if budget <= 0:
        raise _no_room(weights, overhead, budget)
    return budget


@udf(concurrency="Requests in flight. [requests]", kv_gib_per_conversation="KV cache per conversation. [GiB]",
     kv_budget_gib="KV room per GPU. [GiB]", tp="GPUs per replica (tensor-parallel degree). [GPUs]",
     kv_shards="Ways the cache splits across the replica: min(TP, KV heads); 1 for MLA. [GPUs]")
def memory_gpus(concurrency, kv_gib_per_conversation, kv_budget_gib, tp=1, kv_shards=1):
    """The memory path in whole replicas: concurrency × KV per conversation ÷ budget (600 × 0.281 ÷ 53.73 = 3.14 → 4). [GPUs]"""
    budget = _num("kv_budget_gib", kv_budget_gib, "GiB")
    if budget <= 0:
        raise _bad("kv_budget_gib", kv_budget_gib, "a positive budget [GiB]: the weights leave no room for the cache")
    return cellwise.memory_gpus(_num("concurrency", concurrency, "requests", at_least=0.0),
                                _num("kv_gib_per_conversation", kv_gib_per_conversation, "GiB", above=0.0), budget,
                                _whole("tp", tp, "GPUs"), _whole("kv_shards", kv_shards, "GPUs"))


def _no_room(weights_gib: float, overhead_gib: float, budget_gib: float) -> UDFError:
    return UDFError(f"weights_gib_per_gpu + overhead_gib: {weights_gib:g} + {overhead_gib:g} GiB leave {budget_gib:.2f} GiB for the "
                    "KV cache: the weights do not fit; expected a positive budget (a larger GPU, more GPUs per replica, "
                    "or quantised weights)")


# ---------------------------------------------------------------------------------------------- step 5


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]", model="Catalog model name. [text]",
     prompt_p50="Median prompt length. [tokens]", prompt_p95="95th-percentile prompt length. [tokens]",
     prompt_p99="99th-percentile prompt length; may be blank. [tokens]",
     prefix_reuse="Measured fraction of prompt compute served from the prefix cache; 0 unless measured. [fraction]",
     attention_flops="full (every query-key pair, the runbook's) or causal (half the square, the engine's default). [text]")
def prefill_tflops(arrival_rate_rps, model, prompt_p50, prompt_p95, prompt_p99=None, prefix_reuse=0.0, attention_flops="full"):
    """Prefill demand at peak over the fitted prompt distribution: rate × (2·N·E[n] + 4·layers·K·width) (runbook: 1,369). [TFLOP/s]"""
    p50, p95 = _num("prompt_p50", prompt_p50, "tokens", above=0.0), _num("prompt_p95", prompt_p95, "tokens", above=0.0)
    p99 = _num("prompt_p99", prompt_p99, "tokens", above=0.0, optional=True)
    _ordered(p50, p95, p99, "prompt")
    return cellwise.prefill_tflops(_num("arrival_rate_rps", arrival_rate_rps, "requests/s", at_least=0.0),
                                   _text("model", model, "a model name [text]"), p50, p95, p99,
                                   _num("prefix_reuse", prefix_reuse, "fraction", at_least=0.0, at_most=1.0),
                                   _choice("attention_flops", attention_flops, ATTENTION_FLOPS))


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]", model="Catalog model name. [text]",
     output_p50="Median output length. [tokens]", output_p95="95th-percentile output length. [tokens]",
     output_p99="99th-percentile output length; may be blank. [tokens]")
def decode_tflops(arrival_rate_rps, model, output_p50, output_p95, output_p99=None):
    """Decode demand at peak: rate × E[output] × 2·N_active (runbook: 40 × 300 × 2 × 8.03e9 = 193). [TFLOP/s]"""
    p50, p95 = _num("output_p50", output_p50, "tokens", above=0.0), _num("output_p95", output_p95, "tokens", above=0.0)
    p99 = _num("output_p99", output_p99, "tokens", above=0.0, optional=True)
    _ordered(p50, p95, p99, "output")
    return cellwise.decode_tflops(_num("arrival_rate_rps", arrival_rate_rps, "requests/s", at_least=0.0),
                                  _text("model", model, "a model name [text]"), p50, p95, p99)


@udf(demand_tflops="Prefill plus decode demand at peak. [TFLOP/s]",
     gpu="Catalog GPU name, or its dense peak. [TFLOP/s]", mfu="Achieved fraction of peak (0.40, not 40). [fraction]",
     tp="GPUs per replica. [GPUs]", compute_dtype="Tensor-core dtype of the peak for a named GPU: bf16, fp8, fp4. [dtype]")
def compute_gpus(demand_tflops, gpu, mfu=MFU, tp=1, compute_dtype="bf16"):
    """The compute path in whole replicas: demand ÷ (peak × MFU) (1,562 ÷ 395.6 = 3.95 → 4). [GPUs]"""
    g = _name_or_num("gpu", gpu, "TFLOP/s", "a GPU name or its dense peak [TFLOP/s]")
    return cellwise.compute_gpus(_num("demand_tflops", demand_tflops, "TFLOP/s", at_least=0.0), g, _fraction("mfu", mfu),
                                 _whole("tp", tp, "GPUs"), _dtype("compute_dtype", compute_dtype, COMPUTE_DTYPES))


# ---------------------------------------------------------------------------------------------- latency


@udf(model="Catalog model name. [text]", gpu="Catalog GPU name. [text]", itl_s="Inter-token latency target. [s/token]",
     context_tokens="Mean cached context of each decoding sequence: its prompt plus half its output. [tokens]",
     tp="GPUs per replica. [GPUs]", weights_dtype="Weight precision. [dtype]", kv_dtype="KV-cache precision. [dtype]",
     mfu="Achieved fraction of peak FLOP/s (0.40, not 40). [fraction]",
     bandwidth_efficiency="Achieved fraction of HBM bandwidth (0.60, not 60). [fraction]",
     compute_dtype="Tensor-core dtype of the peak: bf16, fp8, fp4. [dtype]",
     prefill_tokens_per_output="Prompt tokens prefilled per decoded token in the same steps (chunked prefill): E[prompt] ÷ E[output]; 0 for decode alone. [tokens/token]",
     step_overhead_s="Fixed time per engine step (scheduling, launches, sampling). [s]")
def max_decode_batch(model, gpu, itl_s, context_tokens, tp=1, weights_dtype="bf16", kv_dtype="bf16", mfu=MFU,
                     bandwidth_efficiency=BANDWIDTH_EFFICIENCY, compute_dtype="bf16", prefill_tokens_per_output=0.0,
                     step_overhead_s=0.0):
    """Largest batch one replica carries within the inter-token target: the serving model's step solved for the batch. [sequences]"""
    return cellwise.max_decode_batch(
        _text("model", model, "a model name [text]"), _text("gpu", gpu, "a GPU name [text]"), _num("itl_s", itl_s, "s/token", above=0.0, at_most=2.0),
        _num("context_tokens", context_tokens, "tokens", at_least=0.0), _whole("tp", tp, "GPUs"),
        _dtype("weights_dtype", weights_dtype, WEIGHT_DTYPES), _dtype("kv_dtype", kv_dtype, KV_DTYPES),
        _fraction("mfu", mfu), _fraction("bandwidth_efficiency", bandwidth_efficiency),
        _dtype("compute_dtype", compute_dtype, COMPUTE_DTYPES),
        _num("prefill_tokens_per_output", prefill_tokens_per_output, "tokens/token", at_least=0.0),
        _num("step_overhead_s", step_overhead_s, "s", at_least=0.0, at_most=1.0))


@udf(concurrency="Requests in flight. [requests]", max_decode_batch="Largest batch per replica within the target. [conversations]",
     tp="GPUs per replica. [GPUs]")
def latency_gpus(concurrency, max_decode_batch, tp=1):
    """The latency path in whole replicas: concurrency ÷ the batch a replica can carry at the inter-token target. [GPUs]"""
    batch = _num("max_decode_batch", max_decode_batch, "conversations", at_least=0.0)
    if batch <= 0:
        raise _bad("max_decode_batch", max_decode_batch, "a positive batch [conversations]: no batch meets the target")
    return cellwise.latency_gpus(_num("concurrency", concurrency, "requests", at_least=0.0), batch, _whole("tp", tp, "GPUs"))


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]",
     service_rps_per_replica="Requests one replica serves per second at the promise (3 Constraints: QueueServiceRPS). [requests/s]",
     wait_target_s="Longest wait for a slot: the TTFT target less the prompt's prefill. [s]",
     percentile="The promise's percentile (95, not 0.95). [percent]",
     tail_replicas="Replicas the long-prefill-step limit needs; 0 where it never binds. [replicas]",
     arrival_cv2="Squared coefficient of variation of the gaps between arrivals: 1 Poisson, above 1 bursty. [1]")
def queueing_replicas(arrival_rate_rps, service_rps_per_replica, wait_target_s, percentile=95.0, tail_replicas=0, arrival_cv2=1.0):
    """The queueing path: the fewest replicas whose p95 wait for a slot fits the target, by Erlang C (the reference: 6). [replicas]"""
    wait = _num("wait_target_s", wait_target_s, "s")
    if wait < 0:
        raise _bad("wait_target_s", wait_target_s, "a wait of 0 s or more: the prompt's prefill alone misses the TTFT target")
    return _finite(cellwise.queueing_replicas(
        _num("arrival_rate_rps", arrival_rate_rps, "requests/s", above=0.0),
        _num("service_rps_per_replica", service_rps_per_replica, "requests/s", above=0.0), wait,
        _num("percentile", percentile, "percent", above=0.0, at_most=99.99),
        _whole("tail_replicas", tail_replicas, "replicas", at_least=0),
        _num("arrival_cv2", arrival_cv2, "1", above=0.0, at_most=100.0)))


# ---------------------------------------------------------------------------------------------- step 6


@udf(memory_gpus="The memory path. [GPUs]", compute_gpus="The compute path. [GPUs]",
     latency_gpus="The latency path; 0 to compare memory and compute only. [GPUs]")
def binding_constraint(memory_gpus, compute_gpus, latency_gpus=0.0):
    """Which path binds: memory, compute, latency; 'both' or 'all' when whole GPU counts tie. [text]"""
    return cellwise.binding(_num("memory_gpus", memory_gpus, "GPUs", at_least=0.0),
                            _num("compute_gpus", compute_gpus, "GPUs", at_least=0.0),
                            _num("latency_gpus", latency_gpus, "GPUs", at_least=0.0))


@udf(rows3=True, memory_gpus="The memory path. [GPUs]", compute_gpus="The compute path. [GPUs]", latency_gpus="The latency path. [GPUs]",
     tp="GPUs per replica. [GPUs]", redundancy="Spare replicas (N+k). [replicas]",
     gpus_per_node="The purchasing unit. [GPUs]")
def fleet(memory_gpus, compute_gpus, latency_gpus=0.0, tp=1, redundancy=REDUNDANCY, gpus_per_node=GPUS_PER_NODE):
    """The three numbers, spilled down: load, with redundancy, purchased (the runbook: 4, 5, 8); for a range of inputs, a row each with the three across. [GPUs]"""
    load, with_redundancy, purchased = cellwise.fleet_sizes(
        _num("memory_gpus", memory_gpus, "GPUs", at_least=0.0), _num("compute_gpus", compute_gpus, "GPUs", at_least=0.0),
        _num("latency_gpus", latency_gpus, "GPUs", at_least=0.0), _whole("tp", tp, "GPUs"),
        _whole("redundancy", redundancy, "replicas", at_least=0), _whole("gpus_per_node", gpus_per_node, "GPUs"))
    return [[load], [with_redundancy], [purchased]]


# ---------------------------------------------------------------------------------------------- step 7


@udf(gpus="GPUs on the bill. [GPUs]", usd_per_gpu_hour="Price paid. [USD/GPU-hour]",
     hours_per_month="Billed hours per month (8,760 / 12 = 730). [h/month]")
def monthly_cost(gpus, usd_per_gpu_hour, hours_per_month=HOURS_PER_MONTH):
    """Monthly infrastructure cost: GPUs × price × hours (5 × $3 × 730 = $10,950). [USD/month]"""
    return cellwise.monthly_cost_usd(_num("gpus", gpus, "GPUs", at_least=0.0),
                                     _num("usd_per_gpu_hour", usd_per_gpu_hour, "USD/GPU-hour", at_least=0.0),
                                     _num("hours_per_month", hours_per_month, "h/month", above=0.0, at_most=744.0))


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]", prompt_p50="Median prompt length. [tokens]",
     prompt_p95="95th-percentile prompt length. [tokens]", output_p50="Median output length. [tokens]",
     output_p95="95th-percentile output length. [tokens]",
     average_utilisation="Average load over the month as a fraction of peak (0.40, not 40). [fraction]",
     prompt_p99="99th-percentile prompt length; may be blank. [tokens]",
     output_p99="99th-percentile output length; may be blank. [tokens]",
     hours_per_month="Hours in the month. [h/month]")
def tokens_per_month(arrival_rate_rps, prompt_p50, prompt_p95, output_p50, output_p95, average_utilisation=AVERAGE_UTILISATION,
                     prompt_p99=None, output_p99=None, hours_per_month=HOURS_PER_MONTH):
    """Tokens served in a month at the average utilisation (40 × 2,300 × 0.40 × 730 h = 96.7 billion). [tokens/month]"""
    prompt, output = _lengths(prompt_p50, prompt_p95, prompt_p99, output_p50, output_p95, output_p99)
    return cellwise.tokens_per_month(
        _num("arrival_rate_rps", arrival_rate_rps, "requests/s", at_least=0.0), prompt[0], prompt[1], output[0], output[1],
        _fraction("average_utilisation", average_utilisation), prompt[2], output[2],
        _num("hours_per_month", hours_per_month, "h/month", above=0.0, at_most=744.0))


def _lengths(prompt_p50, prompt_p95, prompt_p99, output_p50, output_p95, output_p99):
    """Prompt and output percentiles read and checked in order: ((p50, p95, p99), (p50, p95, p99)). [tokens]"""
    out = []
    for what, p50, p95, p99 in (("prompt", prompt_p50, prompt_p95, prompt_p99), ("output", output_p50, output_p95, output_p99)):
        trio = (_num(f"{what}_p50", p50, "tokens", above=0.0), _num(f"{what}_p95", p95, "tokens", above=0.0),
                _num(f"{what}_p99", p99, "tokens", above=0.0, optional=True))
        _ordered(*trio, what)
        out.append(trio)
    return out


@udf(monthly_usd="Monthly cost. [USD/month]", tokens_per_month="Tokens served in the month. [tokens/month]")
def cost_per_mtok(monthly_usd, tokens_per_month):
    """Cost per million tokens of all kinds ($10,950 ÷ 96.7 B = $0.113). [USD/Mtok]"""
    tokens = _num("tokens_per_month", tokens_per_month, "tokens/month", above=0.0)
    return cellwise.usd_per_mtok(_num("monthly_usd", monthly_usd, "USD/month", at_least=0.0), tokens)


@udf(tokens_per_month="Tokens served in the month. [tokens/month]", usd_per_mtok_input="API price of input tokens. [USD/Mtok]",
     usd_per_mtok_output="API price of output tokens. [USD/Mtok]", prompt_p50="Median prompt length. [tokens]",
     prompt_p95="95th-percentile prompt length. [tokens]", output_p50="Median output length. [tokens]",
     output_p95="95th-percentile output length. [tokens]", prompt_p99="99th-percentile prompt length; may be blank. [tokens]",
     output_p99="99th-percentile output length; may be blank. [tokens]")
def api_monthly_cost(tokens_per_month, usd_per_mtok_input, usd_per_mtok_output, prompt_p50, prompt_p95, output_p50, output_p95,
                     prompt_p99=None, output_p99=None):
    """The same traffic on a managed API at separate input and output prices (runbook: ~$30k/month). [USD/month]"""
    prompt, output = _lengths(prompt_p50, prompt_p95, prompt_p99, output_p50, output_p95, output_p99)
    return cellwise.api_monthly_cost_usd(
        _num("tokens_per_month", tokens_per_month, "tokens/month", at_least=0.0),
        _num("usd_per_mtok_input", usd_per_mtok_input, "USD/Mtok", at_least=0.0),
        _num("usd_per_mtok_output", usd_per_mtok_output, "USD/Mtok", at_least=0.0),
        prompt[0], prompt[1], output[0], output[1], prompt[2], output[2])


@udf(monthly_usd="Monthly cost of the fleet. [USD/month]", api_usd_per_mtok="The API's price at this input/output mix. [USD/Mtok]",
     ops_usd_per_month="Engineering and on-call cost of self-hosting. [USD/month]")
def breakeven_tokens(monthly_usd, api_usd_per_mtok, ops_usd_per_month=0.0):
    """Monthly volume above which this fleet is cheaper than the API: (fleet + ops) ÷ API price. [tokens/month]"""
    price = _num("api_usd_per_mtok", api_usd_per_mtok, "USD/Mtok", above=0.0)
    return cellwise.breakeven_tokens_per_month(_num("monthly_usd", monthly_usd, "USD/month", at_least=0.0), price,
                                               _num("ops_usd_per_month", ops_usd_per_month, "USD/month", at_least=0.0))


# ---------------------------------------------------------------------------------------------- whole plans


def _plan(plan_table):
    from xlplan.io.planfile import plan_from_pairs

    one = _scalar_or_grid(plan_table)
    if _blank(one):
        return plan_from_pairs([])
    if not isinstance(one, list):
        _held_error("plan_table", one)
        raise _bad("plan_table", one, "a two-column range of plan keys and values, e.g. forecast.peak_rps | 40")
    return plan_from_pairs(_table_rows("plan_table", plan_table, _is_plan_key), source="plan_table")


def _is_plan_key(v) -> bool:
    """A dotted plan key such as forecast.peak_rps (not a header such as 'Key')."""
    from xlplan.plan import Plan

    if not isinstance(v, str) or "." not in v:
        return False
    return v.strip().split(".", 1)[0] in Plan.model_fields


PLAN_TABLE_DOC = ("Two-column range: plan keys (forecast.peak_rps, model.name, hardware.gpu, ...) and values; "
                  "keys left out take the reference plan's. [text]")


@udf(tables=("plan_table",), gpus="GPUs serving the load, spares excluded. [GPUs]", plan_table=PLAN_TABLE_DOC)
def max_rate(gpus, plan_table=None):
    """The closed form's capacity of a fleet, queueing included: the highest peak rate whose closed-form load it holds. [requests/s]"""
    return cellwise.max_rate_rps(_plan(plan_table), _whole("gpus", gpus, "GPUs"))


@udf(tables=("plan_table",), plan_table=PLAN_TABLE_DOC)
def capacity_note(plan_table=None):
    """The whole capacity note as a two-column table, spilled: section, figure and value. [text]"""
    from xlplan.note import note_sections
    from xlplan.planner import plan

    rows = []
    for title, figures, sentences in note_sections(plan(_plan(plan_table))):
        rows.append([title, ""])
        rows.extend([label, value] for label, value in figures)
        rows.extend(["", s] for s in sentences)
    return rows


@udf(tables=("plan_table",), plan_table=PLAN_TABLE_DOC)
def sensitivities(plan_table=None):
    """The what-if table, spilled: each change re-planned in full, with load, fleet, purchase, binding and cost. [table]"""
    from xlplan.planner import plan

    result = plan(_plan(plan_table))
    header = ["What-if", "Load GPUs", "Fleet GPUs", "Purchased GPUs", "Binding", "Monthly USD", "$/M tokens"]
    rows = [[s.change, s.load, s.fleet, s.purchased, s.binding, s.monthly_usd, s.usd_per_mtok] if s.feasible
            else [s.change, "infeasible", "", "", "", "", s.note] for s in result.sensitivities]
    return [header, *rows]


# ---------------------------------------------------------------------------------------------- catalog


@udf(name="Catalog GPU name or alias, e.g. h100-sxm. [text]", field="A GPUSpec field, e.g. memory_gib, bf16_tflops, hbm_tbps. [text]")
def gpu_spec(name, field):
    """One figure of a catalog GPU; an unknown name suggests the closest ones. [field's unit]"""
    value = cellwise.gpu_field(_text("name", name, "a GPU name [text]"), _text("field", field, "a field name [text]"))
    return "" if value is None else value


@udf(name="Catalog model name, Hugging Face id or alias. [text]",
     field="A config field (num_hidden_layers, hidden_size, ...) or total_params / active_params. [text]")
def model_spec(name, field):
    """One figure of a catalog model; an unknown name suggests the closest ones. [field's unit]"""
    value = cellwise.model_field(_text("name", name, "a model name [text]"), _text("field", field, "a field name [text]"))
    return "" if value is None else value


def public_udfs() -> dict:
    """Every Excel function in this module, by Python name."""
    return {n: f for n, f in globals().items() if callable(f) and hasattr(f, "__wrapped__") and getattr(f, "__module__", "") == __name__}


__all__ = [*sorted(public_udfs()), "UDFError", "public_udfs"]  # noqa: PLE0604 - every function, for Lite's `import *`
