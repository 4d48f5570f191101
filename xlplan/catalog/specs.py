"""Typed descriptions of the hardware and the model: what the catalog holds.

Every field carries its unit in its name or description; every catalog entry
carries its sources. These are plain data: the arithmetic on them lives in the
domain modules (:mod:`xlplan.catalog.parameters`, :mod:`xlplan.serving.memory`,
:mod:`xlplan.serving.compute`...).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

WeightDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4", "fp4"]
KVDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8"]
ComputeDtype = Literal["bf16", "fp8", "fp4"]


PCIE_GEN4_GBPS = 32.0
"""PCIe Gen4 x16, one direction: 16 GT/s × 16 lanes × 128/130 ÷ 8 ≈ 31.5 GB/s, rounded. [GB/s]"""

FABRIC_LATENCY_S = 10e-6
"""A collective's fixed latency over a GPU fabric (NVLink, Infinity Fabric): nccl-tests' small-message all-reduce. [s]"""

PCIE_LATENCY_S = 25e-6
"""A collective's fixed latency over PCIe. [s]"""

FABRIC_THRESHOLD_GBPS = 100.0
"""Links faster than this are a GPU fabric, slower ones PCIe. [GB/s]"""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GPUSpec(_Spec):
    """One accelerator, with the figures the planner uses and where they come from."""

    name: str = Field(description="Display name, e.g. 'NVIDIA H100 SXM 80GB'. [text]")
    memory_gib: float = Field(
        gt=0,
        description="Memory as the driver reports it (nvidia-smi / rocm-smi total), not as marketed. [GiB]",
    )
    cuda_visible_gib: float | None = Field(
        default=None,
        gt=0,
        description="Total memory visible to CUDA/PyTorch (cudaMemGetInfo), which vLLM's "
        "gpu_memory_utilization multiplies; slightly below memory_gib. [GiB]",
    )
    memory_marketed_gb: float | None = Field(default=None, gt=0, description="Memory as marketed. [GB]")
    bf16_tflops: float = Field(gt=0, description="Peak dense BF16 tensor throughput (sparse figures halved). [TFLOP/s]")
    fp8_tflops: float | None = Field(default=None, gt=0, description="Peak dense FP8 throughput; none if the GPU has no FP8. [TFLOP/s]")
    fp4_tflops: float | None = Field(default=None, gt=0, description="Peak dense FP4 throughput; none if the GPU has no FP4. [TFLOP/s]")
    hbm_tbps: float = Field(gt=0, description="Memory bandwidth. [TB/s] (10**12 bytes/s)")
    int8_tops: float | None = Field(default=None, gt=0, description="Peak dense INT8 throughput. [TOP/s]")
    interconnect: str = Field(default="", description="GPU-to-GPU link as published, e.g. 'NVLink 4, 900 GB/s bidirectional'. [text]")
    interconnect_gbps: float | None = Field(
        default=None, gt=0, description="GPU-to-GPU bandwidth per GPU, one direction (what tensor-parallel all-reduces use). [GB/s]")
    collective_latency_us: float | None = Field(
        default=None, gt=0, description="Fixed time of one small all-reduce; left out, 10 µs over NVLink/Infinity Fabric, 25 µs over PCIe. [µs]")
    nodes: int | None = Field(default=None, ge=1, description="The usual GPUs per node or NVLink domain (the purchasing unit). [GPUs]")
    nodes_note: str = Field(default="", description="What the node size rests on. [text]")
    tdp_w: float | None = Field(default=None, gt=0, description="Board power (TDP). [W]")
    usd_per_gpu_hour: float | None = Field(default=None, gt=0, description="One representative rental price. [USD/GPU-hour]")
    price_note: str = Field(default="", description="Provider, offer and date of the price. [text]")
    purchase_usd_per_gpu: float | None = Field(default=None, gt=0, description="A dated purchase price per GPU, where a credible quote exists. [USD/GPU]")
    purchase_note: str = Field(default="", description="Seller, quote and date of the purchase price. [text]")
    datacenter: bool | None = Field(
        default=None, description="Whether it may be deployed in a datacenter: False for GeForce cards, whose driver licence forbids "
        "it; None where not stated (a GPU given in the plan). [bool]")
    datacenter_source: str = Field(default="", description="What the datacenter eligibility rests on: the licence or product class, with its source and date. [text]")
    source: str = Field(default="user-supplied", description="Where the spec, memory and price figures come from. [text]")

    def link_gbps(self) -> float:
        """GPU-to-GPU bandwidth per GPU, one direction; PCIe Gen4 x16 (32 GB/s) where the catalog has none. [GB/s]

        Returns
        -------
        float
            ``interconnect_gbps``, else ``PCIE_GEN4_GBPS``: what a tensor-parallel all-reduce moves per GPU. [GB/s]
        """
        return self.interconnect_gbps or PCIE_GEN4_GBPS

    def collective_latency_s(self) -> float:
        """Fixed time of one small collective. [s]

        Returns
        -------
        float
            ``collective_latency_us`` in seconds, else 10e-6 over a fabric faster than 100 GB/s and 25e-6 over PCIe. [s]

        Notes
        -----
        The catalog's figure where it has one; otherwise 10 µs on a GPU-to-GPU fabric (NVLink, Infinity Fabric,
        links faster than 100 GB/s) and 25 µs over PCIe — NCCL's small-message all-reduce latency on each, the
        order nccl-tests reports (github.com/NVIDIA/nccl-tests, busbw at 8 B messages).

        References
        ----------
        NVIDIA nccl-tests (github.com/NVIDIA/nccl-tests): ``all_reduce_perf`` results at 8-byte messages.
        """
        if self.collective_latency_us is not None:
            return self.collective_latency_us * 1e-6
        return FABRIC_LATENCY_S if self.link_gbps() > FABRIC_THRESHOLD_GBPS else PCIE_LATENCY_S

    def peak_tflops(self, dtype: ComputeDtype) -> float | None:
        """Peak dense throughput for a compute dtype, or None when the GPU lacks it. [TFLOP/s]

        Parameters
        ----------
        dtype : {'bf16', 'fp8', 'fp4'}
            Tensor-core dtype whose peak is wanted.

        Returns
        -------
        float or None
            ``bf16_tflops``, ``fp8_tflops`` or ``fp4_tflops``; None where the catalog has no such peak. [TFLOP/s]
        """
        return {"bf16": self.bf16_tflops, "fp8": self.fp8_tflops, "fp4": self.fp4_tflops}[dtype]


class ModelSpec(_Spec):
    """A transformer's shape, as in its Hugging Face ``config.json``, with sources."""

    name: str = Field(description="Display name, e.g. 'Llama-3.1-8B'. [text]")
    hf_id: str = Field(default="", description="Hugging Face repository id. [text]")
    attention: Literal["gqa", "mla"] = Field(
        default="gqa",
        description="Attention kind: 'gqa' (multi-head, grouped-query and multi-query alike) or "
        "'mla' (DeepSeek multi-head latent attention, which caches one latent per token). [text]",
    )
    num_hidden_layers: int = Field(gt=0, description="Transformer layers. [layers]")
    hidden_size: int = Field(gt=0, description="Model width. [elements]")
    num_attention_heads: int = Field(gt=0, description="Query heads. [heads]")
    num_key_value_heads: int = Field(gt=0, description="Key/value heads (equal to query heads for MHA). [heads]")
    head_dim: int = Field(gt=0, description="Width of one attention head. [elements]")
    intermediate_size: int = Field(ge=0, description="Width of the dense gated MLP. [elements]")
    vocab_size: int = Field(gt=0, description="Vocabulary. [tokens]")
    tie_word_embeddings: bool = Field(default=False, description="Output head shares the embedding matrix. [bool]")
    attention_bias: bool = Field(default=False, description="Q, K and V projections carry biases (Qwen2, gpt-oss). [bool]")
    attention_out_bias: bool = Field(default=False, description="The output projection carries a bias (gpt-oss). [bool]")
    qk_norm: bool = Field(default=False, description="Per-head RMSNorm on queries and keys (Qwen3). [bool]")
    norms_per_layer: int = Field(default=2, ge=0, description="RMSNorm vectors per layer (2; Gemma 2/3 use 4). [vectors]")
    num_experts: int = Field(default=0, ge=0, description="Routed experts per MoE layer; 0 for a dense model. [experts]")
    experts_per_token: int = Field(default=0, ge=0, description="Routed experts active per token. [experts]")
    shared_experts: int = Field(default=0, ge=0, description="Always-active shared experts per MoE layer. [experts]")
    moe_intermediate_size: int = Field(default=0, ge=0, description="Width of one expert's gated MLP. [elements]")
    first_dense_layers: int = Field(default=0, ge=0, description="Leading layers with a dense MLP instead of MoE (DeepSeek first_k_dense_replace). [layers]")
    moe_layer_step: int = Field(default=1, ge=1, description="Every n-th layer after the dense ones is MoE, the rest dense (Llama 4 interleave_moe_layer_step). [layers]")
    expert_bias: bool = Field(default=False, description="Expert MLPs carry biases (gpt-oss). [bool]")
    router_bias: bool = Field(default=False, description="The router carries a bias (gpt-oss; DeepSeek's score-correction bias). [bool]")
    q_lora_rank: int | None = Field(default=None, gt=0, description="MLA: rank of the low-rank query projection; none for a full projection. [elements]")
    kv_lora_rank: int | None = Field(default=None, gt=0, description="MLA: width of the cached KV latent. [elements]")
    qk_nope_head_dim: int | None = Field(default=None, gt=0, description="MLA: per-head query/key width without rotary embedding. [elements]")
    qk_rope_head_dim: int | None = Field(default=None, gt=0, description="MLA: per-head rotary width, cached once per token. [elements]")
    v_head_dim: int | None = Field(default=None, gt=0, description="MLA: per-head value width. [elements]")
    sliding_window: int | None = Field(default=None, gt=0, description="Window of the sliding-window layers. [tokens]")
    sliding_window_layers: int = Field(default=0, ge=0, description="How many layers use the sliding window (they cache at most the window). [layers]")
    vision_params: int = Field(default=0, ge=0, description="Parameters outside the text decoder (vision tower, projector): in memory, not in text FLOPs. [parameters]")
    max_context_tokens: int | None = Field(default=None, gt=0, description="Context limit from the config (max_position_embeddings). [tokens]")
    published_params_b: float | None = Field(default=None, gt=0, description="Total parameter count as published. [billions of parameters]")
    published_active_params_b: float | None = Field(default=None, gt=0, description="Active parameters per token as published (MoE). [billions of parameters]")
    source: str = Field(default="user-supplied", description="Where the config and the published counts come from. [text]")
    weights_dtype_native: WeightDtype = Field(
        default="bf16", description="The format the published checkpoint ships in (DeepSeek-V3 fp8, gpt-oss mxfp4), read when a result does not state one. [text]")
    config_notes: str = Field(default="", description="Config fields the planner does not use (rope scaling, layer layouts), for a reviewer. [text]")

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        if self.attention == "mla":
            missing = [f for f in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"an MLA model needs {', '.join(missing)}")
        if self.num_experts:
            if not (0 < self.experts_per_token <= self.num_experts):
                raise ValueError("experts_per_token must be between 1 and num_experts for an MoE model")
            if self.moe_intermediate_size <= 0:
                raise ValueError("an MoE model needs moe_intermediate_size > 0")
        if self.sliding_window_layers > self.num_hidden_layers:
            raise ValueError("sliding_window_layers cannot exceed num_hidden_layers")
        if self.sliding_window_layers and self.sliding_window is None:
            raise ValueError("sliding_window_layers > 0 needs sliding_window")
        return self


def vendor(gpu_name: str) -> str:
    """'amd', 'intel' or 'nvidia', from a GPU's display name. [text]

    Parameters
    ----------
    gpu_name : str
        The GPU's display name, e.g. 'H100 SXM' or 'Instinct MI300X'.

    Returns
    -------
    str
        'amd', 'intel' or 'nvidia' (the default).
    """
    n = gpu_name.lower()
    if "amd" in n or "instinct" in n or n.startswith("mi"):
        return "amd"
    if "gaudi" in n or "intel" in n:
        return "intel"
    return "nvidia"
