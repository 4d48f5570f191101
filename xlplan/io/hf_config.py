"""Reading a Hugging Face ``config.json`` into a :class:`~xlplan.specs.ModelSpec`.

Hugging Face names differ by family (``num_local_experts``, ``n_routed_experts``,
``num_experts``…); they are mapped to xlplan's names here and nowhere else.
The family is read from ``model_type``, never guessed from which keys exist.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from xlplan.io.errors import InputError, describe_validation_error
from xlplan.specs import ModelSpec

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


def _sliding_layers(cfg: dict[str, Any], layers: int, model_type: str) -> int:
    if isinstance(cfg.get("layer_types"), list):
        return sum(1 for t in cfg["layer_types"] if t == "sliding_attention")
    if not cfg.get("sliding_window"):
        return 0
    if model_type == "gemma2" or model_type == "gpt_oss":
        return layers // 2
    if model_type.startswith("gemma3"):
        pattern = int(cfg.get("sliding_window_pattern", 6))
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
    try:
        layers = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        fields: dict[str, Any] = {
            "name": cfg.get("_name_or_path") or source,
            "num_hidden_layers": layers,
            "hidden_size": hidden,
            "num_attention_heads": heads,
            "num_key_value_heads": int(cfg.get("num_key_value_heads") or heads),
            "head_dim": int(cfg.get("head_dim") or hidden // heads),
            "intermediate_size": int(cfg.get("intermediate_size", 0)),
            "vocab_size": int(cfg["vocab_size"]),
            "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", model_type.startswith("gemma"))),
            "max_context_tokens": cfg.get("max_position_embeddings"),
            "source": f"read from {source}",
        }
    except KeyError as e:
        raise InputError(source, [f"{e.args[0]}: missing; expected it in a {model_type} config"]) from None
    fields["attention_bias"] = bool(cfg.get("attention_bias", model_type in ("qwen2", "qwen2_moe", "gpt_oss")))
    fields["attention_out_bias"] = model_type == "gpt_oss"
    fields["qk_norm"] = model_type in ("qwen3", "qwen3_moe") or model_type.startswith("gemma3")
    fields["norms_per_layer"] = 4 if model_type.startswith("gemma") else 2
    window_layers = _sliding_layers(cfg, layers, model_type)
    if window_layers:
        fields["sliding_window"] = int(cfg["sliding_window"])
        fields["sliding_window_layers"] = window_layers
    if model_type == "mixtral":
        fields |= {"num_experts": cfg["num_local_experts"], "experts_per_token": cfg["num_experts_per_tok"],
                   "moe_intermediate_size": cfg["intermediate_size"]}
    elif model_type in ("qwen3_moe", "qwen2_moe"):
        fields |= {"num_experts": cfg["num_experts"], "experts_per_token": cfg["num_experts_per_tok"],
                   "moe_intermediate_size": cfg["moe_intermediate_size"]}
    elif model_type == "gpt_oss":
        fields |= {"num_experts": cfg["num_local_experts"],
                   "experts_per_token": cfg.get("num_experts_per_tok", cfg.get("experts_per_token")),
                   "moe_intermediate_size": cfg["intermediate_size"], "expert_bias": True, "router_bias": True}
    elif model_type in ("deepseek_v2", "deepseek_v3"):
        fields |= {
            "attention": "mla", "num_experts": cfg["n_routed_experts"], "experts_per_token": cfg["num_experts_per_tok"],
            "shared_experts": cfg.get("n_shared_experts", 0), "moe_intermediate_size": cfg["moe_intermediate_size"],
            "first_dense_layers": cfg.get("first_k_dense_replace", 0), "router_bias": model_type == "deepseek_v3",
            "q_lora_rank": cfg.get("q_lora_rank"), "kv_lora_rank": cfg["kv_lora_rank"],
            "qk_nope_head_dim": cfg["qk_nope_head_dim"], "qk_rope_head_dim": cfg["qk_rope_head_dim"],
            "v_head_dim": cfg["v_head_dim"], "head_dim": cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"],
        }
    try:
        return ModelSpec(**fields)
    except ValidationError as e:
        raise InputError(source, describe_validation_error(e)) from None


def read_hf_config(path: str | Path) -> ModelSpec:
    """Read a Hugging Face ``config.json`` file into a ModelSpec."""
    path = Path(path)
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(str(path), ["file not found; expected a Hugging Face config.json"]) from None
    except json.JSONDecodeError as e:
        raise InputError(str(path), [f"line {e.lineno}: not valid JSON ({e.msg}); expected a Hugging Face config.json"]) from None
    if not isinstance(cfg, dict):
        raise InputError(str(path), ["expected a JSON object"])
    return spec_from_hf_config(cfg, str(path))
