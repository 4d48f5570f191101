"""The decisions on a plan: the Answer's fleet (the runbook's method, the closed form, the simulation), the orchestrator
that plans, the inverse question (capacity), which hardware (compare), when to order and the dated cash (schedule),
and what a change of inputs changes (diff).
"""
