"""What ``xlplan plan --json`` prints: the plan's result led by what to order.

The result a plan computes (:class:`~xlplan.schema.result.PlanResult`) keeps the runbook's method's fleet and bill at
its top, as the note's method lines and the workbook's formulas read them. A script reading the JSON must not under-order
by taking ``fleet.with_redundancy`` from the method: schema version 2 (:class:`~xlplan.schema.result.PlanOutput`) puts
the Answer's fleet, bill and binding at the top, in the same shapes (:class:`~xlplan.schema.result.FleetOut`,
:class:`~xlplan.schema.result.CostOut`), and the runbook's under ``runbook_method``. Nothing is computed here: each
figure is the Answer's or the method's as the result holds it.
"""

from __future__ import annotations

from xlplan.schema.result import PlanOutput, PlanResult, RunbookMethodOut


def plan_output(r: PlanResult) -> PlanOutput:
    """The result as ``plan --json`` prints it (schema version 2).

    Parameters
    ----------
    r : PlanResult
        A plan's result (:func:`xlplan.decide.planner.plan`).

    Returns
    -------
    PlanOutput
        ``fleet``, ``cost``, ``binding`` and ``binding_paths`` the Answer's (its TP degree, load, with redundancy,
        purchased; its GPUs on the bill, monthly cost, $/M tokens, API comparison and ownership); the runbook's method's
        under ``runbook_method``; everything else as the result holds it.

    References
    ----------
    Issue 44 · "a script reading ``fleet.with_redundancy`` under-orders": the JSON leads with what to order.
    """
    a, cf = r.answer, r.closed_form
    data = r.model_dump()
    data["runbook_method"] = RunbookMethodOut(fleet=r.fleet, cost=r.cost, binding=r.binding, binding_paths=r.binding_paths)
    if a is not None:
        data["fleet"] = r.fleet.model_copy(update={
            "tp": a.tp, "load": a.load, "with_redundancy": a.with_redundancy, "purchased": a.purchased,
            "tp_reason": (f"the Answer's degree: {a.source}"
                          + ((f" at the closed form's TP {cf.tp}" if a.tp == cf.tp else
                              f" at TP {a.tp}, chosen by the configuration search (the closed form's is TP {cf.tp})")
                             if cf is not None else "")),
            "calibrated_low": None, "calibrated_high": None}).model_dump()
        data["cost"] = r.cost.model_copy(update={
            "billed_gpus": a.billed_gpus, "monthly_usd": a.monthly_usd, "usd_per_mtok": a.usd_per_mtok,
            "api_monthly_usd": a.api_monthly_usd, "breakeven_tokens_per_month": a.breakeven_tokens_per_month,
            "usd_per_mtok_by_utilisation": a.usd_per_mtok_by_utilisation, "ownership": a.ownership}).model_dump()
        data["binding"] = a.binding
        data["binding_paths"] = cf.binding_paths if cf is not None else r.binding_paths
    data.pop("basis", None)
    return PlanOutput.model_validate(data)
