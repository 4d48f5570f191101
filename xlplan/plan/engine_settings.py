"""The engine settings a plan runs with: the TP degrees it may choose, its budgets, its efficiencies, its dtypes.

Each reads a validated :class:`~xlplan.schema.plan.Plan` (and the GPU it runs on): what the policy states, else the
engine's default. :func:`xlplan.plan.scenario.resolve` gathers them into the scenario's numbers.
"""

from __future__ import annotations

from xlplan.catalog.specs import GPUSpec
from xlplan.schema.plan import Plan

TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
"""Tensor-parallel degrees considered, limited to divisors of the node. [GPUs]"""


def compute_dtype(plan: Plan, gpu: GPUSpec) -> str:
    """The tensor-core dtype whose peak the compute path uses.

    Parameters
    ----------
    plan : Plan
        The validated plan: its policy's ``compute_dtype``, else its weight format.
    gpu : GPUSpec
        The GPU, for the peaks it has.

    Returns
    -------
    str
        'bf16', 'fp8' or 'fp4': the policy's, else :func:`_weights_compute_dtype` of the weights.
    """
    if plan.policy.compute_dtype is not None:
        return plan.policy.compute_dtype
    return _weights_compute_dtype(plan.model.weights_dtype, gpu)


def _weights_compute_dtype(w: str, gpu: GPUSpec) -> str:
    """The peak a weight format runs at.

    fp8 weights run at the FP8 peak where the GPU has it (W8A8); nvfp4/fp4 at the FP4 peak where it has it
    (W4A4, as TensorRT-LLM's FP4 checkpoints run); MXFP4 (gpt-oss) runs MXFP4 x MXFP8 at the FP8 peak on GPUs
    with FP4 math (Blackwell) and weight-only with 16-bit activations elsewhere (Marlin/Triton kernels on
    Hopper); int4 and int8 are weight-only at bf16; everything else bf16.

    Parameters
    ----------
    w : str
        Weight format ('bf16', 'fp8', 'int4', 'mxfp4', 'nvfp4', ...).
    gpu : GPUSpec
        The GPU, for the FP8 and FP4 peaks it has.

    Returns
    -------
    str
        'fp8', 'fp4' or 'bf16'.
    """
    if w == "fp8" and gpu.fp8_tflops:
        return "fp8"
    if w in ("fp4", "nvfp4") and gpu.fp4_tflops:
        return "fp4"
    if w == "mxfp4" and gpu.fp4_tflops and gpu.fp8_tflops:
        return "fp8"
    return "bf16"


def tp_options(plan: Plan) -> tuple[int, ...]:
    """Tensor-parallel degrees the planner may choose from. [GPUs]

    Parameters
    ----------
    plan : Plan
        The validated plan: its policy's ``tp``, else its GPUs per node.

    Returns
    -------
    tuple of int
        The policy's degree alone, else every degree of ``TP_DEGREES`` that divides the node. [GPUs]
    """
    if plan.policy.tp is not None:
        return (plan.policy.tp,)
    node = plan.hardware.gpus_per_node
    return tuple(t for t in TP_DEGREES if t <= node and node % t == 0)


def engine_budgets(plan: Plan, gpu: GPUSpec) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) the replica runs with: the policy's, else the engine's default. [sequences], [tokens]

    Parameters
    ----------
    plan : Plan
        The validated plan: its policy's engine and any budgets it states.
    gpu : GPUSpec
        The GPU, whose memory and name set vLLM's defaults.

    Returns
    -------
    max_num_seqs : int
        Sequences a replica runs at once. [sequences]
    max_num_batched_tokens : int
        Tokens one engine step may carry. [tokens]

    Notes
    -----
    vLLM's defaults by GPU (:func:`xlplan.serving.engines.vllm_defaults`) stand for TensorRT-LLM's (trtllm-serve's
    max_num_tokens 8,192) and for SGLang's sequence cap; SGLang's step budget is its ``chunked_prefill_size`` by
    memory tier (16,384 tokens from 160 GiB). The runbook's convention has no step budget (a very large one).

    References
    ----------
    vLLM's engine arguments ``max_num_seqs`` and ``max_num_batched_tokens`` and their defaults by GPU (arg_utils.py);
    SGLang's ``chunked_prefill_size``; trtllm-serve's ``max_num_tokens``. Runbook, document 14: no batch or step
    budget (``RUNBOOK_UNBOUNDED``).
    """
    seqs, tokens = default_budgets(plan.policy.engine, gpu.memory_gib, gpu.name)
    return plan.policy.max_num_seqs or seqs, plan.policy.max_num_batched_tokens or tokens


def default_budgets(engine: str, memory_gib: float, gpu_name: str = "") -> tuple[int, int]:
    """The engine's own (max_num_seqs, max_num_batched_tokens) on a GPU, where a plan states neither. [sequences], [tokens]

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        The plan's ``policy.engine``.
    memory_gib : float
        The GPU's memory as the driver reports it. [GiB]
    gpu_name : str
        The GPU's display name ('' for a GPU given by its memory alone); an A100 keeps vLLM's smaller budgets.

    Returns
    -------
    max_num_seqs : int
        Sequences a replica runs at once. [sequences]
    max_num_batched_tokens : int
        Tokens one engine step may carry. [tokens]

    References
    ----------
    As :func:`engine_budgets`: vLLM's arg_utils.py defaults stand for TensorRT-LLM's, and for SGLang's sequence cap;
    SGLang's step budget is its own ``chunked_prefill_size`` by memory tier
    (:func:`xlplan.serving.engines.sglang_chunked_prefill_tokens`); the runbook's convention has no budget
    (``RUNBOOK_UNBOUNDED``).
    """
    from xlplan.serving import engines

    if engine == "runbook":
        return RUNBOOK_UNBOUNDED, RUNBOOK_UNBOUNDED
    seqs, tokens = engines.vllm_defaults(memory_gib, gpu_name)
    if engine == "sglang":
        return seqs, engines.sglang_chunked_prefill_tokens(memory_gib)
    return seqs, tokens


def efficiencies(plan: Plan, gpu: GPUSpec) -> dict[str, float | None]:
    """The efficiencies the plan runs at: those it states, else the engine's defaults for the GPU.

    Notes
    -----
    ``mfu``: the policy's, else the engine's default decode MFU (0.40 for the runbook's engine). Prefill and decode
    MFU: the policy's own; else ``mfu`` where the plan states it (or the engine is the runbook's), returned as None
    so a sweep of ``mfu`` moves them; else the engine's default (:func:`xlplan.serving.efficiency_defaults.default_efficiencies`).

    Parameters
    ----------
    plan : Plan
        The validated plan: its policy's engine and any efficiencies it states.
    gpu : GPUSpec
        The GPU, whose vendor picks the engine's fitted defaults.

    Returns
    -------
    dict of str to float or None
        ``mfu``, ``prefill_mfu`` and ``decode_mfu`` (None: follow ``mfu``), ``bandwidth_efficiency`` and
        ``expert_efficiency`` [fraction]; ``step_overhead_s`` [s].

    References
    ----------
    Runbook, document 14, step 5 · "÷ 396 per GPU at 40% MFU": the runbook's engine plans at 40% MFU.
    Fitted defaults: ``xlplan/data/efficiencies.yaml`` (``scripts/fit_efficiencies.py`` over ``xlplan/data/measurements.csv``).
    """
    from xlplan.serving import efficiency_defaults

    pol = plan.policy
    d = efficiency_defaults.default_efficiencies(pol.engine, gpu.name)
    use_mfu = pol.mfu is not None or pol.engine == "runbook"
    out: dict[str, float | None] = {"mfu": pol.mfu if pol.mfu is not None else d["decode_mfu"]}
    for f in ("prefill_mfu", "decode_mfu"):
        given = getattr(pol, f)
        out[f] = given if given is not None else (None if use_mfu else d[f])
    for f in ("bandwidth_efficiency", "step_overhead_s", "expert_efficiency"):
        given = getattr(pol, f, None)
        out[f] = given if given is not None else d[f]
    return out


RUNBOOK_UNBOUNDED = 10**7
"""The runbook's convention caps neither the batch nor the step: a budget no plan reaches. [sequences], [tokens]"""
