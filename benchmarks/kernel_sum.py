"""A step's time as the sum of its measured kernels: the trial of the step physics issue 47 is building.

It lives beside the benchmark that scores it (``bench_kernel_step.py``), not in the package: the planner's step has
one home (``xlplan/serving/step.py``, ``tests/test_one_home.py``), and this sum may only move in by replacing that
physics, with its compiled and workbook twins, never beside it.

Where :func:`xlplan.serving.step.step_time_s` runs each part of a step on a roofline with fitted efficiencies, this
module adds up the kernels the step launches, each timed as NVIDIA AIConfigurator measured it on the engine's own
build (:mod:`xlplan.serving.kernel_curves`):

- every layer's projections (grouped-query: fused QKV and output; MLA: the fused low-rank A projection, replicated on
  every GPU, the query's B projection and the output), its dense MLP or a MoE layer's shared experts and router, and
  the output head, each a GEMM at M = the tokens in the step (:func:`~xlplan.serving.kernel_curves.gemm_time_s`);
- a MoE layer's experts, the fused kernel at the model's own shape and split
  (:func:`~xlplan.serving.kernel_curves.moe_time_s`, the fastest format the checkpoint allows), scaled from the
  measurement's balanced routing to the experts random routing touches (:func:`touched_share`);
- decode attention over the cache: grouped-query attention at its measured share of HBM bandwidth (sliding-window
  layers over their window), MLA's absorbed BMMs and latent-cache kernel;
- the elementwise kernels (two residual-add norms and the gated activation) read and written once at
  :data:`ELEMENTWISE_BANDWIDTH` of HBM bandwidth, as AIConfigurator counts them;
- two ring all-reduces per layer where TP > 1 (:func:`xlplan.serving.collectives.allreduce_time_s`).

Nothing here is fitted. ``bench_kernel_step.py`` scores it against the measured sample (15.3% median on 2,104 points
where the fitted roofline scores 17.7%); making it the planner's step, with its compiled and workbook twins, is the
rest of issue 47.

References
----------
NVIDIA AIConfigurator (Apache-2.0), github.com/ai-dynamo/aiconfigurator @095f58a5: the operations a Llama or
DeepSeek step is built from (``aic-core/src/aiconfigurator_core/sdk/models/llama.py``, ``deepseek.py``) and the
elementwise convention (``ElementWise`` at 0.8 of bandwidth). Distinct experts touched under random routing: the
expected number of occupied bins (coupon collector), as :func:`xlplan.serving.step._experts_touched_fraction`.
Ring all-reduce: Patarasuk & Yuan, JPDC 69(2), 2009.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan.serving import kernel_curves
from xlplan.serving.collectives import allreduce_time_s

ELEMENTWISE_BANDWIDTH = 0.8
"""Elementwise kernels' share of HBM bandwidth, as AIConfigurator's ``ElementWise`` operations take it. [fraction]"""

MOE_FORMATS = {"bf16": ("bf16",), "fp8": ("fp8_block", "fp8"), "nvfp4": ("nvfp4",), "mxfp4": ("mxfp4_fp8", "mxfp4")}
"""The expert formats a checkpoint's weight format may run as (``moe_grid.csv``); the fastest measured is taken."""


@dataclass(frozen=True, slots=True)
class KernelReplica:
    """What the kernel sum needs of one replica: the model, its split, formats and the GPU. Units in the comments."""

    gpu: str  # catalog key of the GPU
    engine: str  # 'vllm', 'sglang' or 'trtllm' (another reads TensorRT-LLM's kernels)
    model: object  # xlplan.catalog.ModelSpec
    tp: int  # GPUs in the replica [GPUs]
    ep: int  # expert-parallel degree; experts sliced tp ÷ ep ways [GPUs]
    gemm_format: str  # the projections' format: 'bf16', 'fp8' or 'nvfp4'
    weights_format: str  # the checkpoint's format, which picks the experts' ('bf16', 'fp8', 'nvfp4', 'mxfp4')
    kv_format: str  # 'bf16' or 'fp8'
    hbm_tbps: float  # [TB/s]
    bf16_tflops: float  # dense 16-bit peak, for attention [TFLOP/s]
    link_gbps: float  # GPU-to-GPU bandwidth per GPU, one direction [GB/s]
    link_latency_s: float  # fixed time of one collective [s]


def touched_share(tokens: float, topk: int, experts: int) -> float:
    """Experts a step's tokens touch under random routing, as a share of those balanced routing touches. [fraction]

    Parameters
    ----------
    tokens : float
        Tokens entering the MoE layer [tokens]; > 0.
    topk, experts : int
        Experts per token and routed experts [experts].

    Returns
    -------
    float
        ``E·(1 − (1 − k/E)^T) ÷ min(E, T·k)`` [fraction], in (0, 1].

    Notes
    -----
    AIConfigurator measures the MoE kernel with balanced routing, which hands every expert its share: 32 tokens with 8
    of 256 experts each touch all 256. Routed at random they touch ``1 − (1 − 8/256)^32`` = 64% of them. Where the
    kernel reads its experts' weights (few tokens), its time follows the experts touched.

    Examples
    --------
    >>> round(touched_share(32, 8, 256), 3), touched_share(1, 8, 256)
    (0.638, 1.0)
    """
    random = experts * (1.0 - (1.0 - topk / experts) ** tokens)
    return random / min(experts, tokens * topk)


def _per_gpu(kr: KernelReplica) -> tuple[int, int]:
    """(query heads, KV heads) on one GPU. [heads]"""
    m = kr.model
    return m.num_attention_heads // kr.tp, max(1, m.num_key_value_heads // kr.tp)


def _projections(kr: KernelReplica, mlp: bool) -> list[tuple[float, float]]:
    """(n, k) of one layer's projection GEMMs on one GPU: attention's, and the dense MLP's (``mlp``) or a MoE
    layer's shared experts. [1]"""
    m, h = kr.model, kr.model.hidden_size
    nh, nkv = _per_gpu(kr)
    if m.attention == "mla":
        shapes = [((m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim, h),
                  (nh * (m.qk_nope_head_dim + m.qk_rope_head_dim), m.q_lora_rank or h), (h, nh * m.v_head_dim)]
    else:
        shapes = [((nh + 2 * nkv) * m.head_dim, h), (h, nh * m.head_dim)]
    if mlp and m.intermediate_size:
        inter = m.intermediate_size // kr.tp
        shapes += [(2 * inter, h), (h, inter)]
    if not mlp and m.shared_experts:
        width = m.shared_experts * m.moe_intermediate_size // kr.tp
        shapes += [(2 * width, h), (h, width)]
    return shapes


def _gemms_s(kr: KernelReplica, tokens: float, mlp: bool) -> float:
    return sum(kernel_curves.gemm_time_s(kr.gpu, kr.gemm_format, tokens, n, k, engine=kr.engine)
               for n, k in _projections(kr, mlp))


def experts_time_s(kr: KernelReplica, tokens: float) -> float:
    """One MoE layer's router and routed experts with ``tokens`` entering it, random routing. [s]

    Parameters
    ----------
    kr : KernelReplica
        The replica.
    tokens : float
        Tokens entering the layer [tokens]; > 0.

    Returns
    -------
    float
        The fastest measured expert kernel the checkpoint's format allows, times :func:`touched_share`, plus the
        router's bf16 GEMM [s]. Raises ValueError where no kernel was measured at the model's shape and split.
    """
    m = kr.model
    split = dict(hidden=m.hidden_size, inter=m.moe_intermediate_size, topk=m.experts_per_token, experts=m.num_experts,
                 moe_tp=kr.tp // kr.ep, moe_ep=kr.ep, engine=kr.engine)
    times = []
    for fmt in MOE_FORMATS.get(kr.weights_format, ()):
        try:
            times.append(kernel_curves.moe_time_s(kr.gpu, fmt, tokens, **split))
        except ValueError:
            continue
    if not times:
        raise ValueError(f"no measured MoE kernel for {m.name} at {kr.weights_format}, TP {kr.tp} EP {kr.ep} on {kr.gpu}")
    router = kernel_curves.gemm_time_s(kr.gpu, "bf16", tokens, m.num_experts, m.hidden_size, engine=kr.engine)
    return min(times) * touched_share(tokens, m.experts_per_token, m.num_experts) + router


def _all_layers_gemms_s(kr: KernelReplica, tokens: float) -> float:
    """Every layer's projections and a MoE layer's experts with ``tokens`` in the step. [s]"""
    dense_layers, moe_layers = layer_counts(kr.model)
    gemms = dense_layers * _gemms_s(kr, tokens, mlp=True)
    if moe_layers:
        gemms += moe_layers * (_gemms_s(kr, tokens, mlp=False) + experts_time_s(kr, tokens))
    return gemms


def layer_counts(model) -> tuple[int, int]:
    """(layers with a dense MLP, MoE layers) of a model. [layers]

    Parameters
    ----------
    model : xlplan.catalog.ModelSpec
        The model.

    Returns
    -------
    tuple of int
        A dense model's layers are all dense; a MoE model's first ``first_dense_layers`` are, the rest MoE [layers].
    """
    if not model.num_experts:
        return model.num_hidden_layers, 0
    return model.first_dense_layers, model.num_hidden_layers - model.first_dense_layers


def _decode_attention_s(kr: KernelReplica, batch: float, context: float) -> float:
    """Every layer's decode attention for ``batch`` sequences over ``context`` cached tokens each. [s]"""
    m = kr.model
    nh, nkv = _per_gpu(kr)
    layers = m.num_hidden_layers
    if m.attention == "mla":
        bmm = "fp8" if kr.weights_format in ("fp8", "nvfp4") else "bf16"
        return layers * (kernel_curves.mla_bmm_time_s(kr.gpu, bmm, batch, nh, engine=kr.engine)
                         + kernel_curves.mla_decode_time_s(kr.gpu, kr.kv_format, nh, batch, context, engine=kr.engine))
    window_layers = m.sliding_window_layers if m.sliding_window else 0
    bytes_per_element = 1.0 if kr.kv_format == "fp8" else 2.0
    total = 0.0
    for n, ctx in ((layers - window_layers, context), (window_layers, min(context, m.sliding_window or context))):
        if n:
            nbytes = batch * (4.0 * nh * m.head_dim + 2.0 * nkv * ctx * m.head_dim * bytes_per_element)
            frac = kernel_curves.decode_attention_bandwidth_fraction(kr.gpu, ctx, max(1, round(batch)), kr.kv_format,
                                                                     nh, nkv, engine=kr.engine)
            total += n * nbytes / (frac * kr.hbm_tbps * 1e12)
    return total


def decode_step_s(kr: KernelReplica, batch: float, context: float) -> float:
    """One decode step of ``batch`` sequences over ``context`` cached tokens each, as the sum of measured kernels. [s]

    Parameters
    ----------
    kr : KernelReplica
        The replica.
    batch : float
        Sequences decoding, one token each [sequences]; > 0.
    context : float
        Tokens cached per sequence [tokens].

    Returns
    -------
    float
        Projections, experts, attention, elementwise kernels, all-reduces and the output head [s]. No per-step
        overhead: what the kernels do not hold is left out, not fitted.

    Notes
    -----
    ``L_dense·G(b, mlp) + L_moe·(G(b, shared) + E(b)) + A(b, s) + L·(e(b) + c(b)) + H(b)``: G the projections' GEMMs,
    E :func:`experts_time_s`, A the decode attention, e the elementwise kernels
    (``b·(4·h + 3·I)·2 bytes·2 ÷ (0.8·HBM)``, the MLP width I on dense models only), c two all-reduces of ``b·h``
    bf16 activations, H the output head's bf16 GEMM.
    """
    m = kr.model
    h = m.hidden_size
    width = m.intermediate_size // kr.tp if not m.num_experts else 0
    elementwise = batch * (4 * h + 3 * width) * 2 * 2.0 / (ELEMENTWISE_BANDWIDTH * kr.hbm_tbps * 1e12)
    comm = 2.0 * allreduce_time_s(batch * h * 2.0, kr.tp, kr.link_gbps, kr.link_latency_s)
    head = kernel_curves.gemm_time_s(kr.gpu, "bf16", batch, m.vocab_size // kr.tp, h, engine=kr.engine)
    return (_all_layers_gemms_s(kr, batch) + _decode_attention_s(kr, batch, context)
            + m.num_hidden_layers * (elementwise + comm) + head)


def prefill_token_s(kr: KernelReplica, prompt_tokens: float, chunk_tokens: float) -> float:
    """One prompt token's share of a prefill chunk, as the sum of measured kernels. [s]

    Parameters
    ----------
    kr : KernelReplica
        The replica.
    prompt_tokens : float
        The prompt's length [tokens]: its causal attention's cost per token grows with it.
    chunk_tokens : float
        Prompt tokens one step's chunk carries [tokens]; > 0.

    Returns
    -------
    float
        The chunk's projections and experts ÷ its tokens, plus each token's causal attention at the measured prefill
        efficiency for the prompt's length [s].

    Notes
    -----
    Causal attention does ``2·heads·d·s²`` FLOPs over a prompt of ``s`` tokens, ``2·heads·d·s`` a token; MLA's ``d``
    is the mean of its score and value widths.
    """
    m = kr.model
    nh, nkv = _per_gpu(kr)
    eff = kernel_curves.prefill_attention_efficiency(kr.gpu, min(prompt_tokens, 16384), 1, nh, nkv, engine=kr.engine)
    d = ((m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) / 2 if m.attention == "mla" else m.head_dim)
    attention = 2.0 * nh * d * prompt_tokens / (eff * kr.bf16_tflops * 1e12)
    return _all_layers_gemms_s(kr, chunk_tokens) / chunk_tokens + m.num_hidden_layers * attention
