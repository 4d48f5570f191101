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
    try:
        return catalog.model_key(text)
    except catalog.UnknownNameError:
        pass
    t = _norm(text)
    bare = t.split("/", 1)[1] if "/" in t else t
    for candidate in (t, bare):
        parts = candidate.split("-")
        while parts:
            try:
                return catalog.model_key("-".join(parts))
            except catalog.UnknownNameError:
                pass
            if parts[-1] in _SUFFIXES:
                parts = parts[:-1]
                continue
            break
    for alias, key in _aliases("models"):
        if len(alias) >= 6 and re.search(rf"(^|[-/.]){re.escape(alias)}($|[-/.])", t):
            return key
    return None


_GPU_NOISE = re.compile(r"\b(nvidia|amd|intel|geforce|instinct|habana|dgx|hgx|\d+\s*x)\b|\b\d+x\b")


def gpu_key(text: str) -> tuple[str | None, str]:
    """(catalog key, '') for a GPU named as a person would name it, or (None, why).

    Examples
    --------
    >>> gpu_key("NVIDIA 8x H200")[0], gpu_key("AMD Instinct MI300X (192GB)")[0], gpu_key("RTX 3090 24GB")[0]
    ('h200', 'mi300x', 'rtx-3090')
    >>> gpu_key("NVIDIA A100 (memory size not stated)")
    (None, "GPU 'NVIDIA A100 (memory size not stated)': the A100 comes with 40 GB or 80 GB and the memory is not stated")
    """
    try:
        return catalog.gpu_key(text), ""
    except catalog.UnknownNameError:
        pass
    low = text.lower()
    t = _GPU_NOISE.sub(" ", low)
    t = _norm(t)
    if re.search(r"(^|-)a100($|-)", t) and not re.search(r"(40|80)\s*g", low):
        return None, f"GPU {text!r}: the A100 comes with 40 GB or 80 GB and the memory is not stated"
    candidates = [t] + [_norm(x) for x in re.split(r"[,;]", t)]
    for c in candidates:
        try:
            return catalog.gpu_key(c), ""
        except catalog.UnknownNameError:
            continue
    for alias, key in _aliases("gpus"):
        if len(alias) >= 2 and re.search(rf"(^|-){re.escape(alias)}($|-)", t):
            return key, ""
    return None, f"GPU {text!r} is not in the catalog"


def weights_dtype(precision: str, model_text: str, native: str = "bf16") -> str | None:
    """The weight format a result states, from its precision column and its checkpoint's name; None if unreadable.

    Examples
    --------
    >>> weights_dtype("fp8 w8a8", ""), weights_dtype("AWQ int4 (W4A16)", ""), weights_dtype("not stated", "x-FP4")
    ('fp8', 'int4', 'nvfp4')
    >>> weights_dtype("mxfp4 MoE + bf16", ""), weights_dtype("16-bit", ""), weights_dtype("not stated", "", "mxfp4")
    ('mxfp4', 'bf16', 'mxfp4')
    """
    p = f"{precision} {model_text}".lower()
    if "mxfp4" in p:
        return "mxfp4"
    if re.search(r"nvfp4|\bfp4\b|-fp4\b|w4a4", p):
        return "nvfp4"
    if re.search(r"awq|gptq|w4a16|\bint4\b|-int4|4-?bit", p):
        return "int4"
    if re.search(r"\bint8\b|w8a16", p):
        return "int8"
    if re.search(r"fp8|w8a8|float8", p):
        return "fp8"
    if re.search(r"bf16|bfloat16|fp16|float16|16-bit|half", p):
        return "bf16"
    if re.search(r"not stated|default|^\s*$|native", precision.lower()):
        return native
    return None


def kv_dtype(precision: str, model_text: str, engine: str, settings: str, weights: str) -> str:
    """The KV-cache format: fp8 where stated (kv_cache_dtype=fp8, an FP8-KV checkpoint), and TensorRT-LLM's fp8/fp4
    recipes (which quantise the cache with the weights); bf16 otherwise."""
    text = f"{precision} {model_text} {settings}".lower().replace(" ", "")
    if re.search(r"kv[-_]?cache[-_]?dtype=?fp8|fp8-?kv|kv-?fp8|fp8kv", text):
        return "fp8"
    if engine == "trtllm" and weights in ("fp8", "nvfp4"):
        return "fp8"
    return "bf16"


def engine(text: str) -> str | None:
    """'vllm', 'sglang' or 'trtllm' (NIM runs TensorRT-LLM) from an engine column; None if unknown."""
    t = text.lower()
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
