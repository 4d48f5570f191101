"""Outside names read the way a person reads them: models, GPUs, precisions, engines and parallelism.

Published results name things loosely — ``nvidia/Llama-3.3-70B-Instruct-FP4``, ``NVIDIA 8x H200``,
``AMD Instinct MI300X (192GB)``, ``mxfp4 MoE + bf16``, ``TP8 EP8 + DP attention``. They are mapped to
xlplan's catalog keys and dtypes here, at the edge, and nowhere else. A name that still cannot be
read returns ``None`` with the reason, never a guess.
"""

from __future__ import annotations

import re
from functools import cache

from xlplan import catalog

_SUFFIXES = ("instruct", "chat", "it", "base", "hf", "fp8", "fp8-dynamic", "fp8-kv", "fp4", "nvfp4", "mxfp4", "awq", "gptq",
             "int4", "int8", "w4a16", "w8a8", "gguf", "dynamic", "bf16", "fp16", "v0.1", "v0.2", "v0.3", "2507", "0528", "2506",
             "2407", "2411", "2501", "latest", "original")


def _norm(text: str) -> str:
    t = re.sub(r"\([^)]*\)", " ", text.lower())  # parenthetical notes ("(table heading; ...)", "(192GB)")
    t = t.replace("_", "-").replace(" ", "-")
    t = re.sub(r"(^|[-/])llama(\d)", r"\1llama-\2", t)  # MLPerf's benchmark names: llama2-70b, llama3.1-405b
    return re.sub(r"-+", "-", t).strip("-")


@cache
def _aliases(kind: str) -> list[tuple[str, str]]:
    """(normalised alias, catalog key), longest first: the longest catalog name inside a text wins."""
    from importlib import resources

    import yaml

    rows = yaml.safe_load(resources.files("xlplan.catalog").joinpath(f"{kind}.yaml").read_text(encoding="utf-8"))
    out = []
    for key, row in rows.items():
        names = [key, row.get("name", ""), row.get("hf_id", ""), *(row.get("aliases") or [])]
        for n in names:
            if n:
                full = _norm(str(n))
                out.append((full, key))
                if "/" in full:
                    out.append((full.split("/", 1)[1], key))
    return sorted(set(out), key=lambda p: -len(p[0]))


def model_key(text: str) -> str | None:
    """The catalog key of a model named as a person would name it, or None.

    Examples
    --------
    >>> model_key("nvidia/Llama-3.3-70B-Instruct-FP4"), model_key("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8")
    ('llama-3.1-70b', 'qwen3-235b-a22b')
    >>> model_key("Hermes-3-Llama-3.1-405B-FP8"), model_key("acme/Unknown-13B") is None
    ('llama-3.1-405b', True)
    """
    found = catalog.find_key("model", text)
    if found is not None:
        return found
    t = _norm(text)
    bare = t.split("/", 1)[1] if "/" in t else t
    for candidate in (t, bare):
        parts = candidate.split("-")
        while parts:
            found = catalog.find_key("model", "-".join(parts))
            if found is not None:
                return found
            if parts[-1] in _SUFFIXES:
                parts = parts[:-1]
                continue
            break
    for alias, key in _aliases("models"):
        if len(alias) >= 6 and re.search(rf"(^|[-/.]){re.escape(alias)}($|[-/.])", t):
            return key
    return None


_GPU_NOISE = re.compile(r"\b(nvidia|amd|intel|geforce|instinct|habana|dgx|hgx|\d+\s*x)\b|\b\d+x\b|\b\d+\s*x(?=[a-z])")


def gpu_key(text: str) -> tuple[str | None, str]:
    """(catalog key, '') for a GPU named as a person would name it, or (None, why).

    Examples
    --------
    >>> gpu_key("NVIDIA 8x H200")[0], gpu_key("AMD Instinct MI300X (192GB)")[0], gpu_key("RTX 3090 24GB")[0]
    ('h200', 'mi300x', 'rtx-3090')
    >>> gpu_key("NVIDIA A100 (memory size not stated)")
    (None, "GPU 'NVIDIA A100 (memory size not stated)': the A100 comes with 40 GB or 80 GB and the memory is not stated")
    """
    if catalog.find_key("GPU", text) is not None:
        return catalog.find_key("GPU", text), ""
    low = text.lower()
    t = _GPU_NOISE.sub(" ", low)
    t = _norm(t)
    if re.search(r"(^|-)a100($|-)", t) and not re.search(r"(40|80)\s*g", low):
        return None, f"GPU {text!r}: the A100 comes with 40 GB or 80 GB and the memory is not stated"
    candidates = [t] + [_norm(x) for x in re.split(r"[,;]", t)]
    for c in candidates:
        if catalog.find_key("GPU", c) is not None:
            return catalog.find_key("GPU", c), ""
    for alias, key in _aliases("gpus"):
        if len(alias) >= 2 and re.search(rf"(^|-){re.escape(alias)}($|-)", t):
            return key, ""
    return None, f"GPU {text!r} is not in the catalog"


_FORMATS = {  # a word of a precision string or a checkpoint's name → the catalog's weight dtype (xlplan.catalog.specs.WeightDtype)
    "mxfp4": "mxfp4", "nvfp4": "nvfp4", "fp4": "nvfp4", "w4a4": "nvfp4",
    "w4a16": "int4", "w4a8": "int4", "awq": "int4", "gptq": "int4", "int4": "int4", "4bit": "int4",
    "w8a16": "int8", "int8": "int8",
    "w8a8": "fp8", "fp8": "fp8", "float8": "fp8",
    "bf16": "bf16", "bfloat16": "bf16", "fp16": "bf16", "float16": "bf16", "16bit": "bf16", "half": "bf16",
}
_KV_FORMATS = {"bf16": "bf16", "fp8": "fp8", "int8": "int8"}
"""The cache formats the planner models (xlplan.catalog.specs.KVDtype; fp16 is read as bf16, the same two bytes)."""
_ROLES = {  # the noun a format is said of
    "kv": "cache", "cache": "cache", "kvcache": "cache",
    "weights": "weights", "weight": "weights", "checkpoint": "weights", "model": "weights",
    "moe": "experts", "expert": "experts", "experts": "experts",
    "attention": "attention", "attn": "attention",
    "activation": "activations", "activations": "activations", "compute": "activations",
}
_FILLER = {"dtype", "type", "format", "only", "in", "as", "is", "at", "of", "default", "quantization", "quantisation",
           "quantized", "quantised", "dynamic", "static", "block", "per", "tensor", "channel", "token", "group", "scheme",
           "precision", "native", "full", "e4m3", "e5m2", "e4m3fn"}
_CLAUSE = re.compile(r"[+,;()\[\]]|\s+-{1,2}(?=[a-z])|\s(?:and|with|plus)\s")
_WxAy = re.compile(r"w\d+a\d+")


def _statements(text: str) -> list[tuple[str, str]]:
    """(role, dtype) for each format a text states, in order: role is what the format is said of.

    The text is cut into clauses at ``+ , ; ( )``, at a command-line flag and at "and"/"with". In a clause a format
    is said of the noun right after it ("bf16 weights", "fp8 KV cache", "NVFP4 MoE", "bf16 attention"), else of the
    noun right before it ("kv_cache_dtype=fp8", "weight-only FP4"), words such as "dynamic" or "dtype" between;
    with neither it is ``"format"``, the format of the model as a whole. ``W4A16``-style names always speak of the
    weights (W). A format hyphen-joined to "KV" (``FP8-KV``, a checkpoint-name form) speaks of both the weights and
    the cache: the checkpoint is fp8 and carries fp8 cache scales.
    """
    out = []
    low = re.sub(r"\b(\d+)[- ]?bits?\b", r"\1bit", text.lower())
    for clause in _CLAUSE.split(low):
        words = [(m.group().strip("."), m.end()) for m in re.finditer(r"[a-z0-9.]+", clause)]
        toks = [w for w, _ in words]
        i = 0
        while i < len(toks):
            if toks[i] not in _FORMATS:
                i += 1
                continue
            j = i
            while j < len(toks) and toks[j] in _FORMATS:  # "fp8 w8a8", "fp16/bf16", "gptq-int4": one format
                j += 1
            dtype = _FORMATS[toks[i]]
            role = "weights" if any(_WxAy.fullmatch(t) for t in toks[i:j]) else _role(toks, i, j)
            joined = j < len(toks) and toks[j] == "kv" and clause[words[j - 1][1]:words[j - 1][1] + 1] in "-_"
            out += [("weights", dtype), ("cache", dtype)] if joined else [(role, dtype)]
            i = j
    return out


def _role(toks: list[str], i: int, j: int) -> str:
    """What the format in ``toks[i:j]`` is said of: the noun after it, else the one before it, else 'format'."""
    for seq in (toks[j:], reversed(toks[:i])):
        for t in seq:
            if t in _ROLES:
                return _ROLES[t]
            if t not in _FILLER:
                break
    return "format"


def _weights_of(statements: list[tuple[str, str]]) -> str | None:
    """The weight format among a text's statements: the experts' (they hold most of an MoE's bytes), else the first
    said of the weights, else the first said of the model as a whole, else the attention's."""
    for roles in (("experts",), ("weights",), ("format",), ("attention",)):
        for role, dtype in statements:
            if role in roles:
                return dtype
    return None


def weights_dtype(precision: str, model_text: str, native: str = "bf16") -> str | None:
    """The weight format a result states, read apart from the cache's; None if unreadable.

    The precision column is read first, then the checkpoint's name. Each is cut into parts, and each format is
    attached to what it is said of (see ``_statements``): "bf16 weights + fp8 KV cache" states bf16 weights (the
    fp8 is the cache's); "W4A16" 4-bit integer weights (the 16 is the activations'); "FP8 dynamic", "fp8 w8a8" and
    an ``-FP8-dynamic`` checkpoint fp8 weights. Where an MoE's experts and its attention are stated apart
    ("NVFP4 MoE + bf16 attention") the experts' format is taken: the experts hold most of the weight bytes, and
    the weights are one format in xlplan. A precision that states only the cache ("fp8 KV cache"), or says "not
    stated" or "default", is the checkpoint's native format.

    Parameters
    ----------
    precision : str
        The result's precision column (free text). [text]
    model_text : str
        The model as the result names it, usually a Hugging Face id. [text]
    native : str
        The format the checkpoint ships in (the catalog's ``weights_dtype_native``). [text]

    Returns
    -------
    str or None
        A catalog weight dtype ('bf16', 'fp8', 'int8', 'int4', 'nvfp4', 'mxfp4'), or None when no format is read. [text]

    Examples
    --------
    >>> weights_dtype("fp8 w8a8", ""), weights_dtype("AWQ int4 (W4A16)", ""), weights_dtype("not stated", "x-FP4")
    ('fp8', 'int4', 'nvfp4')
    >>> weights_dtype("mxfp4 MoE + bf16", ""), weights_dtype("16-bit", ""), weights_dtype("not stated", "", "mxfp4")
    ('mxfp4', 'bf16', 'mxfp4')
    >>> weights_dtype("bf16 weights + fp8 KV cache", ""), weights_dtype("fp8 KV cache", "", "bf16")
    ('bf16', 'bf16')
    """
    stated = _statements(precision)
    found = _weights_of(stated) or _weights_of(_statements(model_text))
    if found:
        return found
    if any(role == "cache" for role, _ in stated) or re.search(r"not stated|default|^\s*$|native", precision.lower()):
        return native
    return None


def kv_dtype(precision: str, model_text: str, engine: str, settings: str, weights: str) -> str | None:
    """The KV-cache format, read apart from the weights'; None where a stated cache format is not one xlplan models.

    A format said of the cache is taken from the precision column ("fp8 KV cache", "FP16/BF16 KV cache"), else the
    settings (``kv_cache_dtype=fp8``, ``--kv-cache-dtype fp8``), else the checkpoint's name (``-FP8-KV``). With
    none stated: fp8 for TensorRT-LLM's fp8 and fp4 recipes (they quantise the cache with the weights), bf16
    otherwise.

    Parameters
    ----------
    precision : str
        The result's precision column (free text). [text]
    model_text : str
        The model as the result names it. [text]
    engine : str
        'vllm', 'sglang' or 'trtllm' (:func:`engine`). [text]
    settings : str
        The result's engine settings (free text). [text]
    weights : str
        The weight format already read (:func:`weights_dtype`). [text]

    Returns
    -------
    str or None
        'bf16', 'fp8' or 'int8'; None when the stated cache format (an fp4 or int4 cache) is not modelled. [text]

    Examples
    --------
    >>> kv_dtype("bf16 weights + fp8 KV cache", "", "vllm", "", "bf16"), kv_dtype("FP4 weights, FP16/BF16 KV cache", "", "trtllm", "", "nvfp4")
    ('fp8', 'bf16')
    >>> kv_dtype("fp8", "", "trtllm", "", "fp8"), kv_dtype("bf16", "", "vllm", "--kv-cache-dtype fp8", "bf16")
    ('fp8', 'fp8')
    """
    for text in (precision, settings, model_text):
        for role, dtype in _statements(text):
            if role == "cache":
                return _KV_FORMATS.get(dtype)
    if engine == "trtllm" and weights in ("fp8", "nvfp4"):
        return "fp8"
    return "bf16"


def engine(text: str, vendor: str = "") -> str | None:
    """'vllm', 'sglang' or 'trtllm' (NIM runs TensorRT-LLM) from an engine column; None if unknown.

    A column naming one engine per vendor ("TensorRT-LLM (NVIDIA) / vLLM (AMD)", as MLPerf rows pooled across
    submitters state it) is read for the GPU's ``vendor`` ('nvidia' or 'amd').

    Examples
    --------
    >>> engine("TensorRT-LLM (NVIDIA) / vLLM (AMD)", "amd"), engine("TensorRT-LLM (NVIDIA) / vLLM (AMD)", "nvidia")
    ('vllm', 'trtllm')
    """
    t = text.lower()
    if vendor:
        for part in re.split(r"\s*[/;|]\s*", t):
            if f"({vendor.lower()})" in part:
                return engine(part)
    if "sglang" in t:
        return "sglang"
    if "tensorrt" in t or "trt-llm" in t or "trtllm" in t or "nim" in t:
        return "trtllm"
    if "vllm" in t:
        return "vllm"
    return None


def vllm_v0(version: str) -> bool:
    """Whether a vLLM version string names the V0 engine (before 0.8, or 'V0' in the text)."""
    v = version.lower()
    if "v0 " in v or "'v0" in v or "(v0" in v or v.startswith("v0") and not v.startswith("v0."):
        return True
    m = re.search(r"\b0\.(\d+)", v)
    return bool(m) and int(m.group(1)) < 8


def parallelism(text: str, gpu_count: int | None) -> tuple[int | None, int, str]:
    """(TP, EP, why) from a parallelism column: 'TP8', 'TP4,PP1', 'TP8 EP8 + DP attention', 'all 8 GPUs'.

    Examples
    --------
    >>> parallelism("TP8 EP8", 8), parallelism("all 8 GPUs", 8), parallelism("TP2,PP2", 4)[2]
    ((8, 8, ''), (8, 1, ''), 'pipeline parallelism (PP2) is not modelled')
    """
    t = text.upper()
    pp = re.search(r"PP\s*(\d+)", t)
    if pp and int(pp.group(1)) > 1:
        return None, 1, f"pipeline parallelism (PP{pp.group(1)}) is not modelled"
    tp = re.search(r"TP\s*(\d+)", t)
    ep = re.search(r"EP\s*(\d+)", t)
    if tp:
        return int(tp.group(1)), int(ep.group(1)) if ep else 1, ""
    if re.search(r"ALL\s+\d+\s+GPUS|ALL GPUS", t) and gpu_count:
        return gpu_count, 1, ""
    return None, 1, f"parallelism {text!r} is not stated as a TP degree"


def setting(settings: str, *keys: str) -> float | None:
    """A numeric engine setting from free text: ``gpu_memory_utilization=0.9``, ``--max-num-batched-tokens 1024``."""
    for key in keys:
        pattern = key.replace("_", "[-_]")
        m = re.search(rf"{pattern}\D{{0,3}}?(\d+(?:\.\d+)?)", settings, re.IGNORECASE)
        if m:
            return float(m.group(1))
    return None


def concurrency(text: str) -> tuple[float | None, str]:
    """(concurrency, '') from 'concurrency 25', 'max concurrency 4', 'batch 32 (static)', '50 concurrent requests'."""
    t = text.lower()
    for pattern in (r"concurrency\s*[:=]?\s*(\d+(?:\.\d+)?)", r"batch\s+(\d+)", r"(\d+)\s+concurrent"):
        m = re.search(pattern, t)
        if m:
            return float(m.group(1)), ""
    if "rate" in t and "inf" not in t:
        return None, f"an open-loop request rate ({text!r}): its latency is a queueing question (xlplan simulate), not a fixed concurrency"
    return None, f"concurrency not stated in {text!r}"


SPECULATIVE_COLUMNS = ("precision", "parallelism", "engine", "engine_version", "settings")
"""The condition columns speculative decoding is looked for in: never ``planner_check``, ``reliability`` or another
note, and not the model's name (a model may be called Eagle without a draft model). [—]"""
_SPECULATIVE = re.compile(r"\bmtp\b|speculative|\beagle|draft model|num[-_ ]nextn", re.IGNORECASE)
_SETTINGS_UNKNOWN = re.compile(
    r"^\W*(not stated|unknown|not given|n/?a)\W*$"  # the whole column says it
    r"|\b(settings?|launch command|command line|flags?)\b[^;]*?\b(unknown|not (stated|given|shown|listed|known|in (the )?excerpt))",
    re.IGNORECASE)


def speculative(row: dict) -> bool:
    """Whether a measurement row's condition columns (:data:`SPECULATIVE_COLUMNS`) state speculative decoding.

    Parameters
    ----------
    row : dict
        One row of a measurements CSV, column name to text. [text]

    Returns
    -------
    bool
        True where MTP, EAGLE, a draft model or ``num_nextn`` appears in a condition column. [—]
    """
    return bool(_SPECULATIVE.search(" ".join(str(row.get(col) or "") for col in SPECULATIVE_COLUMNS)))


def settings_unknown(settings: str) -> bool:
    """Whether a settings column says the engine's settings themselves are not known.

    Parameters
    ----------
    settings : str
        A row's ``settings`` column. [text]

    Returns
    -------
    bool
        True for "not stated" or "unknown" as the whole column, or a phrase such as "settings unknown" or "launch
        command not in excerpt read"; False where settings are stated, even when one value is not ("--ep $ep_size
        (value not stated)"). [—]

    Examples
    --------
    >>> settings_unknown("launch command not in excerpt read"), settings_unknown("not stated")
    (True, True)
    >>> settings_unknown("--ep $ep_size (value not stated); kv_cache_free_gpu_mem_fraction 0.95"), settings_unknown("")
    (False, False)
    """
    return bool(settings.strip()) and bool(_SETTINGS_UNKNOWN.search(settings))
