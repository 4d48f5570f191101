"""Precision strings read the way a person reads them: the weights' format and the KV cache's format apart.

Each case is (precision column, model id, engine, settings) -> (weights dtype, cache dtype), in the catalog's dtype
names (xlplan.catalog.specs.WeightDtype / KVDtype). A format is said of the noun next to it ("bf16 weights", "fp8 KV
cache", "NVFP4 MoE"); a format said of nothing is the model's as a whole.
"""

from __future__ import annotations

import pytest

from xlplan.io import names

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"  # a bf16 checkpoint


def _pair(precision: str, model: str = "", engine: str = "vllm", settings: str = "", native: str = "bf16"):
    w = names.weights_dtype(precision, model, native)
    return w, names.kv_dtype(precision, model, engine, settings, w)


def test_bf16_weights_with_an_fp8_kv_cache():
    # "bf16 weights + fp8 KV cache": the weights are bf16; the fp8 is the cache's, not the weights'
    assert _pair("bf16 weights + fp8 KV cache", LLAMA_8B) == ("bf16", "fp8")


def test_w4a16_is_int4_weights_and_a_default_cache():
    # "W4A16": 4-bit integer weights (W4), 16-bit activations (A16); nothing is said of the cache, so bf16
    assert _pair("W4A16", "Qwen/Qwen3-32B-AWQ") == ("int4", "bf16")
    assert _pair("W4A16", "") == ("int4", "bf16")


@pytest.mark.parametrize("precision, model", [
    ("FP8 dynamic", LLAMA_8B),  # fp8 weights, scaled per token at run time ("dynamic" says how, not of what)
    ("fp8 w8a8", LLAMA_8B),  # fp8, 8-bit weights and activations: the same statement twice
    ("not stated", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"),  # the checkpoint's name says fp8 weights
])
def test_fp8_dynamic_and_w8a8_are_fp8_weights(precision, model):
    assert _pair(precision, model) == ("fp8", "bf16")


def test_nvfp4_experts_and_bf16_attention():
    # "NVFP4 MoE + bf16 attention": the experts are nvfp4, the attention layers bf16. The experts hold most of an MoE's
    # weight bytes, so the weights read nvfp4; "attention" is a part of the weights, not the cache, which stays bf16
    assert _pair("NVFP4 MoE + bf16 attention", "nvidia/DeepSeek-R1-FP4") == ("nvfp4", "bf16")


def test_an_fp8_kv_cache_alone_leaves_the_weights_native():
    # "fp8 KV cache" says nothing of the weights: they are the checkpoint's own (bf16 here, fp8 for DeepSeek-V3)
    assert _pair("fp8 KV cache", LLAMA_8B) == ("bf16", "fp8")
    assert _pair("fp8 KV cache", "deepseek-ai/DeepSeek-R1", native="fp8") == ("fp8", "fp8")


def test_mxfp4():
    # "MXFP4": the weights (the only thing a bare format is said of); the cache stays bf16
    assert _pair("MXFP4", "openai/gpt-oss-120b", native="mxfp4") == ("mxfp4", "bf16")
    assert _pair("MXFP4", "") == ("mxfp4", "bf16")


def test_a_stated_cache_overrides_the_tensorrt_recipe():
    # TRD02 "FP4 weights, FP16/BF16 KV cache" on TensorRT-LLM: the nvfp4 recipe would quantise the cache to fp8,
    # but the result says the cache is 16-bit
    assert _pair("FP4 weights, FP16/BF16 KV cache", "nvidia/DeepSeek-R1-FP4", "trtllm") == ("nvfp4", "bf16")
    assert _pair("FP4 (NVFP4 weights)", "nvidia/DeepSeek-R1-FP4", "trtllm") == ("nvfp4", "fp8")


def test_the_cache_from_the_settings_or_an_fp8_kv_checkpoint():
    # --kv-cache-dtype fp8 in the settings says the cache is fp8 and nothing of the weights
    assert _pair("bf16", LLAMA_8B, settings="vllm serve --kv-cache-dtype fp8 --max-model-len 8192") == ("bf16", "fp8")
    # AMD's "-FP8-KV" checkpoint: fp8 weights carrying fp8 cache scales
    assert _pair("not stated", "amd/Llama-3.1-70B-Instruct-FP8-KV") == ("fp8", "fp8")
    assert _pair("FP8 (FP8-KV checkpoint)", "amd/Llama-3.1-70B-Instruct-FP8-KV") == ("fp8", "fp8")


def test_a_cache_format_xlplan_does_not_model_is_none_not_a_guess():
    # an nvfp4 cache: the weights are the checkpoint's, the cache is not one of bf16, fp8, int8
    assert _pair("nvfp4 KV cache", LLAMA_8B) == ("bf16", None)
    assert names.weights_dtype("vendor-chosen", "") is None
