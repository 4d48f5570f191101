"""The engine's steps as spreadsheet-sized functions: numbers and catalog names in, one answer out.

The Excel functions in ``udfs/`` are one call each into this module, so a cell's
answer is the engine's. Each function composes the domain modules
(:mod:`~xlplan.concurrency`, :mod:`~xlplan.memory`, :mod:`~xlplan.compute`,
:mod:`~xlplan.latency`, :mod:`~xlplan.fleet`, :mod:`~xlplan.cost`) on catalog
look-ups; none has a formula of its own. Lengths are always given as
percentiles, so a superlinear cost sees the fitted distribution, never the mean.

The functions live by path in :mod:`~xlplan.cellwise_inputs` (catalog look-ups, lengths),
:mod:`~xlplan.cellwise_memory`, :mod:`~xlplan.cellwise_compute`, :mod:`~xlplan.cellwise_latency`,
:mod:`~xlplan.cellwise_fleet` and :mod:`~xlplan.cellwise_cost`; this module is their one namespace.

References
----------
Runbook, document 14, "From a forecast to a purchase order", steps 3-7.
"""

from __future__ import annotations

from xlplan.cellwise_compute import (  # noqa: F401  re-exported: the Excel functions call xlplan.cellwise.<name>
    compute_gpus,
    decode_tflops,
    peak_tflops,
    prefill_tflops,
)
from xlplan.cellwise_cost import (  # noqa: F401  re-exported: the Excel functions call xlplan.cellwise.<name>
    api_blended_usd_per_mtok,
    api_monthly_cost_usd,
    breakeven_tokens_per_month,
    monthly_cost_usd,
    tokens_per_month,
    usd_per_mtok,
)
from xlplan.cellwise_fleet import (  # noqa: F401  re-exported: the Excel functions call xlplan.cellwise.<name>
    billed_gpus,
    binding,
    fleet_sizes,
    max_rate_rps,
)
from xlplan.cellwise_inputs import (  # noqa: F401  re-exported: the Excel functions call xlplan.cellwise.<name>
    MODEL_DERIVED_FIELDS,
    gpu_field,
    gpu_spec,
    mean_length,
    model_field,
    model_spec,
    params,
)
from xlplan.cellwise_latency import (  # noqa: F401  re-exported: the Excel functions call xlplan.cellwise.<name>
    latency_gpus,
    max_decode_batch,
    queueing_replicas,
    time_in_system_s,
)
from xlplan.cellwise_memory import (  # noqa: F401  re-exported: the Excel functions call xlplan.cellwise.<name>
    gpu_memory_gib,
    kv_budget_gib,
    kv_bytes_per_token,
    kv_gib_per_conversation,
    memory_gpus,
    weights_gib,
)
