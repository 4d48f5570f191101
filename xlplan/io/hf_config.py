"""Reading a Hugging Face ``config.json`` into a :class:`~xlplan.catalog.specs.ModelSpec`.

Hugging Face names differ by family (``num_local_experts``, ``n_routed_experts``,
``num_experts``…); they are mapped to xlplan's names here and nowhere else.
The family is read from ``model_type``, never guessed from which keys exist.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from xlplan.catalog.specs import ModelSpec
from xlplan.io import files, structured
from xlplan.io.errors import InputError, describe_validation_error

_MISSING = object()
MAX_WHOLE = 10**12
"""Largest whole number a config field may hold (vocabularies and contexts are < 1e8). [count]"""
CONFIG_FILE = "a Hugging Face config.json"

DENSE = {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "gemma3_text", "ministral3", "mistral3"}
MOE = {"mixtral", "qwen3_moe", "qwen2_moe", "deepseek_v2", "deepseek_v3", "gpt_oss"}
SUPPORTED = sorted(DENSE | MOE)

KNOWN_FIELDS = frozenset({
    "model_type", "_name_or_path", "architectures", "num_hidden_layers", "hidden_size", "num_attention_heads",
    "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size", "tie_word_embeddings", "attention_bias",
    "max_position_embeddings", "sliding_window", "sliding_window_pattern", "use_sliding_window", "layer_types",
    "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "experts_per_token", "n_shared_experts",
    "moe_intermediate_size", "first_k_dense_replace", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
    "qk_rope_head_dim", "v_head_dim", "torch_dtype", "rope_theta", "rms_norm_eps", "text_config",
})
"""config.json fields this reader knows (so a spreadsheet range can tell a field name from a header row)."""


class _Fields:
    """Typed reads of config.json fields; every problem is collected, each naming its field."""

    def __init__(self, cfg: dict[str, Any], model_type: str):
        self.cfg, self.model_type, self.problems = cfg, model_type, []

    def whole(self, key: str, default: Any = _MISSING, minimum: int = 1) -> Any:
        """A whole number of at least ``minimum``; ``default`` when absent or null (a problem if there is none). [count]"""
        v = self.cfg.get(key)
        if v is None:
            if default is _MISSING:
                self.problems.append(f"{key}: missing; expected it in a {self.model_type} config")
                return 1
            return default
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v == int(v) and minimum <= v <= MAX_WHOLE
        if not ok:
            self.problems.append(f"{key}: got {v!r}; expected a whole number of at least {minimum}")
            return max(minimum, 1)
        return int(v)

    def flag(self, key: str, default: bool) -> bool:
        """true or false; ``default`` when absent or null. [bool]"""
        v = self.cfg.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            self.problems.append(f"{key}: got {v!r}; expected true or false")
            return default
        return v


def _sliding_layers(f: _Fields, layers: int) -> int:
    cfg, model_type = f.cfg, f.model_type
    if isinstance(cfg.get("layer_types"), list):
        return sum(1 for t in cfg["layer_types"] if t == "sliding_attention")
    if not cfg.get("sliding_window"):
        return 0
    if model_type == "gemma2" or model_type == "gpt_oss":
        return layers // 2
    if model_type.startswith("gemma3"):
        pattern = f.whole("sliding_window_pattern", 6)
        return layers - layers // pattern
    if cfg.get("use_sliding_window", True) is False:
        return 0
    return layers


def spec_from_hf_config(cfg: dict[str, Any], source: str = "config.json") -> ModelSpec:
    """Map a parsed Hugging Face config to a ModelSpec; raises InputError naming the field."""
    model_type = str(cfg.get("model_type", ""))
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) and "num_hidden_layers" not in cfg else None
    if text is not None:
        model_type = str(text.get("model_type", model_type))
        cfg = {**text, "vocab_size": text.get("vocab_size", cfg.get("vocab_size"))}
    if model_type not in DENSE | MOE:
        raise InputError(source, [f"model_type: got {model_type!r}; expected one of {', '.join(SUPPORTED)}"])
    f = _Fields(cfg, model_type)
    layers = f.whole("num_hidden_layers")
    heads = f.whole("num_attention_heads")
    hidden = f.whole("hidden_size")
    name = cfg.get("_name_or_path")
    fields: dict[str, Any] = {
        "name": name if isinstance(name, str) and name else source,
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": f.whole("num_key_value_heads", heads),
        "head_dim": f.whole("head_dim", max(hidden // heads, 1)),
        "intermediate_size": f.whole("intermediate_size", 0, minimum=0),
        "vocab_size": f.whole("vocab_size"),
        "tie_word_embeddings": f.flag("tie_word_embeddings", model_type.startswith("gemma")),
        "max_context_tokens": f.whole("max_position_embeddings", None),
        "source": f"read from {source}",
    }
    fields["attention_bias"] = f.flag("attention_bias", model_type in ("qwen2", "qwen2_moe", "gpt_oss"))
    fields["attention_out_bias"] = model_type == "gpt_oss"
    fields["qk_norm"] = model_type in ("qwen3", "qwen3_moe") or model_type.startswith("gemma3")
    fields["norms_per_layer"] = 4 if model_type.startswith("gemma") else 2
    window_layers = _sliding_layers(f, layers)
    if window_layers:
        fields["sliding_window"] = f.whole("sliding_window")
        fields["sliding_window_layers"] = window_layers
    if model_type == "mixtral":
        fields |= {"num_experts": f.whole("num_local_experts"), "experts_per_token": f.whole("num_experts_per_tok"),
                   "moe_intermediate_size": f.whole("intermediate_size")}
    elif model_type in ("qwen3_moe", "qwen2_moe"):
        fields |= {"num_experts": f.whole("num_experts"), "experts_per_token": f.whole("num_experts_per_tok"),
                   "moe_intermediate_size": f.whole("moe_intermediate_size")}
    elif model_type == "gpt_oss":
        fields |= {"num_experts": f.whole("num_local_experts"),
                   "experts_per_token": f.whole("num_experts_per_tok", None) or f.whole("experts_per_token"),
                   "moe_intermediate_size": f.whole("intermediate_size"), "expert_bias": True, "router_bias": True}
    elif model_type in ("deepseek_v2", "deepseek_v3"):
        nope, rope = f.whole("qk_nope_head_dim"), f.whole("qk_rope_head_dim")
        fields |= {
            "attention": "mla", "num_experts": f.whole("n_routed_experts"), "experts_per_token": f.whole("num_experts_per_tok"),
            "shared_experts": f.whole("n_shared_experts", 0, minimum=0), "moe_intermediate_size": f.whole("moe_intermediate_size"),
            "first_dense_layers": f.whole("first_k_dense_replace", 0, minimum=0), "router_bias": model_type == "deepseek_v3",
            "q_lora_rank": f.whole("q_lora_rank", None), "kv_lora_rank": f.whole("kv_lora_rank"),
            "qk_nope_head_dim": nope, "qk_rope_head_dim": rope, "v_head_dim": f.whole("v_head_dim"), "head_dim": nope + rope,
        }
    if f.problems:
        raise InputError(source, f.problems)
    try:
        return ModelSpec(**fields)
    except ValidationError as e:
        raise InputError(source, describe_validation_error(e)) from None


def read_hf_config(path: str | Path) -> ModelSpec:
    """Read a Hugging Face ``config.json`` file into a ModelSpec."""
    cfg = structured.read_json(path, CONFIG_FILE, files.TEXT_MAX_BYTES)
    if not isinstance(cfg, dict):
        raise InputError(str(path), [f"(top level): got {type(cfg).__name__}; expected a JSON object, {CONFIG_FILE}"])
    return spec_from_hf_config(cfg, str(path))
