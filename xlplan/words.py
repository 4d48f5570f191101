"""How the note and every text the CLI prints write a figure: thousands, dollars, token volumes, seconds, counts,
spare replicas, and which path binds.

Each turns a figure of a result into words and computes nothing, so one rule reads the same on every surface: the
capacity note (:mod:`xlplan.report.note`), the review note, the workbook's labels and the commands' messages.
"""

from __future__ import annotations

import re


def thousands(x: float, digits: int = 0) -> str:
    """1234.5 -> '1,234' (or '1,234.5' with one digit).

    Parameters
    ----------
    x : float
        The figure. [any unit]
    digits : int
        Decimals shown. [digits]

    Returns
    -------
    str
        The figure with thousands separators. [text]
    """
    return f"{x:,.{digits}f}"


def operand(x: float, holds, digits: int = 2, most: int = 6) -> str:
    """``x`` with the fewest decimals (from ``digits``, at most ``most``) for which ``holds(printed value)`` is true: an
    operand printed so that the line's arithmetic, redone from what is printed, gives the printed result.

    Parameters
    ----------
    x : float
        The operand. [any unit]
    holds : callable
        Whether the line's arithmetic, redone from the printed value, gives its printed result.
    digits : int
        The fewest decimals tried. [digits]
    most : int
        The most decimals tried. [digits]

    Returns
    -------
    str
        The operand as printed. [text]

    Examples
    --------

    >>> operand(0.5967, lambda b: -(-3 // b) == 6 and 3 / b > 5)  # 3 ÷ 0.60 = 5 would not round up to 6
    '0.597'
    """
    for d in range(digits, most + 1):
        shown = f"{x:,.{d}f}"
        if holds(float(shown.replace(",", ""))):
            return shown
    return f"{x:,.{most}f}"


def usd(x: float | None, digits: int = 0) -> str:
    """1234.4 -> '$1,234'; None -> '—'. Halves round up, as a spreadsheet's currency format shows them: 3 × $1.95 ×
    730 h = $4,270.50 reads $4,271 on the note as on the workbook's Summary (Python's own format gives $4,270).

    Parameters
    ----------
    x : float or None
        The amount. [USD]
    digits : int
        Decimals shown. [digits]

    Returns
    -------
    str
        '$1,234', or '—' for None. [text]

    Examples
    --------

    >>> usd(4270.5), usd(4270.49), usd(0.1575, 3), usd(None)
    ('$4,271', '$4,270', '$0.158', '—')
    """
    if x is None:
        return "—"
    from decimal import ROUND_HALF_UP, Decimal

    q = Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"${q:,.{digits}f}"


def token_volume(x: float) -> str:
    """A monthly token volume in millions or billions: '2.5 billion'.

    Parameters
    ----------
    x : float
        Tokens. [tokens]

    Returns
    -------
    str
        '2.5 billion' or '730.0 million'. [text]
    """
    return f"{x / 1e9:,.1f} billion" if x >= 1e9 else f"{x / 1e6:,.1f} million"


def lengths(d) -> str:
    """A length distribution as given and its fitted mean: 'p50 2,000 · p95 2,000 · p99 — (fitted mean 2,000)'.

    Parameters
    ----------
    d : LengthDistribution
        Percentiles ``p50``, ``p95``, ``p99`` (or None) and the fitted ``mean``. [tokens]

    Returns
    -------
    str
        The percentiles and the fitted mean. [text]
    """
    p99 = "—" if d.p99 is None else thousands(d.p99)
    return f"p50 {thousands(d.p50)} · p95 {thousands(d.p95)} · p99 {p99} (fitted mean {thousands(d.mean)})"


def count(n: float, noun: str, many: str | None = None, fmt: str = ",") -> str:
    """'1 node', '3 nodes', '1 GPU', '2 GPUs', '1 day': singular exactly where the number prints as 1 (``fmt`` is how
    it prints; ``many`` is the plural where adding 's' is not it).

    Parameters
    ----------
    n : float
        The count. [1]
    noun : str
        The singular noun.
    many : str, optional
        The plural, where adding 's' is not it.
    fmt : str
        How the number prints (a format spec).

    Returns
    -------
    str
        '1 GPU', '2 GPUs'. [text]
    """
    shown = f"{n:{fmt}}"
    return f"{shown} {noun if shown == '1' else many or noun + 's'}"


def verb(n: float, one: str, many: str) -> str:
    """The verb that agrees with a count: ``one`` ('keeps') for one, ``many`` ('keep') otherwise.

    Parameters
    ----------
    n : float
        The count. [1]
    one : str
        The verb for one.
    many : str
        The verb for any other count.

    Returns
    -------
    str
        ``one`` or ``many``. [text]
    """
    return one if n == 1 else many


PRICE_MISSING = "price missing"
"""What every surface shows for a price nobody knows (the catalog, compare, the Options sheet, the note): text, never
$0.00, which would read as free. [text]"""


def hourly_price(usd: float | None) -> str:
    """2.99 -> '$2.99/h'; None -> 'price missing' (a missing price is never printed as $0.00).

    Parameters
    ----------
    usd : float or None
        The hourly price. [USD/GPU-hour]

    Returns
    -------
    str
        '$2.99/h', or :data:`PRICE_MISSING`. [text]
    """
    return PRICE_MISSING if usd is None else f"${usd:,.2f}/h"


_OPAQUE_IDS = re.compile(r"(?:\bcode-index |\balso )?\bids? \d{6,}(?:,? (?:and )?\d{6,})*")
"""A run of code-search index ids, 'code-index ids 67391834167, 18095515282': numbers no reader can look up. [regex]"""


def readable_source(text: str) -> str:
    """A catalog entry's provenance as a person can follow it: the code-search index ids it cites dropped.

    The catalog keeps the ids (they are how its compilers found a file again); a reader has no index to look them up
    in, so the printed text drops them, with the brackets and separators left empty, and keeps every URL, repository,
    path, commit and quotation.

    Parameters
    ----------
    text : str
        A catalog ``source`` string, e.g. "... 71 in public code tables, code-index id 61509561483; GA102 ...".

    Returns
    -------
    str
        The same text without the ids: "... 71 in public code tables; GA102 ...". [text]
    """
    t = _OPAQUE_IDS.sub("\0", text)
    for pattern, repl in ((r"\0: ", ""),                              # "(id 123: 48 layers" -> "(48 layers"
                          (r"\s*\(\s*\0(?:\s*[;,]\s*\0)*\s*\)", ""),    # brackets holding ids alone
                          (r"\(\s*\0\s*[;,]\s*", "("),                  # "(id 1; note ..." -> "(note ..."
                          (r"\s*[;,]\s*\0(?:\s*[;,]\s*\0)*(?=\s*\))", ""),  # "(ECC on; ids 1, 2)" -> "(ECC on)"
                          (r"\s*(?:,|\band\b)\s*\0(?=\s*;)", ""),        # "tables, id 1; GA102" -> "tables; GA102"
                          (r"\s*\0", "")):
        t = re.sub(pattern, repl, t)
    return re.sub(r"\(code[- ]index\)", "(public code)", t)


def spares(replicas: int, tp: int) -> str:
    """The spare GPUs as an operand: '1 spare replica' at TP 1, '8 (1 spare replica of TP 8)' above.

    Parameters
    ----------
    replicas : int
        Spare replicas. [replicas]
    tp : int
        GPUs per replica. [GPUs]

    Returns
    -------
    str
        The spares as the note prints them. [text]
    """
    words = count(replicas, "spare replica")
    return words if tp == 1 else f"{replicas * tp} ({words} of TP {tp})"


def unsharded(tp: int, shards: int | None) -> str:
    """' × 8 ÷ 1 shard' where a replica's GPUs each hold more than their share of every cache (MLA, few KV heads).

    Parameters
    ----------
    tp : int
        GPUs per replica. [GPUs]
    shards : int or None
        The cache's shards across them (None: one per GPU). [shards]

    Returns
    -------
    str
        The operand, or '' where every GPU holds its share. [text]
    """
    if shards is None or shards == tp:
        return ""
    return f" × {count(tp, 'GPU')} per replica ÷ {count(shards, 'cache shard')}"


def seconds(x: float | None) -> str:
    """0.0234 -> '23 ms', 1.31 -> '1.31 s'.

    Parameters
    ----------
    x : float or None
        A time. [s]

    Returns
    -------
    str
        Milliseconds below a second, seconds above; '—' for None. [text]
    """
    if x is None:
        return "—"
    if x != x:  # NaN: no gap to time (a one-token output decodes no second token)
        return "undefined (one-token outputs)"
    return f"{x * 1000:,.0f} ms" if x < 1 else f"{x:,.2f} s"


ROUTED = {"least_loaded": "each to the least-loaded replica", "round_robin": "to the replicas in turn (round robin)",
          "random": "each to a replica at random",
          "least_kv": "each to the replica with the fewest KV tokens held and queued (least KV)"}
"""How the note says the simulated load balancer sent each request, by ``policy.routing``. [text]"""


def routed(routing: str) -> str:
    """'each to the least-loaded replica', 'to the replicas in turn (round robin)', 'each to a replica at random' or
    'each to the replica with the fewest KV tokens held and queued (least KV)'.

    Parameters
    ----------
    routing : str
        ``policy.routing``. [text]

    Returns
    -------
    str
        The load balancer as the note names it. [text]
    """
    return ROUTED[routing]


def seeds(v) -> str:
    """'seeds 1, 2, 3 (all must hold)', or 'seed 1' where one workload is all there is.

    Parameters
    ----------
    v : Verification
        A verification with its ``seeds`` and ``seed``.

    Returns
    -------
    str
        The seeds as the note names them. [text]
    """
    if len(v.seeds) > 1:
        return f"seeds {', '.join(map(str, v.seeds))} (all must hold)"
    return f"seed {v.seed}"


def who_binds(binding: str, paths: list[str] | None) -> str:
    """'memory binds', 'memory and compute bind together', 'the plan becomes infeasible'.

    Parameters
    ----------
    binding : str
        The binding constraint: a path's name, 'both', 'all', 'infeasible' or 'minimum replica'.
    paths : list of str, optional
        The two paths that bind together, for 'both'.

    Returns
    -------
    str
        The words for what binds. [text]
    """
    if binding == "all":
        return "all three paths bind"
    if binding == "both" and paths:
        return f"{paths[0]} and {paths[1]} bind together"
    if binding == "infeasible":
        return "the plan becomes infeasible"
    if binding == "minimum replica":
        return "the minimum replica sets the fleet"
    return f"{binding} bind" + ("" if " and " in binding else "s")


def kv_rule(basis: str, basis_gib: float, fraction: float, deductions, after: bool) -> str:
    """An engine's KV-budget rule with its operands as printed: '79.18 GiB visible × 0.835 − 14.96 GiB weights − 1.50 GiB
    SGLang reserve', or TensorRT-LLM's 'f × (basis − …)'. [text]

    Parameters
    ----------
    basis : str
        What the fraction is taken of ('visible', 'memory'). [text]
    basis_gib : float
        Its size. [GiB]
    fraction : float
        The engine's memory fraction, printed with two decimals, or three where it has them (SGLang's own). [fraction]
    deductions : iterable of (str, float)
        Each deduction's label and size. [GiB]
    after : bool
        Whether the fraction applies after the deductions (TensorRT-LLM).

    Returns
    -------
    str
        The rule's left-hand side, so ``= result`` after it adds up from what is printed. [text]

    Examples
    --------
    >>> kv_rule("visible", 79.18, 0.835, [("weights", 14.957), ("SGLang reserve", 1.5)], False)
    '79.18 GiB visible × 0.835 − 14.96 GiB weights − 1.50 GiB SGLang reserve'
    """
    f = f"{fraction:.2f}" if round(fraction, 2) == fraction else f"{fraction:.3f}"
    minus = " − ".join(f"{g:.2f} GiB {label}" for label, g in deductions)
    base = f"{basis_gib:.2f} GiB{' ' + basis if basis == 'visible' else ''}"
    return f"{f} × ({base} − {minus})" if after else f"{base} × {f} − {minus}"
