"""The plan's policy section: the conventions and efficiencies a reviewer should check first, and their calibration.

Part of the plan file's schema; import the models from :mod:`xlplan.schema.plan`, their public home.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, field_validator, model_validator

from xlplan.catalog.specs import ComputeDtype
from xlplan.schema.fields import Fraction, _Section
from xlplan.serving.engines import Engine

Routing = Literal["least_loaded", "round_robin", "random", "least_kv"]
"""The load balancer's rule, as the plan file spells it (:attr:`Policy.routing`). [text]"""
ROUTINGS: tuple[str, ...] = get_args(Routing)
"""The load balancer's rules, in order: the simulator's codes are their indices (0 least-loaded, 1 round robin, 2
random, 3 least KV). [text]"""


class Calibration(_Section):
    """Where calibrated efficiencies came from, and their 95% intervals (written by `xlplan calibrate`)."""

    source: str = Field(description="Benchmark files and what they measured. [text]")
    runs: int = Field(ge=1, description="Benchmark runs fitted. [runs]")
    prefill_mfu_range: tuple[Fraction, Fraction] = Field(description="Prefill MFU's 95% interval from the fit (earlier files: lowest and highest over the runs). [fraction]")
    decode_mfu_range: tuple[Fraction, Fraction] = Field(description="Decode MFU's 95% interval from the fit (earlier files: lowest and highest over the runs). [fraction]")
    bandwidth_efficiency_range: tuple[Fraction, Fraction] = Field(description="Bandwidth efficiency's 95% interval from the fit (earlier files: lowest and highest over the runs). [fraction]")


class Policy(_Section):
    """Conventions and efficiencies: the assumptions a reviewer should check first."""

    mfu: Fraction | None = Field(
        default=None,
        description="Achieved fraction of peak dense FLOP/s (model FLOPs utilisation), for prefill and decode alike; left out, "
                    "the engine's defaults for the GPU (engine 'runbook': 0.40, the runbook's planning figure). [fraction]")
    prefill_mfu: Fraction | None = Field(
        default=None, description="MFU in prefill, where calibrated; left out, mfu if the plan states it, else the engine's default for the GPU. [fraction]")
    decode_mfu: Fraction | None = Field(
        default=None, description="MFU in decode, where calibrated; left out, mfu if the plan states it, else the engine's default for the GPU. [fraction]")
    expert_efficiency: Fraction | None = Field(
        default=None, description="Grouped expert GEMMs' MFU as a fraction of dense GEMMs' (MoE); left out, the engine's default. [fraction]")
    calibration: Calibration | None = Field(default=None, description="Where calibrated efficiencies came from and their spread; the fleet is then also given as a range.")
    engine_version: str | None = Field(
        default=None, max_length=200,
        description="The engine's release as you will deploy it, e.g. '0.11.0' (vLLM) or '0.5.5' (SGLang); a release older "
                    "than the fitted defaults describe (vLLM before 0.8, SGLang before 0.5) is a warning: calibrate on "
                    "your own benchmark. [text]")
    engine: Engine = Field(
        default="vllm",
        description="Serving engine whose memory rule sizes the KV cache and whose defaults set the step budget: 'vllm', 'sglang', "
                    "'trtllm', or 'runbook' (memory x utilisation - weights - overhead_gib, the runbook's convention). [text]",
    )
    memory_utilisation: Fraction | None = Field(
        default=0.90,
        description="The engine's memory fraction: vLLM gpu_memory_utilization, SGLang mem_fraction_static, TensorRT-LLM "
                    "kv_cache_free_gpu_mem_fraction (the runbook's rule: fraction of driver memory); null (a blank cell "
                    "in the workbook): the engine's own default, 0.90 for vLLM, TensorRT-LLM and the runbook's rule, "
                    "SGLang's computed from the GPU's memory, the TP degree and the step budget (0.835 on one H100). [fraction]",
    )
    overhead_gib: float = Field(default=3.0, ge=0, description="Activations, CUDA graphs and runtime memory per GPU, for engine 'runbook' (the other engines estimate it). [GiB]")
    max_num_batched_tokens: int | None = Field(
        default=None, ge=1, description="Tokens one engine step may carry (vLLM max_num_batched_tokens; chunked prefill); left out, the engine's default for the GPU. [tokens]")
    long_prefill_token_threshold: int | None = Field(
        default=None, ge=0,
        description="The most prompt tokens one request may prefill in a step (vLLM --long-prefill-token-threshold): a "
                    "long prompt is chunked at it, and the rest of the step's budget goes to the prompts behind it; "
                    "left out or 0, off (vLLM's default): a prompt's chunk may take the whole budget. vLLM and engine "
                    "'runbook' only (SGLang's and TensorRT-LLM's chunk is their step budget, "
                    "max_num_batched_tokens). [tokens]")
    max_num_seqs: int | None = Field(
        default=None, ge=1, description="Sequences a replica runs at once (vLLM max_num_seqs); left out, the engine's default for the GPU. [sequences]")
    step_overhead_s: float | None = Field(
        default=None, ge=0, lt=1, description="Fixed time per engine step (scheduling, launches, sampling); left out, the engine's default. [s]")
    expert_parallel: int | None = Field(
        default=None, ge=1,
        description="Expert-parallel degree inside a replica (MoE); must divide the TP degree; left out, 1 in the closed "
                    "form, and the configuration search also tries the experts spread over the whole replica (vLLM "
                    "--enable-expert-parallel, SGLang --ep-size, TensorRT-LLM --ep_size). [GPUs]")
    attention_data_parallel: bool | None = Field(
        default=None,
        description="Each rank of a replica holds its own sequences' KV cache (SGLang --enable-dp-attention, TensorRT-LLM "
                    "enable_attention_dp) instead of a copy of every one; left out, off in the closed form, and the "
                    "configuration search also tries it on SGLang and TensorRT-LLM where a replica's ranks would copy "
                    "the cache (MLA, or fewer KV heads than the TP degree). [bool]")
    attention_flops: Literal["causal", "full"] = Field(
        default="causal",
        description="Prefill attention FLOPs: 'causal' (each token attends to those before it, half the square) or 'full' (the runbook's n²). [text]",
    )
    latency_step: Literal["with_prefill", "decode_only"] = Field(
        default="with_prefill",
        description="What the latency path's step carries: the decodes plus their share of prefill ('with_prefill', chunked prefill), "
                    "or the decodes alone ('decode_only', the runbook's roofline). [text]",
    )
    bandwidth_efficiency: Fraction | None = Field(
        default=None,
        description="Achieved fraction of HBM bandwidth; left out, the engine's default for the GPU (engine 'runbook': 0.60, "
                    "from measured 57-66%: measurements N01, G03). [fraction]",
    )
    redundancy: int = Field(default=1, ge=0, description="Spare replicas on top of the load: N+k. [replicas]")
    routing: Routing = Field(
        default="least_loaded",
        description="How the load balancer in front of the replicas sends each request, as the simulation routes it "
                    "and the queueing path counts it: 'least_loaded' (to the replica holding the fewest requests, the "
                    "first of equals: an ideal load-aware router, join-shortest-queue), 'round_robin' (each live replica "
                    "in turn: nginx's default upstream; the round-robin option of the vLLM and SGLang routers) or "
                    "'random' (a replica drawn uniformly: Kubernetes' kube-proxy in iptables mode) or 'least_kv' (to the "
                    "replica whose KV cache will hold the fewest tokens once the prompts it holds are in: the tokens "
                    "cached by its running sequences plus the whole prompts of those prefilling or waiting, the first "
                    "of equals; a KV-aware router's rule). Requests held by a lost replica go to "
                    "the least-loaded survivor whatever the rule (a retry). [text]")
    memory_convention: Literal["paged", "worst_case"] = Field(
        default="paged",
        description="KV per conversation at p50 prompt + p50 output ('paged', the runbook's convention) or at p99 + p99 ('worst_case'). [text]",
    )
    tp: int | None = Field(default=None, ge=1, description="Tensor-parallel degree; left out, the planner picks the one that needs the fewest GPUs. [GPUs]")
    compute_dtype: ComputeDtype | None = Field(
        default=None, description="Tensor-core dtype for the peak; left out: fp8 for fp8 weights, fp4 for fp4 weights where the GPU has it, else bf16. [text]"
    )
    include_ttft_in_time_in_system: bool = Field(default=False, description="Add the TTFT target to time in system (the runbook leaves it out). [bool]")
    decode_attention_flops: bool = Field(default=False, description="Add attention over the cache to decode FLOPs (the runbook leaves it out). [bool]")

    @model_validator(mode="after")
    def _experts_divide_the_degree(self) -> Policy:
        """An expert-parallel degree the plan's own TP degree does not divide cannot be deployed."""
        if self.tp is not None and self.expert_parallel is not None and self.tp % self.expert_parallel:
            raise ValueError(f"expert_parallel: got {self.expert_parallel}; expected a divisor of policy.tp "
                             f"({self.tp}): a replica's experts are spread over its own GPUs (1 splits them by TP)")
        return self

    @model_validator(mode="after")
    def _threshold_is_vllms(self) -> Policy:
        """vLLM's long-prefill threshold has no counterpart on SGLang or TensorRT-LLM, whose chunk is the step budget."""
        if self.long_prefill_token_threshold and self.engine in ("sglang", "trtllm"):
            raise ValueError(f"long_prefill_token_threshold: got {self.long_prefill_token_threshold} on engine "
                             f"'{self.engine}'; expected it left out: it is vLLM's setting, and {self.engine}'s prefill "
                             "chunk is its step budget (set policy.max_num_batched_tokens instead)")
        return self

    @field_validator("long_prefill_token_threshold")
    @classmethod
    def _zero_is_off(cls, v: int | None) -> int | None:
        """0 is vLLM's own word for off: the same as leaving the threshold out."""
        return v or None

    @field_validator("engine_version")
    @classmethod
    def _blank_is_not_stated(cls, v: str | None) -> str | None:
        """A blank release (a cleared workbook cell, ``""`` in YAML) is not stated, not a release called ''."""
        return (v.strip() or None) if v is not None else None
