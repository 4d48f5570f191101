"""Parameter counts derived from a model's config.

The runbook's section 2 asks for "parameter count derived from the config" —
three lines of arithmetic anyone can check. Counts are in parameters (not
billions) and follow the Hugging Face module layout of each family.

Notes
-----
Per layer, for grouped-query attention (MHA and MQA are its limits):
``q = H·nh·hd``, ``k = v = H·nkv·hd``, ``o = nh·hd·H``; biases and QK-norms where
the family has them. MLA (DeepSeek-V3): ``H·q_lora + q_lora·nh·(nope+rope)`` for
queries, ``H·(kv_lora + rope)`` and ``kv_lora·nh·(nope + v)`` for keys/values,
``nh·v·H`` out. A gated MLP is ``3·H·I``. An MoE layer holds ``E`` routed experts
(``3·H·I_moe`` each), shared experts and a router of ``H·E``; a token uses
``k`` routed experts plus the shared ones. Embedding ``V·H``, plus the output
head ``V·H`` unless tied.

References
----------
Runbook, document 14, "The capacity note", section 2 · The model and precision.
"""

from __future__ import annotations

from xlplan.catalog.specs import ModelSpec


def gqa_attention_params(m: ModelSpec) -> int:
    """Grouped-query (and MHA/MQA) attention parameters in one layer: q, k, v, o, biases, QK-norms. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        ``2·H·nh·hd + 2·H·nkv·hd``, plus the biases and QK-norms the family has. [parameters]
    """
    h, nh, hd, nkv = m.hidden_size, m.num_attention_heads, m.head_dim, m.num_key_value_heads
    n = 2 * h * nh * hd + 2 * h * nkv * hd
    if m.attention_bias:
        n += nh * hd + 2 * nkv * hd
    if m.attention_out_bias:
        n += h
    if m.qk_norm:
        n += 2 * hd
    return n


def mla_attention_params(m: ModelSpec) -> int:
    """Multi-head latent attention parameters in one layer; MLA fields a config leaves out count as 0. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        Query (low-rank or direct), latent key/value and output projections of one layer. [parameters]
    """
    h, nh = m.hidden_size, m.num_attention_heads
    q_lora, kv_lora = m.q_lora_rank or 0, m.kv_lora_rank or 0
    nope, rope, v = m.qk_nope_head_dim or 0, m.qk_rope_head_dim or 0, m.v_head_dim or 0
    q = h * q_lora + q_lora + q_lora * nh * (nope + rope) if q_lora else h * nh * (nope + rope)
    kv = h * (kv_lora + rope) + kv_lora + kv_lora * nh * (nope + v)
    return q + kv + nh * v * h


def attention_params_per_layer(m: ModelSpec) -> int:
    """Attention parameters in one layer (projections, biases, norms), for the model's attention kind. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        :func:`mla_attention_params` for MLA, else :func:`gqa_attention_params`. [parameters]
    """
    return mla_attention_params(m) if m.attention == "mla" else gqa_attention_params(m)


def expert_params(m: ModelSpec) -> int:
    """Parameters of one routed expert (gated MLP, biases where the family has them). [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        ``3·H·I_moe``, plus the expert biases where the family has them. [parameters]
    """
    n = 3 * m.hidden_size * m.moe_intermediate_size
    if m.expert_bias:
        n += 2 * m.moe_intermediate_size + m.hidden_size
    return n


def router_params(m: ModelSpec) -> int:
    """Parameters of one MoE layer's router. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        ``H·E``, plus ``E`` router biases where the family has them. [parameters]
    """
    return m.hidden_size * m.num_experts + (m.num_experts if m.router_bias else 0)


def mlp_params_per_layer(m: ModelSpec, layer_is_moe: bool, active_only: bool) -> int:
    """MLP parameters in one layer: all of them, or those one token uses. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).
    layer_is_moe : bool
        Whether the layer's MLP is a mixture of experts (else a dense gated MLP).
    active_only : bool
        Count only the routed experts one token uses (top-``k``), not all ``E``; a dense layer ignores it.

    Returns
    -------
    int
        Dense: ``3·H·I``. MoE: routed experts (all, or top-``k``) plus shared experts plus the router. [parameters]
    """
    if not layer_is_moe:
        return 3 * m.hidden_size * m.intermediate_size
    routed = m.experts_per_token if active_only else m.num_experts
    shared = m.shared_experts * 3 * m.hidden_size * m.moe_intermediate_size
    return routed * expert_params(m) + shared + router_params(m)


def embedding_params(m: ModelSpec) -> int:
    """Input embedding plus output head (once if tied). [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        ``V·H``, twice unless the embeddings are tied. [parameters]
    """
    return m.vocab_size * m.hidden_size * (1 if m.tie_word_embeddings else 2)


def moe_layers(m: ModelSpec) -> int:
    """Layers with an MoE MLP: after the leading dense ones, every ``moe_layer_step``-th (Llama 4 Maverick: 24 of 48). [layers]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        MoE layers; 0 for a dense model. [layers]
    """
    if not m.num_experts:
        return 0
    return (m.num_hidden_layers - m.first_dense_layers) // m.moe_layer_step


def routed_expert_params(m: ModelSpec) -> int:
    """Parameters of all routed experts of all MoE layers: what a step reads only where its tokens are routed. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        MoE layers × ``E`` experts × parameters per expert. [parameters]
    """
    return moe_layers(m) * m.num_experts * expert_params(m)


def routed_expert_active_params(m: ModelSpec) -> int:
    """Routed-expert parameters one token passes through: ``k`` experts in every MoE layer. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        MoE layers × ``k`` experts × parameters per expert. [parameters]
    """
    return moe_layers(m) * m.experts_per_token * expert_params(m)


def decoder_params(m: ModelSpec, active_only: bool) -> int:
    """Decoder parameters (layers and final norm, no embeddings): all, or those one token uses. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).
    active_only : bool
        Count only the routed experts one token uses (top-``k``) in each MoE layer.

    Returns
    -------
    int
        Attention, norms and MLPs of every layer, plus the final norm. [parameters]
    """
    n_moe = moe_layers(m)
    dense_layers = m.num_hidden_layers - n_moe
    per_layer_common = attention_params_per_layer(m) + m.norms_per_layer * m.hidden_size
    return (
        m.num_hidden_layers * per_layer_common
        + dense_layers * mlp_params_per_layer(m, False, active_only)
        + n_moe * mlp_params_per_layer(m, True, active_only)
        + m.hidden_size  # final norm
    )


def total_params(m: ModelSpec) -> int:
    """All parameters held in memory, including any vision tower. [parameters]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        Decoder (all experts), embedding and output head, and vision tower. [parameters]

    References
    ----------
    Runbook, document 14, "The capacity note", section 2 · "parameter count derived from the config".

    Examples
    --------
    Llama-3.1-8B: 32 × 218,112,000 per layer + 2 × 128,256 × 4,096 + 4,096.

    >>> from xlplan.catalog import get_model
    >>> total_params(get_model("llama-3.1-8b"))
    8030261248
    """
    return decoder_params(m, active_only=False) + embedding_params(m) + m.vision_params


def active_params(m: ModelSpec) -> int:
    """Parameters one text token passes through (MoE: routed top-k plus shared). [parameters]

    Includes the embedding and output head, as the runbook's 2·N FLOPs/token
    convention does (8.03 B for Llama-3.1-8B). Excludes a vision tower.

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        Decoder parameters one token uses, plus the embedding and output head. [parameters]

    References
    ----------
    Runbook, document 14, "The capacity note", section 2 · "parameter count derived from the config".
    Runbook, document 14, step 5 · "decode 193" TFLOP/s = 40 × 300 × 2 × 8.03e9: 2·N FLOPs per token, N = 8.03 B.
    """
    return decoder_params(m, active_only=True) + embedding_params(m)


def attention_width(m: ModelSpec) -> int:
    """Width of the attention score and value products per layer. [elements]

    Parameters
    ----------
    m : ModelSpec
        The model's architecture (a catalog entry or a parsed ``config.json``).

    Returns
    -------
    int
        Heads × head width, the factor of the attention FLOP terms; MLA's is rounded down. [elements]

    Notes
    -----
    ``nh·hd`` for GQA (the hidden size for Llama); for MLA the mean of the query-key
    and value widths, ``nh·(nope + rope + v)/2``.
    """
    if m.attention == "mla":
        return m.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) // 2
    return m.num_attention_heads * m.head_dim
