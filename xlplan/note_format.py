"""How the capacity note writes a figure: thousands, dollars, token volumes, seconds, counts, spare replicas.

Private helpers of :mod:`xlplan.note` and its sentence and arithmetic modules; each turns a figure of the result into
the words the note prints, and computes nothing.
"""

from __future__ import annotations


def _n(x: float, digits: int = 0) -> str:
    """1234.5 -> '1,234' (or '1,234.5' with one digit). [text]"""
    return f"{x:,.{digits}f}"


def _usd(x: float | None, digits: int = 0) -> str:
    """1234.5 -> '$1,234'; None -> '—'. [text]"""
    return "—" if x is None else f"${x:,.{digits}f}"


def _tokens(x: float) -> str:
    """A monthly token volume in millions or billions: '2.5 billion'. [text]"""
    return f"{x / 1e9:,.1f} billion" if x >= 1e9 else f"{x / 1e6:,.1f} million"


def _pct(d) -> str:
    """A length distribution as given and its fitted mean: 'p50 2,000 · p95 2,000 · p99 — (fitted mean 2,000)'. [text]"""
    p99 = "—" if d.p99 is None else _n(d.p99)
    return f"p50 {_n(d.p50)} · p95 {_n(d.p95)} · p99 {p99} (fitted mean {_n(d.mean)})"


def _count(n: int, noun: str) -> str:
    """'1 node', '3 nodes'. [text]"""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _spares(replicas: int, tp: int) -> str:
    """The spare GPUs as an operand: '1 spare replica' at TP 1, '8 (1 spare replica of TP 8)' above. [text]"""
    words = _count(replicas, "spare replica")
    return words if tp == 1 else f"{replicas * tp} ({words} of TP {tp})"


def _unsharded(tp: int, shards: int | None) -> str:
    """' × 8 ÷ 1 shard' where a replica's GPUs each hold more than their share of every cache (MLA, few KV heads). [text]"""
    if shards is None or shards == tp:
        return ""
    return f" × {tp} GPUs per replica ÷ {_count(shards, 'cache shard')}"


def _secs(x: float | None) -> str:
    """0.0234 -> '23 ms', 1.31 -> '1.31 s'. [text]"""
    if x is None:
        return "—"
    if x != x:  # NaN: no gap to time (a one-token output decodes no second token)
        return "undefined (one-token outputs)"
    return f"{x * 1000:,.0f} ms" if x < 1 else f"{x:,.2f} s"


def _seeds(v) -> str:
    """'seeds 1, 2, 3 (all must hold)', or 'seed 1' where one workload is all there is. [text]"""
    if len(v.seeds) > 1:
        return f"seeds {', '.join(map(str, v.seeds))} (all must hold)"
    return f"seed {v.seed}"


def _who_binds(binding: str, paths: list[str] | None) -> str:
    """'memory binds', 'memory and compute bind together', 'the plan becomes infeasible'. [text]"""
    if binding == "all":
        return "all three paths bind"
    if binding == "both" and paths:
        return f"{paths[0]} and {paths[1]} bind together"
    if binding == "infeasible":
        return "the plan becomes infeasible"
    if binding == "minimum replica":
        return "the minimum replica sets the fleet"
    return f"{binding} bind" + ("" if " and " in binding else "s")
