"""The figures a workbook shows for one plan, as typed values: computed once by :func:`xlplan.excel.book.figures`, read by the writer.

The workbook writer (``xlplan.excel``) lays these out and never calls the solver: every cached value, every
what-if row and every decision sheet comes from here. The types hold the engine's own dataclasses (a
:class:`~xlplan.schema.steps.Paths` per tensor-parallel degree, the closed form's :class:`~xlplan.schema.steps.Solution`), so a
figure on a sheet is the figure the engine computed, not a second derivation of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the types only: this module computes nothing
    from xlplan.catalog.specs import GPUSpec, ModelSpec
    from xlplan.plan.scenario import Scenario
    from xlplan.plan.whatif_table import WhatIf
    from xlplan.schema.decisions import GPUOption, ScheduleOut
    from xlplan.schema.plan import Plan
    from xlplan.schema.result import PlanResult
    from xlplan.schema.steps import Paths, Solution, Traffic
    from xlplan.serving.step_inputs import Replica


@dataclass(frozen=True)
class WhatIfRow:
    """One what-if re-planned in full: every figure its row on tab 6 caches.

    ``whatif`` is None for a blank row (the user's own, empty). ``scenario`` is None when the what-if's inputs cannot
    run on the GPU (a dtype it lacks); ``solved`` is None when no tensor-parallel degree meets the promise.
    """

    whatif: WhatIf | None
    scenario: Scenario | None = None
    traffic: Traffic | None = None
    candidates: dict[int, Paths] = field(default_factory=dict)  # every TP degree the sheet has a column for
    solved: Solution | None = None
    prompt_sigma: float | None = None  # the lognormal's sigma through the row's prompt percentiles [1]
    prompt_p99_fit: float | None = None  # that lognormal's p99 [tokens]
    compute_dtype: str | None = None  # the tensor-core dtype of the peak used [text]
    demand_gpus: float | None = None  # compute demand ÷ (peak × MFU), before whole replicas [GPUs]
    objectives: dict[int, float] = field(default_factory=dict)  # TP objective of each feasible degree considered [1]
    tokens_per_month: float | None = None  # at the row's average utilisation [tokens/month]


@dataclass(frozen=True)
class ErlangRows:
    """The three Erlang C tables of 3 Constraints (coarse, middle, fine), as the tables' formulas pick their replica
    counts, with the engine's figures at each count."""

    service_s: float  # mean service time of one request on one replica [s]
    base: int  # fewest replicas above the offered load [replicas]
    step: int  # the coarse table's step [replicas]
    coarse: list[int]  # the coarse table's replica counts [replicas]
    mid_step: int  # the middle table's step: the coarse step ÷ the rows, rounded up [replicas]
    mid_start: int  # one coarse step below the first coarse row within the target, plus a middle step [replicas]
    mid: list[int]  # the middle table's replica counts [replicas]
    fine_start: int  # one middle step below the first middle row within the target, plus one [replicas]
    fine: list[int]  # the fine table's replica counts [replicas]
    waits: dict[int, tuple]  # replicas -> (servers per queue [servers], offered load per queue [erlangs], P(wait)
    #   [fraction], the Allen–Cunneen factor [1], wait at the percentile [s] or text, within the target [bool])


@dataclass(frozen=True)
class LengthFit:
    """One length's lognormal through its p50, p95 and p99, as 3 Constraints caches it."""

    median: float  # [tokens]
    sigma: float  # [ln tokens]
    p99_fitted: float  # [tokens]


@dataclass(frozen=True)
class Decisions:
    """What the Options and Schedule sheets show: every catalog GPU and format re-planned (the datacenter ones at the
    plan's weights format first, ranked; the rest after them, marked), the recommendation's lines, and the dated
    schedule."""

    options: list[GPUOption]
    recommendation: list[str]  # `xlplan compare`'s lines: the GPU line, the format line, missing prices, caveats
    schedule: ScheduleOut | None = None
    schedule_note: str = ""  # why there is no schedule, when there is none


@dataclass(frozen=True)
class Figures:
    """Everything a workbook shows for one plan, computed by the engine once.

    ``result`` is the plan's result (the Answer, the note's figures, ``verified`` when simulated); ``sol`` the closed
    form's solution the formulas reproduce; ``tp_paths`` the three paths at every tensor-parallel degree (the
    constraints tab's table); ``whatifs`` the rows of tab 6, standard ones first, then blank ones.
    """

    plan: Plan
    s: Scenario
    sol: Solution
    result: PlanResult
    model: ModelSpec
    gpu: GPUSpec
    tp_paths: dict[int, Paths]
    tp_objectives: dict[int, float]  # TP objective of each feasible degree [1]
    replica: Replica  # the chosen degree's replica: its step-time terms
    activation_gib: float  # the engine's activation peak at the chosen degree [GiB]
    memory_fraction: float  # the engine's memory fraction at the chosen degree: the plan's, else its default [fraction]
    sglang_tiers: tuple[tuple[float, int, int, int], ...]  # SGLang's defaults by memory: (from GiB, graph batch at TP < 4, at TP >= 4, chunk) [GiB], [sequences], [tokens]
    prefill_mfu: float  # [fraction]
    decode_mfu: float  # [fraction]
    decode_context_tokens: float  # a decode's mean context: its prompt and half its output [tokens]
    whatifs: tuple[WhatIfRow, ...]
    as_planned: WhatIfRow  # the plan as it stands: what a blank what-if row caches
    kv_bytes_per_token: float  # K and V of one token over every layer, in the plan's cache format [bytes/token]
    compute_dtype: str  # the tensor-core dtype whose peak the compute path uses [text]
    tp_billed: dict[int, float]  # GPUs on the bill at each tensor-parallel degree (inf where infeasible) [GPUs]
    api_ratio: tuple[float, str]  # the closed form's bill against the API's: (factor, the cheaper side) [1], [text]
    cost_api_ratio: tuple[float, str]  # the result's cost section against the API's, as api_ratio [1], [text]
    answer_api_ratio: tuple[float, str]  # the Answer's bill against the API's, as api_ratio [1], [text]
    gpu_derived: dict[str, tuple]  # GPU name -> what the engine derives from it (excel.common.GPU_DERIVED's order)
    efficiency_table: tuple[tuple[str, dict], ...]  # 'vendor|engine' -> its default efficiencies, fallbacks applied
    length_fits: dict[str, LengthFit]  # 'Prompt', 'Output' -> its lognormal through the plan's percentiles
    ttft_prompt_tokens: float  # the prompt at the promise's percentile, whose prefill the TTFT line times [tokens]
    prefill_chunk_tokens: float  # the most of one prompt a step carries: the budget, or the threshold where smaller [tokens]
    allen_cunneen_factor: float  # (arrival cv² + service cv²) ÷ 2 [1]
    erlang: ErlangRows  # the Erlang C tables' counts and the engine's figures at each
    decisions: Decisions
