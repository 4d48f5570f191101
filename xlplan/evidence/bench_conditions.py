"""A benchmark's stated conditions in xlplan's names, and the plan whose scenario is that benchmark.

:class:`Conditions` holds what a published run states (model, precision, GPU and count, parallelism, engine and
settings, lengths, concurrency); :class:`Efficiencies` the figures a benchmark calibrates. :func:`plan_for` turns the
two into a plan with fixed lengths, which :mod:`xlplan.evidence.predict` runs through the planner's own functions.

References
----------
vLLM's scheduler (vllm/v1/core/sched/scheduler.py: decodes first, then prefill up to ``max_num_batched_tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xlplan.catalog.specs import GPUSpec, ModelSpec
from xlplan.serving import engines


@dataclass(frozen=True)
class Efficiencies:
    """The numbers a benchmark calibrates: achieved fractions of peak, and the fixed time per step.

    A field left as None takes the plan's default for the engine and GPU (:func:`xlplan.serving.efficiency_defaults.default_efficiencies`).
    """

    prefill_mfu: float | None = None  # of peak dense FLOP/s in prefill [fraction]
    decode_mfu: float | None = None  # of peak dense FLOP/s in decode [fraction]
    bandwidth_efficiency: float | None = None  # of HBM bandwidth [fraction]
    step_overhead_s: float | None = None  # per step [s]
    expert_efficiency: float | None = None  # expert GEMMs' MFU relative to dense GEMMs' [fraction]

    def resolved(self, engine: str, gpu_name: str, table: dict | None = None) -> Efficiencies:
        """Every field filled: the given ones, the engine's and GPU's defaults for the rest.

        Parameters
        ----------
        engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
            Serving engine whose fitted defaults fill the gaps.
        gpu_name : str
            The GPU's display name, whose vendor picks the fit.
        table : dict, optional
            The fitted default table to fill from (:func:`xlplan.serving.efficiency_defaults.default_efficiencies`); left out, the shipped one.

        Returns
        -------
        Efficiencies
            No field None: each as given, else :func:`xlplan.serving.efficiency_defaults.default_efficiencies` for the engine and GPU.

        References
        ----------
        Fitted defaults: ``xlplan/data/efficiencies.yaml`` (``scripts/fit_efficiencies.py`` over
        ``xlplan/data/measurements.csv``); the runbook engine's: Runbook, document 14, step 5 · "÷ 396 per GPU at 40% MFU".
        """
        from xlplan.serving import efficiency_defaults

        d = efficiency_defaults.default_efficiencies(engine, gpu_name, table)
        return Efficiencies(*(d[f] if getattr(self, f) is None else getattr(self, f) for f in efficiency_defaults.EFFICIENCY_FIELDS))


@dataclass(frozen=True)
class Conditions:
    """A benchmark's stated conditions, in xlplan's names. Units in the field comments."""

    model: ModelSpec
    gpu: GPUSpec
    weights_dtype: str
    kv_dtype: str
    gpus: int  # in the whole system [GPUs]
    tp: int  # per replica [GPUs]
    ep: int = 1  # expert parallel inside a replica [GPUs]
    engine: str = "vllm"  # vllm | sglang | trtllm
    memory_utilisation: float | None = None  # the engine's memory fraction; None: its default (memory_fraction) [fraction]
    max_num_seqs: int | None = None  # [sequences]
    max_num_batched_tokens: int | None = None  # [tokens]
    isl: float = 1.0  # prompt length [tokens]
    osl: float = 1.0  # output length [tokens]
    concurrency: float | None = None  # requests in flight in the whole system; None: offline [requests]
    num_prompts: float | None = None  # requests submitted at once offline, where stated [requests]
    v0: bool = False  # vLLM before 0.8 (its memory profile differs)
    attention_dp: bool = False  # DP attention: each rank holds its own sequences' cache (MLA)
    engine_version: str = ""  # as the source states it, e.g. "vLLM 0.11.0" or "V1; ~0.11" (empty: not stated) [text]

    @property
    def replicas(self) -> int:
        """Data-parallel replicas of ``tp`` GPUs. [replicas]"""
        return max(1, self.gpus // self.tp)


def conditions_of_plan(plan, tp: int) -> Conditions:
    """A benchmark of the plan's model, GPU, dtypes and engine settings on one replica of ``tp`` GPUs. [Conditions]

    The runbook's convention is not an engine: a plan on it is benchmarked as vLLM.

    Parameters
    ----------
    plan : Plan
        The validated plan whose model, GPU, dtypes and policy are benchmarked.
    tp : int
        Tensor-parallel degree of the one replica, also the system's GPUs. [GPUs]

    Returns
    -------
    Conditions
        The benchmark's conditions, lengths and concurrency left at their defaults; expert parallelism only where it
        divides ``tp``.

    References
    ----------
    Runbook, document 14, step 4 · "168.5 GiB ÷ 53.73 GiB per GPU": its KV budget, memory × utilisation − weights −
    overhead, a convention rather than an engine.
    """
    pol = plan.policy
    return Conditions(model=plan.model.resolve(), gpu=plan.hardware.resolve(), weights_dtype=plan.model.weights_dtype,
                      kv_dtype=plan.model.kv_dtype, gpus=tp, tp=tp, ep=(pol.expert_parallel or 1) if tp % (pol.expert_parallel or 1) == 0 else 1,
                      engine="vllm" if pol.engine == "runbook" else pol.engine, memory_utilisation=pol.memory_utilisation,
                      max_num_seqs=pol.max_num_seqs, max_num_batched_tokens=pol.max_num_batched_tokens,
                      attention_dp=bool(pol.attention_data_parallel))


def replace_concurrency(c: Conditions, concurrency: float) -> Conditions:
    """The conditions at another concurrency (the whole system's). [Conditions]

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions.
    concurrency : float
        Requests in flight in the whole system, all replicas together. [requests]

    Returns
    -------
    Conditions
        ``c`` with only ``concurrency`` replaced.
    """
    return replace(c, concurrency=concurrency)


def plan_for(c: Conditions, eff: Efficiencies):
    """The plan whose scenario is the benchmark: fixed lengths, its engine and settings, the given efficiencies.

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions.
    eff : Efficiencies
        The efficiencies to plan at; a field left None takes the engine's default.

    Returns
    -------
    Plan
        A validated plan of one replica of ``tp`` GPUs: prompt and output lengths fixed at ``isl`` and ``osl`` (at
        least 1), causal attention, the latency step with prefill, placeholder peak, promise and price.
    """
    from xlplan.schema.plan import Plan

    policy = {"engine": c.engine, "tp": c.tp, "expert_parallel": c.ep if c.tp % c.ep == 0 else 1,
              "attention_flops": "causal", "latency_step": "with_prefill", "attention_data_parallel": c.attention_dp}
    for key, value in (("memory_utilisation", memory_fraction(c)), ("max_num_seqs", c.max_num_seqs),
                       ("max_num_batched_tokens", c.max_num_batched_tokens), ("step_overhead_s", eff.step_overhead_s),
                       ("prefill_mfu", eff.prefill_mfu), ("decode_mfu", eff.decode_mfu),
                       ("bandwidth_efficiency", eff.bandwidth_efficiency), ("expert_efficiency", eff.expert_efficiency)):
        if value is not None:
            policy[key] = value
    gpu = c.gpu.model_dump(exclude_none=True)
    return Plan.model_validate({
        "forecast": {"peak_rps": 1.0, "prompt_tokens": {"p50": max(c.isl, 1.0), "p95": max(c.isl, 1.0)},
                     "output_tokens": {"p50": max(c.osl, 1.0), "p95": max(c.osl, 1.0)}},
        "promise": {"ttft_s": 1.0, "itl_s": 1.0},
        "model": {"name": c.model.name, "spec": c.model.model_dump(exclude_none=True), "weights_dtype": c.weights_dtype,
                  "kv_dtype": c.kv_dtype},
        "hardware": {"gpu": {**{k: v for k, v in gpu.items() if k in _GPU_OVERRIDE}, "usd_per_gpu_hour": 1.0},
                     "gpus_per_node": max(c.tp, 1)},
        "policy": policy,
    })


_GPU_OVERRIDE = ("name", "memory_gib", "bf16_tflops", "fp8_tflops", "fp4_tflops", "hbm_tbps")


def memory_fraction(c: Conditions) -> float:
    """The memory fraction the benchmark's engine ran at: the one it states, else the engine's default for its release,
    GPU and TP (:func:`xlplan.serving.engines.default_memory_fraction`). [fraction]

    Parameters
    ----------
    c : Conditions
        The benchmark's conditions.

    Returns
    -------
    float
        ``c.memory_utilisation`` where stated; else vLLM's and TensorRT-LLM's 0.9, SGLang's computed from the GPU's
        memory and TP (by TP alone before 0.5.3), with every GPU of an attention-DP replica a DP rank (its layout's
        TP of 1, as the corpora's DP-attention layouts are). [fraction]

    References
    ----------
    sgl-project/sglang server_args.py ``_handle_gpu_memory_settings``; vLLM ``--gpu-memory-utilization`` (0.9);
    TensorRT-LLM ``KvCacheConfig.free_gpu_memory_fraction`` (0.9).
    """
    if c.memory_utilisation is not None:
        return c.memory_utilisation
    return engines.default_memory_fraction(c.engine, c.gpu.memory_gib, c.tp, c.engine_version,
                                           c.tp if c.attention_dp else 0, c.max_num_batched_tokens)


def deployment(c: Conditions) -> tuple[str, str, str]:
    """A row's deployment: the runs calibration pairs within, and what leaving one deployment out leaves out together.

    Parameters
    ----------
    c : Conditions
        A row's conditions as read (a corpus row's or a silicon sample row's).

    Returns
    -------
    tuple of str
        (model, GPU, engine): the catalog's model and GPU names and the engine. [text]
    """
    return c.model.name, c.gpu.name, c.engine
