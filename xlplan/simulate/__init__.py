"""Does the planned fleet keep the promise at peak? A discrete-event simulation of continuous batching.

The closed form sizes the fleet from averages; whether p95 TTFT and ITL hold under random arrivals is a
queueing question. This package answers it with the plan's own physics: every engine step is timed by
:func:`xlplan.serving.folded_step.step_time_fn` (the serving model), each replica's KV cache holds what the engine's
memory rule gives (:func:`xlplan.plan.replica_at_tp.kv_budget_gib`), and the scheduler is vLLM's: running sequences decode
first, then waiting prompts are prefilled in chunks up to ``max_num_batched_tokens``; a cache that cannot take
the next token preempts the newest sequence, which is recomputed later.

Notes
-----
- **Arrivals**: Poisson at the peak rate, or bursty (gamma inter-arrival times with squared coefficient of
  variation ``cv2`` > 1), or given (a log's timestamps). **Lengths**: the plan's fitted lognormals (clipped at the
  model's context limit), or given (a log's). **Routing**: the plan's rule (``policy.routing``): least loaded
  (fewest requests queued and running, the default), round robin or random.
- **Sampled runs**: a verification of a fleet past :data:`xlplan.simulate.workload.SAMPLE_ABOVE_REPLICAS` replicas
  simulates a sample of them serving their share of the peak (:class:`xlplan.simulate.workload.SampledWorkload`),
  read back as the fleet's; its error against full runs is measured in ``benchmarks/bench_sampled.txt``.
- **Measurement**: the first ``warmup`` seconds are discarded — max(60 s, 10% of the run) — and requests that
  arrive before the end are followed until they finish or the drain cap (max(60 s, 20% of the run)) passes; one
  still waiting then counts its time so far, a lower bound. ITL is pooled over token gaps: every decode step of
  the measured window contributes its duration once per sequence it advanced; TPOT is per request,
  ``(finish − first token) ÷ (output − 1)``. The run is stable when p95 TTFT over the two halves of the measured
  window agree within 10% of the larger or of the TTFT target, or when the rise between them, carried on for twice
  the run, still keeps the target (:func:`xlplan.simulate.run._steady`); a run keeps the promise only when it is stable, its
  TTFT is within target and its ITL is within target or undefined (no second token decoded). A run lasts max(10 minutes, 20,000 arrivals) unless
  told, at most 6 hours.
- **Prefix reuse**: the plan's reused share of each prompt is held in the cache from admission but not computed.
- **Sliding-window layers** hold at most the window: a sequence of ``n`` tokens holds ``a·n + (1 − a)·min(n, W)``
  of every layer's cache (``a`` the share of full-attention layers), as the planner counts it and vLLM's hybrid KV
  cache manager allocates it (``_Run.start_step``).

References
----------
vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
budget, recompute preemption of the newest request; SGLang's scheduler (sgl-project/sglang scheduler.py ``get_next_batch_to_run``): prefill first, in steps of its own (an SGLang plan). Little's Law (Little, Operations Research 9(3), 1961) holds
inside the run and is tested; M/D/1 waiting time by the Pollaczek–Khinchine formula.
"""
