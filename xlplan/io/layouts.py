"""Serving layouts at the edge: one grammar for every corpus, read from columns or, once, from prose.

The grammar is AIConfigurator's (``xlplan/data/silicon_sample.md``, "The layout grammar"): a worker (xlplan's
replica) occupies ``tp × pp × attention_dp`` GPUs; its attention runs ``attention_dp`` data-parallel ranks of ``tp``
tensor-parallel GPUs each; an MoE's experts fill the same width, ``tp × attention_dp = moe_tp × moe_ep``; the system
runs ``replicas`` such workers. Both corpora carry these six columns (:data:`COLUMNS`): the silicon sample as
AIConfigurator states them, the measurements corpus as :func:`from_prose` read its ``parallelism`` column once
(``scripts/structure_layouts.py``). A measurements file without the columns, or with them blank, is read by
:func:`from_prose` as it is loaded, so an outside file in the older schema is read by the same rules.

In xlplan's names (:class:`xlplan.evidence.bench_conditions.Conditions`) a layout is one replica of
``tp × attention_dp`` GPUs, expert parallel ``moe_ep`` (an MoE only), attention data parallel where
``attention_dp`` > 1 (:func:`in_xlplan_names`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COLUMNS = ("tp", "pp", "attention_dp", "moe_tp", "moe_ep", "replicas")
"""The layout's columns in every corpus, in this order. [—]"""


@dataclass(frozen=True)
class Layout:
    """A layout in the grammar's columns (None: not stated; the reader infers it where the grammar allows)."""

    tp: int | None = None  # tensor-parallel GPUs in each attention rank [GPUs]
    pp: int | None = None  # pipeline stages [stages]
    attention_dp: int | None = None  # attention data-parallel ranks in a worker [ranks]
    moe_tp: int | None = None  # tensor-parallel GPUs each expert splits over [GPUs]
    moe_ep: int | None = None  # expert-parallel GPUs the experts are spread over [GPUs]
    replicas: int | None = None  # workers in the system [replicas]

    def cells(self) -> dict[str, str]:
        """The layout as CSV cells (blank where not stated). [text]"""
        return {c: "" if getattr(self, c) is None else str(getattr(self, c)) for c in COLUMNS}


def _int(cell) -> int | None:
    text = str(cell if cell is not None else "").strip()
    if not text:
        return None
    try:
        x = float(text)
    except ValueError:
        return None
    return int(x) if x == int(x) else None


def from_cells(row: dict) -> Layout | None:
    """A row's layout from its six columns, or None where the row has none of them filled. [Layout]

    Parameters
    ----------
    row : dict
        One row of a corpus, column name to text. [text]

    Returns
    -------
    Layout or None
        The columns as whole numbers (a blank or non-integer cell is None). [—]
    """
    if not any(str(row.get(c) or "").strip() for c in COLUMNS):
        return None
    return Layout(*(_int(row.get(c)) for c in COLUMNS))


_NUM = r"\s*[=:]?\s*(\d+)"
_ATTENTION_DP = re.compile(r"dp[- _]?attention|attention[- _]?dp|enable[-_]dp[-_]attention|enable[-_]attention[-_]dp",
                           re.IGNORECASE)


def _first(pattern: str, text: str) -> int | None:
    m = re.search(pattern, text, re.IGNORECASE)
    return int(m.group(1)) if m else None


def from_prose(parallelism: str, settings: str = "", gpu_count: int | None = None) -> tuple[Layout | None, str]:
    """A ``parallelism`` cell's prose read into the grammar's columns, or (None, why).

    The grammar read (case ignored; ``=`` or ``:`` may follow a name):

    - ``TP n`` / ``tensor parallel n``: tensor parallel; ``PP n`` pipeline stages; ``EP n`` expert parallel;
    - ``DP n`` beside "attention DP" (or ``--enable-dp-attention``, ``enable_attention_dp`` in ``settings``): ``n``
      attention ranks; without it, ``n`` data-parallel replicas; ``× n``, ``x n`` or ``n replicas`` likewise replicas;
    - attention DP with no ``DP n`` (SGLang's ``--tp 8 --enable-dp-attention``): every GPU of the TP group a rank,
      so ``TP 8 + attention DP`` is 8 ranks of one GPU;
    - ``all n GPUs``: TP ``n``; ``EP n`` alone: TP ``n`` (the engines spread an MoE's experts over the attention's
      TP group); ``DP n`` alone: ``n`` replicas of one GPU;
    - replicas not stated: the GPU count ÷ a worker's GPUs, where the count is stated.

    Parameters
    ----------
    parallelism : str
        The row's ``parallelism`` column. [text]
    settings : str
        The row's ``settings`` column, read for an attention-DP flag only. [text]
    gpu_count : int, optional
        The row's ``gpu_count``. [GPUs]

    Returns
    -------
    tuple
        ``(Layout, '')``, or ``(None, why)`` naming the column and what it lacks. [—]

    Examples
    --------
    >>> from_prose("TP8 EP8 + attention DP", "", 8)[0]
    Layout(tp=1, pp=1, attention_dp=8, moe_tp=1, moe_ep=8, replicas=1)
    >>> from_prose("TP1 x DP8 (eight single-GPU replicas)", "", 8)[0]
    Layout(tp=1, pp=1, attention_dp=1, moe_tp=1, moe_ep=1, replicas=8)
    >>> from_prose("TP=4", "", 8)[0].replicas, from_prose("vendor-chosen", "", 8)[1]
    (2, "parallelism 'vendor-chosen': no TP, EP or DP degree stated")
    """
    text = str(parallelism or "")
    tp = _first(r"\bTP" + _NUM, text) or _first(r"tensor[- ]parallel(?:ism)?" + _NUM, text)
    pp = _first(r"\bPP" + _NUM, text) or _first(r"pipeline[- ]parallel(?:ism)?" + _NUM, text) or 1
    ep = _first(r"\bEP" + _NUM, text) or _first(r"expert[- ]parallel(?:ism)?" + _NUM, text)
    dp = _first(r"\bDP" + _NUM, text) or _first(r"data[- ]parallel(?:ism)?" + _NUM, text)
    replicas = (_first(r"(?:^|\s)[x×]\s*(\d+)\b", text) or _first(r"(\d+)\s+(?:single-GPU\s+)?replicas", text))
    all_gpus = _first(r"all\s+(\d+)\s+GPUs", text)
    attention = bool(_ATTENTION_DP.search(text + " " + str(settings or "")))
    if tp is None:
        tp = all_gpus or ep or (1 if dp else None)
    if tp is None:
        return None, f"parallelism {text!r}: no TP, EP or DP degree stated"
    if attention:
        ranks = dp or tp
        width = max(tp, ranks)
        # SGLang and TensorRT-LLM split the TP group into ranks: TP 8 + attention DP 8 is 8 ranks of one GPU
        attention_tp = width // ranks if width % ranks == 0 else None
        if attention_tp is None:
            return None, f"parallelism {text!r}: attention DP {ranks} does not divide TP {tp}"
        tp, adp = attention_tp, ranks
    else:
        adp = 1
        if dp and replicas is None:
            replicas = dp
    width = tp * adp
    moe_ep = ep or 1
    moe_tp = width // moe_ep if width % moe_ep == 0 else None
    if moe_tp is None:
        return None, f"parallelism {text!r}: EP {moe_ep} does not divide the worker's {width} GPUs"
    if replicas is None and gpu_count:
        per_worker = width * pp
        if gpu_count % per_worker:
            return None, f"parallelism {text!r}: a worker of {per_worker} GPUs does not divide gpu_count {gpu_count}"
        replicas = gpu_count // per_worker
    return Layout(tp, pp, adp, moe_tp, moe_ep, replicas or 1), ""


def in_xlplan_names(layout: Layout, moe: bool, gpu_count: int | None = None) -> tuple[int, int, bool, int, str]:
    """(GPUs in a replica, expert parallel, attention DP, replicas, '') in xlplan's names, or (0, 0, False, 0, why).

    Parameters
    ----------
    layout : Layout
        A layout in the grammar's columns (a blank ``pp`` or ``attention_dp`` is 1).
    moe : bool
        Whether the model is a mixture of experts (a dense model's ``moe_*`` are ignored).
    gpu_count : int, optional
        The system's GPUs where the row states them: replicas × a worker's GPUs must equal it. [GPUs]

    Returns
    -------
    tuple
        ``(width, ep, attention_dp, replicas, '')`` or zeros and why, naming the column and its value. [—]

    Examples
    --------
    >>> in_xlplan_names(Layout(1, 1, 8, 1, 8, 1), moe=True)
    (8, 8, True, 1, '')
    >>> in_xlplan_names(Layout(2, 1, 1, None, None, 4), moe=False, gpu_count=8)
    (2, 1, False, 4, '')
    """
    tp, pp, adp = layout.tp, 1 if layout.pp is None else layout.pp, 1 if layout.attention_dp is None else layout.attention_dp
    fail = (0, 0, False, 0)
    if tp is None or tp < 1:
        return (*fail, f"tp {layout.tp!r}: not a tensor-parallel degree (at least 1 GPU)")
    if pp != 1:
        return (*fail, f"pp {pp}: pipeline parallelism is not modelled")
    if adp < 1:
        return (*fail, f"attention_dp {adp!r}: not a layout (at least 1 rank)")
    if adp > 1 and tp > 1:
        return (*fail, (f"tp {tp} × attention_dp {adp}: attention ranks of more than one GPU are not modelled "
                        "(xlplan's attention data parallel is one GPU a rank)"))
    width = tp * adp
    replicas = layout.replicas
    if replicas is None:
        replicas = gpu_count // width if gpu_count and gpu_count % width == 0 else (1 if not gpu_count else None)
    if replicas is None or replicas < 1 or (gpu_count and replicas * width != gpu_count):
        return (*fail, (f"replicas {layout.replicas if layout.replicas is not None else '—'} × a worker of {width} GPUs "
                        f"is not gpu_count {gpu_count}: the layout does not fill the GPUs stated"))
    if not moe:
        return width, 1, adp > 1, replicas, ""
    moe_tp, moe_ep = layout.moe_tp, layout.moe_ep
    if moe_tp is None and moe_ep is None:
        return (*fail, "moe_tp, moe_ep: neither stated for an MoE model")
    if moe_ep is None:  # AIConfigurator infers the one not set from the attention's width (sdk/config.py:97-116)
        moe_ep = width // moe_tp if width % moe_tp == 0 else 0
    if moe_tp is None:
        moe_tp = width // moe_ep if width % moe_ep == 0 else 0
    if moe_tp * moe_ep != width:
        return (*fail, (f"moe_tp {layout.moe_tp or '—'} × moe_ep {layout.moe_ep or '—'} is not tp {tp} × attention_dp "
                        f"{adp} = {width}: the experts do not fill the attention's GPUs"))
    return width, moe_ep, adp > 1, replicas, ""
