"""The typed result of a plan: every figure of the capacity note, with units.

Renderers (:mod:`xlplan.report.note`, the workbook writer) read this; it knows nothing
of how it is shown. ``PlanResult.model_dump()`` is what ``xlplan plan --json`` prints.
"""

from __future__ import annotations

from pydantic import Field

from xlplan.schema.contract_mix import ContractMixOut
from xlplan.schema.decisions import CashTotal, GPUOption, HardwareChoice, ScheduleMonth, ScheduleOut
from xlplan.schema.owning import OwnershipOut, PriceAge
from xlplan.schema.record import _Out

ContractMixOut.__module__ = __name__  # one public result model, named xlplan.schema.contract_mix.ContractMixOut as the others are

# The result models are one public interface wherever their code lives: each is named xlplan.schema.result.<Model>, as reprs,
# pickles and the conventions' meta-test (tests/test_conventions.py, which reads this module) see it.
for _model in (CashTotal, GPUOption, HardwareChoice, ScheduleMonth, ScheduleOut, OwnershipOut, PriceAge):
    _model.__module__ = __name__
del _model


class LengthOut(_Out):
    """A length distribution as given and as fitted."""

    p50: float = Field(description="Median. [tokens]")
    p95: float = Field(description="95th percentile. [tokens]")
    p99: float | None = Field(description="99th percentile, if given. [tokens]")
    mean: float = Field(description="Mean of the fitted lognormal. [tokens]")
    second_moment: float = Field(description="E[n²] of the fitted lognormal. [tokens²]")


class InputsOut(_Out):
    """Section 1: the inputs, attributed."""

    peak_rps: float = Field(description="Peak arrival rate. [requests/s]")
    prompt_tokens: LengthOut = Field(description="Prompt lengths. [tokens]")
    output_tokens: LengthOut = Field(description="Output lengths. [tokens]")
    average_utilisation: float = Field(description="Average load as a fraction of peak. [fraction]")
    prefix_reuse: float = Field(description="Prefix-cache fraction of prompt compute. [fraction]")
    ttft_s: float = Field(description="Time-to-first-token target. [s]")
    itl_s: float = Field(description="Inter-token target. [s/token]")
    percentile: float = Field(description="Percentile of the targets. [percent]")
    owners: dict[str, str] = Field(description="Owner of each input. [text]")


class ModelOut(_Out):
    """Section 2: the model and precision."""

    name: str = Field(description="Model. [text]")
    params_total: int = Field(description="Parameters in memory, derived from the config. [parameters]")
    params_active: int = Field(description="Parameters per token (FLOPs). [parameters]")
    weights_dtype: str = Field(description="Weight precision. [text]")
    kv_dtype: str = Field(description="KV-cache precision. [text]")
    weights_gib: float = Field(description="Weight footprint of the whole model. [GiB]")
    kv_bytes_per_token: float = Field(description="KV cache per token, all layers full-length. [bytes/token]")
    gpu: str = Field(description="GPU. [text]")
    gpu_memory_gib: float = Field(description="GPU memory as the driver reports it. [GiB]")
    compute_dtype: str = Field(description="Tensor-core dtype of the peak used. [text]")
    peak_tflops: float = Field(description="Peak dense throughput per GPU. [TFLOP/s]")
    hbm_tbps: float = Field(description="Memory bandwidth per GPU. [TB/s]")
    sources: dict[str, str] = Field(description="Where the model and GPU figures come from. [text]")


class MemoryOut(_Out):
    """Step 4: the memory path."""

    convention: str = Field(description="'paged' (p50 + p50) or 'worst_case' (p99 + p99). [text]")
    conversation_tokens: float = Field(description="Length the cache is sized at. [tokens]")
    kv_gib_per_conversation: float = Field(description="KV cache per conversation. [GiB]")
    kv_gib_total: float = Field(description="KV cache of every conversation in flight. [GiB]")
    weights_gib_per_gpu: float = Field(description="Weights on each GPU at the chosen TP. [GiB]")
    kv_budget_gib_per_gpu: float = Field(description="KV room per GPU: memory × utilisation − weights − overhead. [GiB]")
    overhead_gib: float = Field(description="Activation and runtime overhead per GPU. [GiB]")
    kv_budget_basis: str = Field(default="memory", description="What the engine's rule starts from: 'memory' (as the driver reports it, the runbook's) or 'visible' (what CUDA can allocate). [text]")
    kv_budget_basis_gib: float | None = Field(default=None, description="That memory per GPU. None in results written before it was carried. [GiB]")
    kv_budget_utilisation: float | None = Field(default=None, description="The engine's memory fraction the rule takes. [fraction]")
    kv_budget_deductions: list[tuple[str, float]] = Field(default_factory=list, description="What the rule deducts, (label, GiB): weights, overhead or activation peak, non-torch, reserve. [GiB]")
    kv_budget_fraction_after: bool = Field(default=False, description="The fraction applies after the deductions (TensorRT-LLM's free_gpu_memory_fraction). [bool]")
    conversations_per_replica: float = Field(description="Conversations one replica's cache holds. [conversations]")
    kv_shards: int | None = Field(default=None, description="Ways each conversation's cache splits across a replica: the TP degree, or fewer (1 for MLA, the KV heads where TP exceeds them); the memory path is kv_gib_total ÷ budget × TP ÷ kv_shards. None in results written before it was carried. [GPUs]")
    gpus_exact: float = Field(description="GPUs before rounding. [GPUs]")
    gpus: int = Field(description="GPUs in whole replicas. [GPUs]")


class ComputeOut(_Out):
    """Step 5: the compute path."""

    prefill_tflops: float = Field(description="Prefill demand at peak. [TFLOP/s]")
    decode_tflops: float = Field(description="Decode demand at peak. [TFLOP/s]")
    demand_tflops: float = Field(description="Total demand. [TFLOP/s]")
    tflops_per_gpu: float = Field(description="Peak × MFU per GPU. [TFLOP/s]")
    mfu: float = Field(description="Model FLOPs utilisation. [fraction]")
    prefill_mfu: float = Field(default=0.0, description="MFU used for prefill (the MFU unless calibrated). [fraction]")
    decode_mfu: float = Field(default=0.0, description="MFU used for decode (the MFU unless calibrated). [fraction]")
    gpus_exact: float = Field(description="GPUs before rounding. [GPUs]")
    gpus: int = Field(description="GPUs in whole replicas. [GPUs]")


class LatencyOut(_Out):
    """The latency check: decode step against the inter-token target, prefill against TTFT."""

    max_decode_batch: float = Field(description="Largest batch per replica within the inter-token target. [conversations]")
    decode_step_s: float = Field(description="Decode step at the batch each load replica carries. [s]")
    ttft_p95_s: float = Field(description="Prefill of a p95 prompt alone on a replica. [s]")
    ttft_ok: bool = Field(description="Whether that meets the TTFT target. [bool]")
    gpus_exact: float = Field(description="GPUs before rounding. [GPUs]")
    gpus: int = Field(description="GPUs in whole replicas. [GPUs]")


class QueueingOut(_Out):
    """The queueing path: the replicas that keep the wait for a slot within the TTFT promise (xlplan.plan.queue_path)."""

    step_budget_tokens: int = Field(description="Tokens one step may carry: the plan's budget, else 512-token chunks. [tokens]")
    slots_per_replica: float = Field(description="Decodes one step carries within the inter-token target, prefill share included. [sequences]")
    step_s: float = Field(description="The step at that batch. [s]")
    slot_rps_per_replica: float = Field(default=0.0, description="Requests the decode slots serve per second: slots ÷ (mean output × step). [requests/s]")
    prefill_step_s: float = Field(default=0.0, description="A step carrying one prompt chunk beside the decodes. [s]")
    prefill_tail_rps_per_replica: float | None = Field(default=None, description="The rate at which the promise's tail (1 − p) of steps carry a chunk, where that step is over the inter-token target; None when it is within it. [requests/s]")
    tail_replicas: int = Field(default=0, description="Replicas the long-prefill-step limit needs: peak rate ÷ that rate, rounded up (0 when it never binds). [replicas]")
    service_rps_per_replica: float = Field(description="Requests one replica's slots serve per second at the promise: the queue's service rate. [requests/s]")
    offered_erlangs: float = Field(description="Peak rate ÷ that service rate: replicas busy on average. [erlangs]")
    prefill_at_percentile_s: float = Field(description="Prefill of a prompt at the promise's percentile on an idle replica. [s]")
    wait_target_s: float = Field(description="The TTFT promise less that prefill: the longest wait for a slot allowed. [s]")
    replicas: int | None = Field(description="The fewest replicas keeping the wait within the target (Erlang C, as routing sets the queue); None: no fleet can. [replicas]")
    gpus: int | None = Field(description="Those replicas × TP. [GPUs]")
    wait_at_percentile_s: float = Field(description="The wait for a slot at the percentile on those replicas. [s]")
    utilisation_at_load: float = Field(description="Offered load ÷ the closed form's load replicas: above 1 the queue grows without bound. [fraction]")
    prefill_mean_s: float = Field(default=0.0, description="E[S]: a prompt's prefill on an idle replica, over the prompt distribution. [s]")
    prefill_second_moment_s2: float = Field(default=0.0, description="E[S²] of that prefill. [s²]")
    prefill_queue_replicas: int = Field(default=0, description="Replicas each replica's own prefill queue needs (M/G/1, Pollaczek–Khinchine) where a prompt at the percentile fits one step, or under round-robin or random routing; 0 otherwise. [replicas]")
    prefill_wait_scale: float = Field(default=1.0, description="Kingman's factor (cₐ² + cₛ²) ÷ (1 + cₛ²) on each replica's prefill wait at prefill_queue_replicas, for the arrivals routing sends it: 1 under least-loaded routing (M/G/1). [1]")
    routing: str = Field(default="least_loaded", description="The queue the wait is taken from (policy.routing): 'least_loaded' or 'least_kv', the replicas as one queue's servers; 'round_robin' or 'random', each replica an M/M/c queue of its own over its whole slots at the peak rate ÷ replicas. [text]")
    budget_options: list[tuple[int, int | None]] = Field(default_factory=list, description="The path's replicas at each step budget compared, (tokens, replicas or None), smallest budget first. [tokens], [replicas]")
    best_step_budget_tokens: int | None = Field(default=None, description="The step budget needing the fewest replicas (ties: the plan's own, else the largest); None when none keeps the wait. [tokens]")
    budget_set_by_plan: bool = Field(default=False, description="Whether the plan file sets max_num_batched_tokens (then it is respected, and the others are shown for comparison). [bool]")


class TPOption(_Out):
    """One tensor-parallel degree the planner considered."""

    tp: int = Field(description="GPUs per replica. [GPUs]")
    feasible: bool = Field(description="Weights fit and the promise can be met. [bool]")
    kv_budget_gib_per_gpu: float = Field(description="KV room per GPU. [GiB]")
    kv_shards: int | None = Field(default=None, description="Ways each conversation's cache splits across the replica. None in results written before it was carried. [GPUs]")
    memory_gpus: float = Field(description="Memory path. [GPUs]")
    compute_gpus: float = Field(description="Compute path. [GPUs]")
    latency_gpus: float = Field(description="Latency path. [GPUs]")
    load: float = Field(description="Load. [GPUs]")


class FleetAt(_Out):
    """The fleet at one end of the calibrated efficiencies."""

    efficiencies: dict[str, float] = Field(description="Prefill MFU, decode MFU and bandwidth efficiency used. [fraction]")
    feasible: bool = Field(description="Whether the plan can be met at these efficiencies. [bool]")
    load: int | None = Field(description="Load. [GPUs]")
    with_redundancy: int | None = Field(description="With redundancy. [GPUs]")
    purchased: int | None = Field(description="Purchased. [GPUs]")
    binding: str | None = Field(description="Binding constraint. [text]")


class FleetOut(_Out):
    """Step 6: three numbers, not one."""

    tp: int = Field(description="GPUs per replica. [GPUs]")
    tp_reason: str = Field(description="Why this tensor-parallel degree. [text]")
    load: int = Field(description="GPUs the peak needs. [GPUs]")
    redundancy_replicas: int = Field(description="Spare replicas (N+k). [replicas]")
    with_redundancy: int = Field(description="Load plus redundancy. [GPUs]")
    gpus_per_node: int = Field(description="Purchasing unit. [GPUs]")
    purchased: int = Field(description="Rounded up to whole purchasing units. [GPUs]")
    calibrated_low: FleetAt | None = Field(default=None, description="At the low end of the calibrated efficiencies (more GPUs).")
    calibrated_high: FleetAt | None = Field(default=None, description="At the high end of the calibrated efficiencies (fewer GPUs).")


class UtilisationCost(_Out):
    """$/M tokens at one average utilisation."""

    utilisation: float = Field(description="Average load as a fraction of peak. [fraction]")
    usd_per_mtok: float = Field(description="Cost per million tokens. [USD/Mtok]")


class CostOut(_Out):
    """Step 7: the bill and the honest comparison."""

    billing: str = Field(description="How the bill's GPUs are paid for: 'rented' (per GPU, the fleet with redundancy), 'rented by the node' (whole units) or 'owned' (bought, whole units). [text]")
    billed_gpus: int = Field(description="GPUs on the bill. [GPUs]")
    usd_per_gpu_hour: float = Field(description="Price. [USD/GPU-hour]")
    hours_per_month: float = Field(description="Billed hours. [h/month]")
    monthly_usd: float = Field(description="Monthly infrastructure cost, fixed. [USD/month]")
    tokens_per_month: float = Field(description="Tokens served at the average utilisation. [tokens/month]")
    usd_per_mtok: float = Field(description="Cost per million tokens of all kinds. [USD/Mtok]")
    api_usd_per_mtok_blended: float | None = Field(description="API price at this input/output mix. [USD/Mtok]")
    api_monthly_usd: float | None = Field(description="The same traffic on the API. [USD/month]")
    ops_usd_per_month: float = Field(description="Engineering/on-call cost counted in the break-even. [USD/month]")
    breakeven_tokens_per_month: float | None = Field(description="Volume above which self-hosting wins. [tokens/month]")
    usd_per_mtok_by_utilisation: list[UtilisationCost] = Field(description="$/M tokens at 10%…100% utilisation.")
    api_provider: str = Field(default="", description="Whose API prices the comparison uses (the plan's, or a size-class match, named). [text]")
    ownership: OwnershipOut | None = Field(default=None, description="Buy: what owning costs, and when it pays back against renting.")
    price_ages: list[PriceAge] = Field(default_factory=list, description="Each dated price the bill uses, its age and whether it is older than the plan allows.")


class Sensitivity(_Out):
    """One what-if: a full re-plan with one input changed."""

    change: str = Field(description="What changed. [text]")
    feasible: bool = Field(description="Whether the changed plan can be met at all. [bool]")
    load: int | None = Field(description="Load. [GPUs]")
    fleet: int | None = Field(description="Fleet with redundancy. [GPUs]")
    purchased: int | None = Field(description="Purchased. [GPUs]")
    binding: str | None = Field(description="Binding constraint. [text]")
    binding_paths: list[str] | None = Field(default=None, description="The paths that need the most GPUs. [text]")
    monthly_usd: float | None = Field(description="Monthly cost. [USD/month]")
    usd_per_mtok: float | None = Field(description="Cost per million tokens. [USD/Mtok]")
    note: str = Field(default="", description="Why it is infeasible, if it is. [text]")


class Breakpoint(_Out):
    """Where one input, moved in one direction, changes the answer."""

    variable: str = Field(description="Input moved: peak_rps, prompt_p95, output_p50 or itl_s. [text]")
    unit: str = Field(description="Its unit. [text]")
    direction: str = Field(description="'up' or 'down'. [text]")
    current: float = Field(description="Its value in the plan. [unit]")
    fleet_step_at: float | None = Field(description="Value at which the purchase grows by one unit (None: not within the search range). [unit]")
    purchased_after: int | None = Field(description="Purchased GPUs just past that value (None if the plan becomes infeasible). [GPUs]")
    binding_flip_at: float | None = Field(description="Value at which the binding constraint changes. [unit]")
    binding_after: str | None = Field(description="Binding constraint just past that value ('infeasible' if the plan cannot be met there). [text]")
    binding_paths_after: list[str] | None = Field(default=None, description="The paths that bind just past that value. [text]")


class SimulatedPoint(_Out):
    """One simulated fleet size at peak."""

    gpus: int = Field(description="GPUs serving the peak. [GPUs]")
    replicas: int = Field(description="Replicas of TP GPUs. [replicas]")
    ttft_p95_s: float = Field(description="p95 time to first token. [s]")
    itl_p95_s: float = Field(description="p95 inter-token gap, pooled over every token gap. [s]")
    ttft_at_percentile_s: float = Field(description="TTFT at the promise's percentile. [s]")
    itl_at_percentile_s: float = Field(description="Inter-token gap at the promise's percentile. [s]")
    meets_promise: bool = Field(description="Both within the promise at its percentile. [bool]")
    mean_in_flight: float = Field(description="Time-average requests in the system. [requests]")
    kv_utilisation_mean: float = Field(description="Time-average share of the KV cache in use. [fraction]")
    preemptions: int = Field(description="Sequences evicted and recomputed. [requests]")
    stable: bool = Field(description="p95 TTFT over the two halves of the run agree within 10%, or its rise carried on for twice the run keeps the target. [bool]")


class VerifiedOut(_Out):
    """The fleet simulated at peak: does it keep the promise under random arrivals? (engine values beside the runbook's)"""

    arrivals: str = Field(description="How requests arrive: 'Poisson arrivals', 'bursty arrivals (squared CV 4)', or a replayed log. [text]")
    routing: str = Field(default="least_loaded", description="How the simulated load balancer sent each request (policy.routing): 'least_loaded', 'round_robin', 'random' or 'least_kv'. [text]")
    sampled_replicas: int | None = Field(default=None, description="Replicas each run simulated for its fleet, serving their routed share of the peak (a fleet past 128 replicas at the search's start); null: every replica. A replica lost shows as the survivors' share rising. [replicas]")
    burst_cv2: float = Field(description="Squared coefficient of variation of inter-arrival times (1: Poisson). [—]")
    minutes: float = Field(description="Simulated arrivals per run, warm-up included. [minutes]")
    seed: int = Field(description="Random seed: every fleet size sees the same requests. [—]")
    chunk_tokens: int = Field(description="The step's token budget scheduled (decodes plus prefill chunks). [tokens]")
    percentile: float = Field(description="The promise's percentile. [percent]")
    runbook_load: int = Field(description="The runbook's load, for comparison. [GPUs]")
    runbook_with_redundancy: int = Field(description="The runbook's load plus redundancy. [GPUs]")
    meets_promise_at_load: bool = Field(description="Whether the runbook's load keeps the promise when simulated. [bool]")
    load: int | None = Field(description="Verified load: the fewest GPUs (whole replicas) that keep the promise (None: none up to searched_up_to). [GPUs]")
    with_redundancy: int | None = Field(description="The fewest GPUs (whole replicas) that keep the promise with the plan's redundancy replicas lost at the start of the peak (None: none up to searched_up_to); the verified load when the plan keeps no redundancy. [GPUs]")
    ttft_p95_s: float | None = Field(description="p95 TTFT at the verified load. [s]")
    itl_p95_s: float | None = Field(description="p95 inter-token gap at the verified load. [s]")
    searched_up_to: int = Field(description="The largest fleet simulated. [GPUs]")
    failure_gpus: int = Field(description="GPUs left when one replica of the runbook's fleet with redundancy fails at the start of the peak. [GPUs]")
    failure_meets_promise: bool = Field(description="Whether the promise holds after that loss (its requests re-queued to prefill again). [bool]")
    failure_ttft_p95_s: float = Field(description="p95 TTFT after the loss. [s]")
    failure_itl_p95_s: float = Field(description="p95 inter-token gap after the loss. [s]")
    curve: list[SimulatedPoint] = Field(description="Every fleet size simulated, fewest GPUs first.")
    sentence: str = Field(description="What the simulation says, in words. [text]")
    failure_sentence: str = Field(description="The failure check, in words. [text]")
    seeds: list[int] = Field(default_factory=list, description="Seeds the verified load and the redundancy check must keep the promise on, all of them (one for a replayed log); the other runs use the first. [—]")
    redundancy_lost_replicas: int = Field(default=1, description="Replicas lost at the start of the peak in the redundancy check: the plan's redundancy. [replicas]")
    redundancy_ttft_p95_s: float | None = Field(default=None, description="p95 TTFT of the fleet with redundancy after the loss. [s]")
    redundancy_itl_p95_s: float | None = Field(default=None, description="p95 inter-token gap of the fleet with redundancy after the loss. [s]")
    redundancy_sentence: str = Field(default="", description="The redundancy check, in words: how many keep the promise with the replicas lost. [text]")
    schedule: str = Field(default="mixed", description="How each simulated replica schedules its steps: 'mixed' (decodes first, then prefill chunks beside them in the same step: vLLM, TensorRT-LLM, the runbook's) or 'prefill_first' (SGLang's default: a step of prefill alone while the running requests wait). [text]")


class ClosedFormOut(_Out):
    """The closed-form fleet: the largest of the memory (at the achieved time in system), compute, latency and queueing
    paths at the step budget deployed (xlplan.plan.closed_form). Beside the runbook's method, not instead of it."""

    step_budget_tokens: int = Field(description="The step budget deployed and simulated. [tokens]")
    budget_chosen_by: str = Field(description="'plan' (the plan file sets it), 'queueing path' (the budget needing the fewest replicas) or 'default' (the simulation's own ties for the fewest). [text]")
    default_step_budget_tokens: int = Field(description="The step budget the plan would run without the decision: the plan's or engine's, else 512-token chunks. [tokens]")
    default_budget_queueing_gpus: int | None = Field(default=None, description="The queueing path at that default budget (None: no fleet keeps the wait, or not compared). [GPUs]")
    achieved_step_s: float = Field(description="The step at the fleet's own batch, at most the inter-token target. [s]")
    achieved_batch: float = Field(description="Decodes per replica at that step, by Little's Law. [sequences]")
    time_in_system_s: float = Field(description="Mean output × the achieved step: how long a request holds its cache. [s]")
    concurrency: float = Field(description="Peak rate × that time. [requests]")
    kv_gib_total: float = Field(description="Concurrency × KV per conversation. [GiB]")
    memory_gpus_exact: float = Field(description="The cache the fleet's requests hold at its own achieved time, in GPUs before rounding. [GPUs]")
    memory_gpus: int = Field(description="The memory path: the fewest whole replicas whose caches hold what their own achieved time in system implies. [GPUs]")
    compute_gpus: int = Field(description="The compute path (the runbook's). [GPUs]")
    latency_gpus: int = Field(description="The latency check (the runbook's). [GPUs]")
    queueing_gpus: int | None = Field(description="The queueing path at the deployed budget; None: no fleet keeps the wait within the TTFT target. [GPUs]")
    feasible: bool = Field(description="Whether the queueing path has an answer. [bool]")
    tp: int = Field(description="GPUs per replica. [GPUs]")
    load: int = Field(description="The largest path. [GPUs]")
    with_redundancy: int = Field(description="Load plus the plan's spare replicas. [GPUs]")
    purchased: int = Field(description="Rounded up to whole purchasing units. [GPUs]")
    binding: str = Field(description="The path that needs the most GPUs ('memory', 'compute', 'latency', 'queueing'), ties joined by ' and ', or 'minimum replica'. [text]")
    binding_paths: list[str] = Field(description="The paths tied for the most. [text]")


class AlternativeOut(_Out):
    """A setting the configuration search tried beside the Answer's, with its bill and why it lost."""

    tp: int = Field(description="GPUs per replica. [GPUs]")
    step_budget_tokens: int = Field(description="The step budget at that degree. [tokens]")
    settings: str = Field(description="The setting in the engine's own flag names. [text]")
    max_num_seqs: int | None = Field(default=None, description="The sequence cap to deploy at this setting (vLLM --max-num-seqs; at most the step budget); None: no cap (engine 'runbook' where nothing was searched). [sequences]")
    expert_parallel: int = Field(default=1, description="GPUs of a replica its experts are spread over at this setting (MoE). [GPUs]")
    attention_data_parallel: bool = Field(default=False, description="Whether this setting runs DP attention (each rank holds its own sequences' KV cache). [bool]")
    long_prefill_token_threshold: int | None = Field(default=None, description="The most prompt tokens one request prefills in a step at this setting (vLLM --long-prefill-token-threshold); None: no threshold. [tokens]")
    closed_form_load: int = Field(description="The closed form's GPUs for the load at this setting. [GPUs]")
    simulated: bool = Field(description="Whether the search simulated this setting. [bool]")
    load: int | None = Field(default=None, description="GPUs the simulation found keeping the promise (None: not simulated, or none found). [GPUs]")
    with_redundancy: int | None = Field(default=None, description="The fleet with redundancy the simulation found (None: not simulated, or none found). [GPUs]")
    billed_gpus: int | None = Field(default=None, description="GPUs on the bill of that fleet (None: not simulated, or none found). [GPUs]")
    monthly_usd: float | None = Field(default=None, description="The bill of that fleet (None: not simulated, or none found; the closed form's fleet is not a bill any simulation backs). [USD/month]")
    why: str = Field(description="Why it is not the Answer. [text]")


class AnswerOut(_Out):
    """The Answer line: the verified fleet where the plan was simulated, else the closed form; and the bill it pays."""

    source: str = Field(description="'verified' (simulated at peak on every seed) or 'closed form' (plan --no-verify, or no fleet verified). [text]")
    tp: int = Field(description="GPUs per replica. [GPUs]")
    load: int = Field(description="GPUs the peak needs. [GPUs]")
    with_redundancy: int = Field(description="GPUs that keep the promise with the plan's redundancy replicas lost (verified), or load plus the spare replicas (closed form). [GPUs]")
    purchased: int = Field(description="Rounded up to whole purchasing units. [GPUs]")
    binding: str = Field(description="The closed form's binding path. [text]")
    step_budget_tokens: int = Field(description="The step budget to deploy (policy.max_num_batched_tokens). [tokens]")
    closed_form_load: int | None = Field(default=None, description="The closed form's GPUs for the load at the Answer's setting (its TP degree and step budget), beside the verified load. [GPUs]")
    settings: str = Field(default="", description="The settings to deploy in the engine's own flag names: the TP degree, the step budget, the sequence cap and the parallel layout. [text]")
    max_num_seqs: int | None = Field(default=None, description="The sequence cap to deploy at this setting (vLLM --max-num-seqs; at most the step budget); None: no cap (engine 'runbook' where nothing was searched). [sequences]")
    expert_parallel: int = Field(default=1, description="GPUs of a replica its experts are spread over at this setting (MoE). [GPUs]")
    attention_data_parallel: bool = Field(default=False, description="Whether this setting runs DP attention (each rank holds its own sequences' KV cache). [bool]")
    long_prefill_token_threshold: int | None = Field(default=None, description="The most prompt tokens one request prefills in a step at this setting (vLLM --long-prefill-token-threshold); None: no threshold. [tokens]")
    alternatives: list[AlternativeOut] = Field(default_factory=list, description="The next cheapest settings the configuration search tried (at most two), with their bills and why they lost; empty where nothing was simulated.")
    billed_gpus: int = Field(description="GPUs on the bill: with redundancy (rented per GPU) or purchased (rented per node, or bought). [GPUs]")
    paid_as: str = Field(default="rent_per_gpu", description="How the fleet is paid for (costs.mode): 'rent_per_gpu', 'rent_per_node' or 'buy'. [text]")
    order: str = Field(default="", description="What to order, as the Answer line says it: 'rent 7 GPUs', 'rent 1 node of 8', 'buy 1 node of 8'. [text]")
    monthly_usd: float = Field(description="Monthly cost of that fleet: billed GPUs × price × hours (+ the owned fleet's fixed costs). [USD/month]")
    usd_per_mtok: float = Field(description="Cost per million tokens at the average utilisation. [USD/Mtok]")
    api_monthly_usd: float | None = Field(default=None, description="The same traffic on the API. [USD/month]")
    breakeven_tokens_per_month: float | None = Field(default=None, description="Volume above which self-hosting this fleet wins. [tokens/month]")
    usd_per_mtok_by_utilisation: list[UtilisationCost] = Field(default_factory=list, description="$/M tokens of this fleet at 10%…100% utilisation.")
    ownership: OwnershipOut | None = Field(default=None, description="Bought: what owning this fleet costs, and its payback against renting the same units.")


FIGURES_BASIS = {
    "answer": "The Answer line and its bill: the fleet verified in simulation at peak (else the closed form), at the "
              "Answer's TP degree (answer.tp). These are the figures to order from.",
    "time_in_system_s, concurrency, memory, compute, latency, binding, binding_paths, tp_options, fleet, cost, "
    "sensitivities, breakpoints": "The runbook's method, at its own TP degree (fleet.tp), as its worked example computes "
                                  "them: beside the Answer, not instead of it (no queueing path, no simulation).",
    "queueing, closed_form, closed_form_sensitivities, closed_form_breakpoints": "The closed form: the largest of the "
        "memory, compute, latency and queueing paths at the step budget deployed, before simulation.",
    "verified": "The simulation at peak: the runs behind the Answer.",
    "contracts": "The Answer's fleet paid for as the contracts section's mix over the daily curve: a reserved (or owned) "
                 "base, on-demand hours, API overflow and spot.",
}
"""What each part of a plan's JSON follows (``plan --json``'s ``basis``)."""


class PlanResult(_Out):
    """Everything the capacity note says."""

    name: str = Field(description="Plan title. [text]")
    calibration_source: str | None = Field(default=None, description="Where calibrated efficiencies came from, if they are. [text]")
    inputs: InputsOut = Field(description="Section 1: the inputs, attributed.")
    model: ModelOut = Field(description="Section 2: the model and precision.")
    time_in_system_s: float = Field(description="Mean time a request occupies a slot. [s]")
    concurrency: float = Field(description="Requests in flight at peak, by Little's Law. [requests]")
    memory: MemoryOut = Field(description="Step 4: the memory path.")
    compute: ComputeOut = Field(description="Step 5: the compute path.")
    latency: LatencyOut = Field(description="The latency check.")
    binding: str = Field(description="'memory', 'compute', 'latency', 'both' or 'all'. [text]")
    binding_paths: list[str] = Field(description="The paths that need the most GPUs. [text]")
    tp_options: list[TPOption] = Field(description="Every tensor-parallel degree considered.")
    fleet: FleetOut = Field(description="Step 6: load, redundancy, purchasing unit (in ``plan --json``: the Answer's).")
    cost: CostOut = Field(description="Step 7: the bill and the API comparison (in ``plan --json``: the Answer's).")
    sensitivities: list[Sensitivity] = Field(description="Section 6, the runbook's method: the standard what-ifs (the workbook's what-if rows compute the same by formula).")
    breakpoints: list[Breakpoint] = Field(description="Section 6, the runbook's method: where each input changes its purchase or binding path.")
    warnings: list[str] = Field(description="What the reader must know (e.g. TTFT not met on this hardware). [text]")
    verified: VerifiedOut | None = Field(default=None, description="The fleet simulated at peak (plan --verify); None when not asked for.")
    queueing: QueueingOut | None = Field(default=None, description="The queueing path at the plan's TP degree and the step budget deployed: the wait for a slot. None in results written before it existed.")
    closed_form: ClosedFormOut | None = Field(default=None, description="The closed-form fleet: the largest of the four paths (None in results written before it existed).")
    answer: AnswerOut | None = Field(default=None, description="The Answer line and its bill: the verified fleet, else the closed form (None in results written before it existed).")
    closed_form_sensitivities: list[Sensitivity] = Field(default_factory=list, description="Section 6 on the closed form: the standard what-ifs, each re-planned as the largest of the four paths at the deployed step budget.")
    closed_form_breakpoints: list[Breakpoint] = Field(default_factory=list, description="Section 6 on the closed form: where its purchase grows one unit, where its binding path changes.")
    contracts: ContractMixOut | None = Field(default=None, description="The contracts section's mix for the Answer's fleet over the daily curve; None when the plan has none.")
    basis: dict[str, str] = Field(default_factory=lambda: dict(FIGURES_BASIS), description="Which method each top-level field follows, so a reader of the JSON knows which figures to order from. [text]")


OUTPUT_BASIS = {
    "fleet, cost, binding, binding_paths, answer": "The Answer: the fleet verified in simulation at peak (else the closed "
        "form), at its TP degree (fleet.tp), and its bill. These are the figures to order from.",
    "runbook_method": "The runbook's method, at its own TP degree, as its worked example computes it: beside the Answer, "
                      "not instead of it (no queueing path, no simulation).",
    "time_in_system_s, concurrency, memory, compute, latency, tp_options, sensitivities, breakpoints": "The runbook's "
        "method's steps, at its TP degree (runbook_method.fleet.tp).",
    "queueing, closed_form, closed_form_sensitivities, closed_form_breakpoints": FIGURES_BASIS[
        "queueing, closed_form, closed_form_sensitivities, closed_form_breakpoints"],
    "verified": FIGURES_BASIS["verified"],
    "contracts": FIGURES_BASIS["contracts"],
}
"""What each part of ``plan --json`` follows (schema version 2's ``basis``)."""

OUTPUT_SCHEMA_VERSION = 2
"""The layout of ``plan --json`` (:class:`PlanOutput`): 2 leads with the Answer's fleet, cost and binding, the runbook's
method under ``runbook_method``; 1 (before December 2026, no ``schema_version`` key) had the runbook's at the top. [—]"""


class RunbookMethodOut(_Out):
    """The runbook's method, as its worked example computes it (600 in flight → 4 and 4 GPUs → 4 + 1 → a node of 8):
    beside the Answer, not the fleet to order."""

    fleet: FleetOut = Field(description="Step 6 by the runbook's method, at its own TP degree.")
    cost: CostOut = Field(description="Step 7 by the runbook's method: its fleet's bill.")
    binding: str = Field(description="The runbook's binding path: 'memory', 'compute', 'latency', 'both' or 'all'. [text]")
    binding_paths: list[str] = Field(description="The paths that need the most GPUs by the runbook's method. [text]")


class PlanOutput(PlanResult):
    """What ``xlplan plan --json`` prints: the plan's result led by what to order. ``fleet``, ``cost`` and ``binding``
    are the Answer's (the fleet verified in simulation, else the closed form, and its bill); the runbook's method is
    under ``runbook_method``; ``schema_version`` names this layout (:data:`OUTPUT_SCHEMA_VERSION`)."""

    schema_version: int = Field(default=OUTPUT_SCHEMA_VERSION, description="The layout of this JSON: 2 leads with the Answer (docs/json-output.md). [—]")
    fleet: FleetOut = Field(description="The Answer's fleet: at its TP degree, its load, with redundancy and purchased, as ordered.")
    cost: CostOut = Field(description="The Answer's bill: its GPUs on the bill, monthly cost, $/M tokens and the API comparison.")
    binding: str = Field(description="The Answer's binding: the closed form's path ('queueing', 'memory', …), or 'queueing (simulated)' where the simulation needs more. [text]")
    binding_paths: list[str] = Field(description="The closed form's paths tied for the most GPUs. [text]")
    runbook_method: RunbookMethodOut | None = Field(default=None, description="The runbook's method's fleet, bill and binding, beside the Answer.")
    basis: dict[str, str] = Field(default_factory=lambda: dict(OUTPUT_BASIS), description="Which method each top-level field follows, so a reader of the JSON knows which figures to order from. [text]")
