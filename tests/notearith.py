"""Recompute every arithmetic statement a note prints from its printed operands, in interval arithmetic.

A printed decimal ``x`` with ``d`` places stands for ``[x − ½·10⁻ᵈ, x + ½·10⁻ᵈ]`` (``41%`` for [0.405, 0.415]); a
printed integer stands for ``±½`` from 100 up (``1,369`` TFLOP/s, ``730`` h) and as exact below (counts, ``$3``/h,
``40`` req/s), and an integer result for ``±½``. ``ms`` is thousandths of a second. A clause is a run of text between ``;``, ``, `` or ``: ``.
In it, ``a op b … = r`` checks that ``r``'s interval meets the operands' (× and ÷ bind before + and −); the printed
``r`` then starts the next expression (``600.0 × 0.281 = 168.5 ÷ 51.42 = 3.28``); ``… = r → n`` checks that ``n`` is a
whole number at or above ``r`` (rounding up); ``a ≤ b − c`` checks the inequality. Words are labels; ``TP 8`` and
parenthesised words ``(rented)`` are labels too. A clause whose numbers and operators do not form an expression before
its ``=`` or ``→`` is *unparsed*: the test fails on it, so a line that cannot be recomputed cannot be printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUM = re.compile(r"(?<![\w.])\$?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(%|\s?ms\b)?(?![\w])")
TOKEN = re.compile(NUM.pattern + r"|[×÷+−()=≤→]|[^\s×÷+−()=≤→]+")


@dataclass
class Finding:
    line: str
    clause: str
    why: str


def _number(m: re.Match) -> tuple[float, float, bool]:
    whole, frac, unit = m.group(1).replace(",", ""), m.group(2), (m.group(3) or "").strip()
    x = float(f"{whole}.{frac}" if frac else whole)
    half = 0.5 * 10.0 ** -len(frac) if frac else (0.5 if x >= 100 else 0.0)
    scale = {"%": 0.01, "ms": 1e-3}.get(unit, 1.0)
    return x * scale, half * scale, frac is None


def _clean(clause: str) -> str:
    clause = re.sub(r"\bTP \d+", " ", clause)
    clause = re.sub(r"per GPU at \d+% MFU", "per GPU", clause)  # the runbook's "÷ 395.6 per GPU at 40% MFU": a label
    while True:  # parenthesised groups with no operator in them are labels: "(rented)", "(1,024-token steps)"
        new = re.sub(r"\([^()×÷+−=]*\)", " ", clause)
        if new == clause:
            return clause
        clause = new


def tokens(clause: str) -> list[tuple]:
    out = []
    for m in TOKEN.finditer(_clean(clause)):
        if m.group(1) is not None:
            x, half, exact = _number(m)
            out.append(("n", x - half, x + half, exact, m.group(0)))
        elif m.group(0) in "×÷+−()=≤→":
            out.append((m.group(0),))
        # a word: a label, dropped
    return out


def _eval(expr: list[tuple]) -> tuple[float, float] | None:
    """Interval value of a well-formed expression of ("n", lo, hi, ...) and operators, else None."""
    pos = 0

    def atom():
        nonlocal pos
        if pos < len(expr) and expr[pos][0] == "(":
            pos += 1
            v = add()
            if v is None or pos >= len(expr) or expr[pos][0] != ")":
                return None
            pos += 1
            return v
        if pos < len(expr) and expr[pos][0] == "n":
            lo, hi = expr[pos][1], expr[pos][2]
            pos += 1
            return lo, hi
        return None

    def mul():
        nonlocal pos
        v = atom()
        while v is not None and pos < len(expr) and expr[pos][0] in "×÷":
            op = expr[pos][0]
            pos += 1
            w = atom()
            if w is None:
                return None
            if op == "×":
                c = [a * b for a in v for b in w]
            else:
                if w[0] <= 0 <= w[1]:
                    return None
                c = [a / b for a in v for b in w]
            v = (min(c), max(c))
        return v

    def add():
        nonlocal pos
        v = mul()
        while v is not None and pos < len(expr) and expr[pos][0] in "+−":
            op = expr[pos][0]
            pos += 1
            w = mul()
            if w is None:
                return None
            v = (v[0] + w[0], v[1] + w[1]) if op == "+" else (v[0] - w[1], v[1] - w[0])
        return v

    v = add()
    return v if pos == len(expr) else None


def _point(expr: list[tuple]) -> float | None:
    """The expression's value from its operands as printed (each interval's middle). [—]"""
    mid = [("n", (e[1] + e[2]) / 2, (e[1] + e[2]) / 2, *e[3:]) if e[0] == "n" else e for e in expr]
    v = _eval(mid)
    return None if v is None else v[0]


def _meets(v: tuple[float, float], r: tuple) -> bool:
    lo, hi = r[1], r[2]
    if r[3]:  # an integer result is rounded
        lo, hi = lo - 0.5, hi + 0.5
    slack = 1e-9 * max(abs(v[0]), abs(v[1]), 1.0)  # the float's own rounding
    return v[0] - slack <= hi and lo <= v[1] + slack


def check_clause(line: str, clause: str) -> tuple[int, list[Finding]]:
    """(statements checked, findings) for one clause."""
    toks = tokens(clause)
    checked, bad = 0, []
    expr: list[tuple] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t[0] in ("=", "→", "≤"):
            has_op = any(e[0] in "×÷+−" for e in expr)
            v = _eval(expr) if expr else None
            if t[0] == "=" and i + 1 < len(toks) and toks[i + 1][0] == "n":
                r = toks[i + 1]
                if has_op:
                    if v is None:
                        bad.append(Finding(line, clause, "operands before '=' do not form an expression"))
                    elif not _meets(v, r):
                        bad.append(Finding(line, clause, f"{v[0]:.6g}..{v[1]:.6g} does not meet the printed {r[4]}"))

                    checked += 1
                elif len([e for e in expr if e[0] == "n"]) > 1:
                    bad.append(Finding(line, clause, "several numbers and no operator before '='"))
                expr = [r]
                i += 2
                continue
            if t[0] == "→" and i + 1 < len(toks) and toks[i + 1][0] == "n":
                n = toks[i + 1]
                if has_op and v is None:
                    bad.append(Finding(line, clause, "operands before '→' do not form an expression"))
                elif v is not None and len(expr) >= 1:
                    if not (n[3] and n[1] >= v[0] - 1e-9):
                        bad.append(Finding(line, clause, f"→ {n[4]} is below {v[0]:.6g}"))
                    elif re.search(rf"→\s*{re.escape(n[4])}\s+replicas?\b", clause) and has_op:
                        # whole replicas: a reader redoing the sum from the printed figures rounds it up to n exactly
                        # ("3 ÷ 0.60 → 6 replicas" reads as 5 → 5, whatever 0.60 stood for)
                        p = _point(expr)
                        if p is not None and not ((n[1] + n[2]) / 2 - 1 < p - 1e-9):
                            bad.append(Finding(line, clause, f"→ {n[4]} replicas, but the printed operands give {p:.6g}"))
                    checked += 1
                expr = []
                i += 2
                continue
            if t[0] == "≤":
                rhs = []
                j = i + 1
                while j < len(toks) and toks[j][0] not in ("=", "→", "≤"):
                    rhs.append(toks[j])
                    j += 1
                w = _eval(rhs) if rhs else None
                if v is None or w is None:
                    bad.append(Finding(line, clause, "sides of '≤' do not form expressions"))
                elif not v[0] <= w[1] + 1e-9:
                    bad.append(Finding(line, clause, f"{v[0]:.6g} ≤ {w[1]:.6g} is false"))
                checked += 1
                expr = []
                i = j
                continue
            expr = []
            i += 1
            continue
        expr.append(t)
        i += 1
    return checked, bad


def check_note(text: str) -> tuple[int, list[Finding]]:
    """(statements checked, findings) over every line of a note."""
    checked, bad = 0, []
    for line in text.splitlines():
        if set(line.strip()) <= {"=", "-", "·", " "}:  # rules under headings
            continue
        for clause in re.split(r";\s|,\s|:\s", line):
            c, b = check_clause(line, clause)
            checked += c
            bad += b
    return checked, bad
