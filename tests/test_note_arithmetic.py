"""Every arithmetic line the note prints adds up from its printed operands, on every plan of the equality matrix.

The checker (tests/notearith.py) recomputes each ``a op b = r`` from the figures as printed, each standing for the
interval its rounding allows; a clause whose numbers cannot be read as an expression fails too, so a line that cannot
be recomputed cannot be printed.
"""

import pytest
from notearith import check_clause, check_note

from xlplan.report.note import render_markdown, render_text


def test_the_checker_accepts_the_runbooks_lines():
    # Runbook, document 14: 40 req/s × 15 s = 600 in flight; 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 = 3.14 → 4 GPUs
    # (600 × [0.2805, 0.2815] = [168.3, 168.9] meets 168.5; 168.5 ÷ 53.73 = 3.136 meets 3.14; 4 ≥ 3.14)
    line = "  Memory path  600.0 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU = 3.14 → 4 GPUs"
    assert check_clause(line, line) == (3, [])
    # 5 GPUs × $3/h × 730 h = $10,950 (the runbook's ~$11k)
    checked, bad = check_note("  Monthly bill  5 GPUs (rented) × $3/h × 730 h = $10,950 / month")
    assert checked == 1 and bad == []


def test_whole_replicas_from_printed_operands_add_up():
    assert check_note("  Row  0.597 req/s per replica, 3 ÷ 0.597 → 6 replicas at least")[1] == []


@pytest.mark.parametrize("line, why", [
    # 600 × 0.281 = 168.6, not 186.5: a transposed figure
    ("600.0 × 0.281 GiB = 186.5 GiB", "does not meet"),
    # 16 GPUs + 1 spare replica = 24 only at TP 8, and the line must say so (16 + 1 is 17)
    ("16 GPUs for the load (TP 8) + 1 spare replica = 24 with redundancy", "does not meet"),
    # 3.28 → 3: rounding a GPU count down
    ("168.5 GiB ÷ 51.42 GiB per GPU = 3.28 → 3 GPUs", "is below"),
    # two operands with no operator between them: "at 41% MFU of 989" is words, not arithmetic
    ("prefill 1,327 TFLOP/s at 41% MFU + decode 193 TFLOP/s of 989 TFLOP/s per GPU = 3.73", "do not form an expression"),
    # ms are thousandths: 300 × 14.64 ms = 4.39 s, not 43.9 s
    ("300.0 tokens × 14.64 ms = 43.92 s in system", "does not meet"),
    # a wait over the promise printed as within it: 1.2 ≤ 1 − 0.09 is false
    ("wait 1.20 s ≤ 1 s − 0.09 s prefill", "is false"),
    # whole replicas from the printed figures: 3 ÷ 0.60 = 5 exactly, so 5 replicas, not 6 (a new user's long-context
    # plan printed this where the rate was 0.5967: printed as 0.597, 3 ÷ 0.597 = 5.03 → 6 adds up)
    ("0.60 req/s per replica, 3 ÷ 0.60 → 6 replicas at least", "the printed operands give 5"),
])
def test_the_checker_catches_a_line_that_does_not_add_up(line, why):
    checked, bad = check_note("  Row  " + line)
    assert len(bad) == 1 and why in bad[0].why


@pytest.mark.slow
@pytest.mark.parametrize("render", [render_text, render_markdown])
def test_every_line_of_every_matrix_note_adds_up(matrix_results, render):
    for name, (_, r) in matrix_results.items():
        checked, bad = check_note(render(r))
        # the note's arithmetic lines: time in system, Little's Law, memory path, KV budget, compute path, queueing,
        # closed form, the fleet lines and the bills — at least 20 statements on every plan
        assert checked >= 20, (name, checked)
        assert bad == [], (name, [(b.why, b.clause) for b in bad])
