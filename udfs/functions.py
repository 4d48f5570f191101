"""xlplan's Excel functions: the engine in a cell, through xlwings.

Written once with xlwings' ``func`` and ``arg`` decorators: xlwings maps them to
classic Windows UDFs (COM), to xlwings Server (Office.js) and to xlwings Lite
(Pyodide). Each function checks its arguments and makes one call into
:mod:`xlplan.excel.cellwise` or the planner; none has arithmetic of its own. Bad
arguments raise :class:`UDFError` with one clear line (Excel shows ``#VALUE!``
with that message); a column of inputs gives a column of answers.
"""

from __future__ import annotations

import typing

from udfs.cells import EXCEL_ERRORS as EXCEL_ERRORS  # the names this module always had
from udfs.cells import (
    UDFError,
    bad,
    choice,
    dtype,
    finite,
    fraction,
    lengths,
    name_or_num,
    no_room,
    number,
    ordered,
    text,
    text_rows,
    whole,
)
from udfs.registry import ERROR_IN_A_CELL as ERROR_IN_A_CELL
from udfs.registry import udf
from udfs.tables import plan_from_table, scalar_or_grid, spec_from_config_table
from xlplan.catalog.specs import ComputeDtype, KVDtype, WeightDtype
from xlplan.excel.cellwise import compute, cost, inputs, latency, memory
from xlplan.excel.cellwise import fleet as cellwise_fleet
from xlplan.schema.fields import PAYMENT_MODES
from xlplan.schema.hardware import Hardware
from xlplan.schema.plan import Forecast
from xlplan.schema.policy import ROUTINGS, Policy
from xlplan.serving import concurrency, engines

_POLICY = Policy.model_fields
_HARDWARE = Hardware.model_fields
MFU = 0.40  # the runbook's planning figure (engine 'runbook')
MEMORY_UTILISATION = _POLICY["memory_utilisation"].default
OVERHEAD_GIB = _POLICY["overhead_gib"].default
ENGINES = engines.ENGINES  # runbook, vllm, sglang, trtllm: the plan's own choices
ENGINE = _POLICY["engine"].default  # vllm: the memory rule of a plan that states none
ATTENTION_FLOPS = typing.get_args(_POLICY["attention_flops"].annotation)  # causal, full
ATTENTION_FLOPS_DEFAULT = _POLICY["attention_flops"].default  # causal: the convention of a plan that states none
BANDWIDTH_EFFICIENCY = 0.60  # the runbook's planning figure (engine 'runbook')
REDUNDANCY = _POLICY["redundancy"].default
GPUS_PER_NODE = _HARDWARE["gpus_per_node"].default
HOURS_PER_MONTH = _HARDWARE["hours_per_month"].default
AVERAGE_UTILISATION = Forecast.model_fields["average_utilisation"].default

WEIGHT_DTYPES = typing.get_args(WeightDtype)
KV_DTYPES = typing.get_args(KVDtype)
COMPUTE_DTYPES = typing.get_args(ComputeDtype)


# ---------------------------------------------------------------------------------------------- step 3


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]", time_in_system_s="Mean time a request occupies a slot. [s]")
def littles_law(arrival_rate_rps, time_in_system_s):
    """Requests in flight by Little's Law: arrival rate × time in system (40 req/s × 15 s = 600). [requests]"""
    return concurrency.littles_law(number("arrival_rate_rps", arrival_rate_rps, "requests/s", at_least=0.0),
                                   number("time_in_system_s", time_in_system_s, "s", at_least=0.0))


@udf(output_p50="Median output length. [tokens]", output_p95="95th-percentile output length. [tokens]",
     itl_s="Inter-token latency target. [s/token]", output_p99="99th-percentile output length; may be blank. [tokens]",
     ttft_s="Time to first token to add; 0 as the runbook does. [s]")
def time_in_system(output_p50, output_p95, itl_s, output_p99=None, ttft_s=0.0):
    """Mean time in system: the fitted mean output × the inter-token target (+ TTFT) (300 × 0.05 = 15 s). [s]"""
    p50, p95 = number("output_p50", output_p50, "tokens", above=0.0), number("output_p95", output_p95, "tokens", above=0.0)
    p99 = number("output_p99", output_p99, "tokens", above=0.0, optional=True)
    ordered(p50, p95, p99, "output")
    return latency.time_in_system_s(p50, p95, number("itl_s", itl_s, "s/token", above=0.0, at_most=2.0), p99, number("ttft_s", ttft_s, "s", at_least=0.0))


# ---------------------------------------------------------------------------------------------- model


@udf(model="Catalog model name, Hugging Face id or alias, e.g. llama-3.1-8b. [text]",
     kv_dtype="KV-cache precision: bf16, fp16, fp8 or int8. [dtype]")
def kv_bytes_per_token(model, kv_dtype="bf16"):
    """KV cache per token with every layer full-length (Llama-3.1-8B bf16: 131,072 B). [bytes/token]"""
    return memory.kv_bytes_per_token(text("model", model, "a model name [text]"), dtype("kv_dtype", kv_dtype, KV_DTYPES))


@udf(model="Catalog model name, Hugging Face id or alias. [text]",
     conversation_tokens="Prompt plus output tokens the cache is sized at (p50 + p50 in the runbook). [tokens]",
     kv_dtype="KV-cache precision: bf16, fp16, fp8 or int8. [dtype]")
def kv_gib_per_conversation(model, conversation_tokens, kv_dtype="bf16"):
    """KV cache one conversation holds; sliding-window layers hold at most their window (2,300 tokens: 0.281 GiB). [GiB]"""
    return memory.kv_gib_per_conversation(text("model", model, "a model name [text]"),
                                            number("conversation_tokens", conversation_tokens, "tokens", at_least=0.0),
                                            dtype("kv_dtype", kv_dtype, KV_DTYPES))


@udf(model="Catalog model name, Hugging Face id or alias. [text]",
     weights_dtype="Weight precision: bf16, fp16, fp8, int8, int4, mxfp4, nvfp4. [dtype]")
def weights_gib(model, weights_dtype="bf16"):
    """Weight footprint of the whole model; embeddings stay 16-bit in quantised checkpoints (Llama-3.1-8B bf16: 14.96 GiB). [GiB]"""
    return memory.weights_gib(text("model", model, "a model name [text]"), dtype("weights_dtype", weights_dtype, WEIGHT_DTYPES))


@udf(tables=("config",), config="A model name, or a two-column range of config.json fields and values (e.g. hidden_size | 4096). [text]",
     which="'total' (in memory) or 'active' (per token, MoE). [text]")
def params_from_config(config, which="total"):
    """Parameters derived from the config: counted layer by layer (Llama-3.1-8B: 8,030,261,248). [parameters]"""
    which = text("which", which, "'total' or 'active' [text]").lower()
    if which not in ("total", "active"):
        raise bad("which", which, "'total' or 'active' [text]")
    if isinstance(scalar_or_grid(config), list):
        return float(inputs.params(spec_from_config_table(config), which))
    return float(inputs.params(text("config", scalar_or_grid(config), "a model name or a two-column range [text]"), which))


# ---------------------------------------------------------------------------------------------- step 4


@udf(gpu="Catalog GPU name (e.g. h100-sxm) or its memory as the driver reports it. [GiB]",
     model="Catalog model name (its weights and activation peak), or this GPU's share of the weights. [GiB]",
     memory_utilisation="The engine's memory fraction (vLLM gpu_memory_utilization; 0.90, not 90). [fraction]",
     overhead_gib="The runbook's overhead per GPU, its rule only. [GiB]",
     engine="Whose memory rule: vllm (as a plan that states none), sglang, trtllm or runbook (policy.engine). [text]",
     activation_gib="vLLM's activation peak or TensorRT-LLM's workspace; blank: the model's at the engine's default budgets. [GiB]",
     tp="GPUs per replica: the weights split over them; non-torch memory grows past one. [GPUs]",
     visible_gib="Memory CUDA can allocate; blank: the catalog's, or the driver's total less its reserve. [GiB]",
     weights_dtype="Weight precision of a named model: bf16, fp16, fp8, int8, int4, mxfp4, nvfp4. [dtype]")
def kv_budget_gib(gpu, model, memory_utilisation=MEMORY_UTILISATION, overhead_gib=OVERHEAD_GIB, engine=ENGINE,
                  activation_gib=None, tp=1, visible_gib=None, weights_dtype="bf16"):
    """KV room per GPU by the engine's memory rule, the plan's (vLLM, Llama-3.1-8B on an H100: 0.9 × 79.18 − 14.96 − 4.76 − 0.13 = 51.42). [GiB]"""
    g = name_or_num("gpu", gpu, "GiB", "a GPU name or its memory [GiB]")
    m = name_or_num("model", model, "GiB", "a model name or this GPU's share of the weights [GiB]")
    util = fraction("memory_utilisation", memory_utilisation)
    overhead = number("overhead_gib", overhead_gib, "GiB", at_least=0.0)
    rule = choice("engine", engine, ENGINES)
    activation = number("activation_gib", activation_gib, "GiB", at_least=0.0, optional=True)
    visible = number("visible_gib", visible_gib, "GiB", above=0.0, optional=True)
    budget = memory.kv_budget_gib(g, m, util, overhead, rule, activation, whole("tp", tp, "GPUs"), visible,
                                  dtype("weights_dtype", weights_dtype, WEIGHT_DTYPES))
    if budget <= 0:
        raise no_room(rule, budget)
    return budget


@udf(concurrency="Requests in flight. [requests]", kv_gib_per_conversation="KV cache per conversation. [GiB]",
     kv_budget_gib="KV room per GPU. [GiB]", tp="GPUs per replica (tensor-parallel degree). [GPUs]",
     kv_shards="Ways the cache splits across the replica: min(TP, KV heads); 1 for MLA. [GPUs]")
def memory_gpus(concurrency, kv_gib_per_conversation, kv_budget_gib, tp=1, kv_shards=1):
    """The memory path in whole replicas: concurrency × KV per conversation ÷ budget (600 × 0.281 ÷ 53.73 = 3.14 → 4). [GPUs]"""
    budget = number("kv_budget_gib", kv_budget_gib, "GiB")
    if budget <= 0:
        raise bad("kv_budget_gib", kv_budget_gib, "a positive budget [GiB]: the weights leave no room for the cache")
    return memory.memory_gpus(number("concurrency", concurrency, "requests", at_least=0.0),
                                number("kv_gib_per_conversation", kv_gib_per_conversation, "GiB", above=0.0), budget,
                                whole("tp", tp, "GPUs"), whole("kv_shards", kv_shards, "GPUs"))


# ---------------------------------------------------------------------------------------------- step 5


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]", model="Catalog model name. [text]",
     prompt_p50="Median prompt length. [tokens]", prompt_p95="95th-percentile prompt length. [tokens]",
     prompt_p99="99th-percentile prompt length; may be blank. [tokens]",
     prefix_reuse="Measured fraction of prompt compute served from the prefix cache; 0 unless measured. [fraction]",
     attention_flops="The plan's policy.attention_flops: causal (half the square, as a plan that states none) or full (every pair, the runbook's). [text]")
def prefill_tflops(arrival_rate_rps, model, prompt_p50, prompt_p95, prompt_p99=None, prefix_reuse=0.0, attention_flops=ATTENTION_FLOPS_DEFAULT):
    """Prefill demand at peak over the fitted prompt distribution: rate × (2·N·E[n] + 4·layers·K·width) (runbook, full attention: 1,369). [TFLOP/s]"""
    p50, p95 = number("prompt_p50", prompt_p50, "tokens", above=0.0), number("prompt_p95", prompt_p95, "tokens", above=0.0)
    p99 = number("prompt_p99", prompt_p99, "tokens", above=0.0, optional=True)
    ordered(p50, p95, p99, "prompt")
    return compute.prefill_tflops(number("arrival_rate_rps", arrival_rate_rps, "requests/s", at_least=0.0),
                                   text("model", model, "a model name [text]"), p50, p95, p99,
                                   number("prefix_reuse", prefix_reuse, "fraction", at_least=0.0, at_most=1.0),
                                   choice("attention_flops", attention_flops, ATTENTION_FLOPS))


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]", model="Catalog model name. [text]",
     output_p50="Median output length. [tokens]", output_p95="95th-percentile output length. [tokens]",
     output_p99="99th-percentile output length; may be blank. [tokens]")
def decode_tflops(arrival_rate_rps, model, output_p50, output_p95, output_p99=None):
    """Decode demand at peak: rate × E[output] × 2·N_active (runbook: 40 × 300 × 2 × 8.03e9 = 193). [TFLOP/s]"""
    p50, p95 = number("output_p50", output_p50, "tokens", above=0.0), number("output_p95", output_p95, "tokens", above=0.0)
    p99 = number("output_p99", output_p99, "tokens", above=0.0, optional=True)
    ordered(p50, p95, p99, "output")
    return compute.decode_tflops(number("arrival_rate_rps", arrival_rate_rps, "requests/s", at_least=0.0),
                                  text("model", model, "a model name [text]"), p50, p95, p99)


@udf(demand_tflops="Prefill plus decode demand at peak; the prefill alone where decode_tflops is given. [TFLOP/s]",
     gpu="Catalog GPU name, or its dense peak. [TFLOP/s]", mfu="Achieved fraction of peak (0.40, not 40); the prefill's where decode_mfu is given. [fraction]",
     tp="GPUs per replica. [GPUs]", compute_dtype="Tensor-core dtype of the peak for a named GPU: bf16, fp8, fp4. [dtype]",
     decode_tflops="Decode demand at its own MFU (the engine's defaults split them); blank: none apart. [TFLOP/s]",
     decode_mfu="The decode's MFU (0.40, not 40); blank: mfu. [fraction]")
def compute_gpus(demand_tflops, gpu, mfu=MFU, tp=1, compute_dtype="bf16", decode_tflops=None, decode_mfu=None):
    """The compute path in whole replicas: demand ÷ (peak × MFU) (1,562 ÷ 395.6 = 3.95 → 4), plus decode ÷ (peak × decode MFU) where apart. [GPUs]"""
    g = name_or_num("gpu", gpu, "TFLOP/s", "a GPU name or its dense peak [TFLOP/s]")
    f = fraction("mfu", mfu)
    return compute.compute_gpus(number("demand_tflops", demand_tflops, "TFLOP/s", at_least=0.0), g, f,
                                 whole("tp", tp, "GPUs"), dtype("compute_dtype", compute_dtype, COMPUTE_DTYPES),
                                 number("decode_tflops", decode_tflops, "TFLOP/s", at_least=0.0, optional=True) or 0.0,
                                 f if decode_mfu is None or decode_mfu == "" else fraction("decode_mfu", decode_mfu))


# ---------------------------------------------------------------------------------------------- latency


@udf(model="Catalog model name. [text]", gpu="Catalog GPU name. [text]", itl_s="Inter-token latency target. [s/token]",
     context_tokens="Mean cached context of each decoding sequence: its prompt plus half its output. [tokens]",
     tp="GPUs per replica. [GPUs]", weights_dtype="Weight precision. [dtype]", kv_dtype="KV-cache precision. [dtype]",
     mfu="Achieved fraction of peak FLOP/s (0.40, not 40). [fraction]",
     bandwidth_efficiency="Achieved fraction of HBM bandwidth (0.60, not 60). [fraction]",
     compute_dtype="Tensor-core dtype of the peak: bf16, fp8, fp4. [dtype]",
     prefill_tokens_per_output="Prompt tokens prefilled per decoded token in the same steps (chunked prefill): E[prompt] ÷ E[output]; 0 for decode alone. [tokens/token]",
     step_overhead_s="Fixed time per engine step (scheduling, launches, sampling). [s]")
def max_decode_batch(model, gpu, itl_s, context_tokens, tp=1, weights_dtype="bf16", kv_dtype="bf16", mfu=MFU,
                     bandwidth_efficiency=BANDWIDTH_EFFICIENCY, compute_dtype="bf16", prefill_tokens_per_output=0.0,
                     step_overhead_s=0.0):
    """Largest batch one replica carries within the inter-token target: the serving model's step solved for the batch. [sequences]"""
    return latency.max_decode_batch(
        text("model", model, "a model name [text]"), text("gpu", gpu, "a GPU name [text]"), number("itl_s", itl_s, "s/token", above=0.0, at_most=2.0),
        number("context_tokens", context_tokens, "tokens", at_least=0.0), whole("tp", tp, "GPUs"),
        dtype("weights_dtype", weights_dtype, WEIGHT_DTYPES), dtype("kv_dtype", kv_dtype, KV_DTYPES),
        fraction("mfu", mfu), fraction("bandwidth_efficiency", bandwidth_efficiency),
        dtype("compute_dtype", compute_dtype, COMPUTE_DTYPES),
        number("prefill_tokens_per_output", prefill_tokens_per_output, "tokens/token", at_least=0.0),
        number("step_overhead_s", step_overhead_s, "s", at_least=0.0, at_most=1.0))


@udf(concurrency="Requests in flight. [requests]", max_decode_batch="Largest batch per replica within the target. [conversations]",
     tp="GPUs per replica. [GPUs]")
def latency_gpus(concurrency, max_decode_batch, tp=1):
    """The latency path in whole replicas: concurrency ÷ the batch a replica can carry at the inter-token target. [GPUs]"""
    batch = number("max_decode_batch", max_decode_batch, "conversations", at_least=0.0)
    if batch <= 0:
        raise bad("max_decode_batch", max_decode_batch, "a positive batch [conversations]: no batch meets the target")
    return latency.latency_gpus(number("concurrency", concurrency, "requests", at_least=0.0), batch, whole("tp", tp, "GPUs"))


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]",
     service_rps_per_replica="Requests one replica serves per second at the promise (3 Constraints: QueueServiceRPS). [requests/s]",
     wait_target_s="Longest wait for a slot: the TTFT target less the prompt's prefill. [s]",
     percentile="The promise's percentile (95, not 0.95). [percent]",
     tail_replicas="Replicas the long-prefill-step limit needs; 0 where it never binds. [replicas]",
     arrival_cv2="Squared coefficient of variation of the gaps between arrivals: 1 Poisson, above 1 bursty. [1]",
     prefill_replicas="Replicas each replica's own prefill queue needs (3 Constraints: QueuePrefillReplicas). [replicas]",
     routing="The load balancer: least_loaded or least_kv (one queue for the fleet), round_robin or random (a queue per replica). [text]",
     slots="Decodes one replica's step carries within the inter-token target (3 Constraints: QueueSlots). [sequences]")
def queueing_replicas(arrival_rate_rps, service_rps_per_replica, wait_target_s, percentile=95.0, tail_replicas=0, arrival_cv2=1.0,
                      prefill_replicas=0, routing="least_loaded", slots=1):
    """The queueing path: the fewest replicas whose p95 wait for a slot fits the target, by Erlang C (the reference: 6). [replicas]"""
    wait = number("wait_target_s", wait_target_s, "s")
    if wait < 0:
        raise bad("wait_target_s", wait_target_s, "a wait of 0 s or more: the prompt's prefill alone misses the TTFT target")
    return finite(latency.queueing_replicas(
        number("arrival_rate_rps", arrival_rate_rps, "requests/s", above=0.0),
        number("service_rps_per_replica", service_rps_per_replica, "requests/s", above=0.0), wait,
        number("percentile", percentile, "percent", above=0.0, at_most=99.99),
        whole("tail_replicas", tail_replicas, "replicas", at_least=0),
        number("arrival_cv2", arrival_cv2, "1", above=0.0, at_most=100.0),
        whole("prefill_replicas", prefill_replicas, "replicas", at_least=0),
        choice("routing", routing, ROUTINGS), number("slots", slots, "sequences", above=0.0)))


# ---------------------------------------------------------------------------------------------- step 6


@udf(memory_gpus="The memory path. [GPUs]", compute_gpus="The compute path. [GPUs]",
     latency_gpus="The latency path; 0 to compare memory and compute only. [GPUs]",
     tp="GPUs per replica; given, three paths of one replica each read 'minimum replica'. [GPUs]")
def binding_constraint(memory_gpus, compute_gpus, latency_gpus=0.0, tp=None):
    """Which path binds: memory, compute, latency; 'both' or 'all' when whole GPU counts tie; 'minimum replica' when every path is one replica of tp. [text]"""
    return cellwise_fleet.binding(number("memory_gpus", memory_gpus, "GPUs", at_least=0.0),
                            number("compute_gpus", compute_gpus, "GPUs", at_least=0.0),
                            number("latency_gpus", latency_gpus, "GPUs", at_least=0.0),
                            None if tp is None or tp == "" else whole("tp", tp, "GPUs"))


@udf(rows3=True, memory_gpus="The memory path. [GPUs]", compute_gpus="The compute path. [GPUs]", latency_gpus="The latency path. [GPUs]",
     tp="GPUs per replica. [GPUs]", redundancy="Spare replicas (N+k). [replicas]",
     gpus_per_node="The purchasing unit. [GPUs]")
def fleet(memory_gpus, compute_gpus, latency_gpus=0.0, tp=1, redundancy=REDUNDANCY, gpus_per_node=GPUS_PER_NODE):
    """The three numbers, spilled down: load, with redundancy, purchased (the runbook: 4, 5, 8); for a range of inputs, a row each with the three across. [GPUs]"""
    load, with_redundancy, purchased = cellwise_fleet.fleet_sizes(
        number("memory_gpus", memory_gpus, "GPUs", at_least=0.0), number("compute_gpus", compute_gpus, "GPUs", at_least=0.0),
        number("latency_gpus", latency_gpus, "GPUs", at_least=0.0), whole("tp", tp, "GPUs"),
        whole("redundancy", redundancy, "replicas", at_least=0), whole("gpus_per_node", gpus_per_node, "GPUs"))
    return [[load], [with_redundancy], [purchased]]


# ---------------------------------------------------------------------------------------------- step 7


@udf(with_redundancy="The fleet with redundancy. [GPUs]", gpus_per_node="The purchasing unit. [GPUs]",
     paid_as="How the fleet is paid for: rent_per_gpu, rent_per_node or buy (the plan's costs.mode). [text]")
def billed_gpus(with_redundancy, gpus_per_node=GPUS_PER_NODE, paid_as="rent_per_gpu"):
    """GPUs on the bill: rented per GPU, the fleet with redundancy; by the node or bought, whole nodes (7, 8, 8). [GPUs]"""
    return cellwise_fleet.billed_gpus(whole("with_redundancy", with_redundancy, "GPUs", at_least=0),
                                whole("gpus_per_node", gpus_per_node, "GPUs"), choice("paid_as", paid_as, PAYMENT_MODES))


@udf(gpus="GPUs on the bill. [GPUs]", usd_per_gpu_hour="Price paid. [USD/GPU-hour]",
     hours_per_month="Billed hours per month (8,760 / 12 = 730). [h/month]")
def monthly_cost(gpus, usd_per_gpu_hour, hours_per_month=HOURS_PER_MONTH):
    """Monthly infrastructure cost: GPUs × price × hours (5 × $3 × 730 = $10,950). [USD/month]"""
    return cost.monthly_cost_usd(number("gpus", gpus, "GPUs", at_least=0.0),
                                     number("usd_per_gpu_hour", usd_per_gpu_hour, "USD/GPU-hour", at_least=0.0),
                                     number("hours_per_month", hours_per_month, "h/month", above=0.0, at_most=744.0))


@udf(arrival_rate_rps="Peak arrival rate. [requests/s]", prompt_p50="Median prompt length. [tokens]",
     prompt_p95="95th-percentile prompt length. [tokens]", output_p50="Median output length. [tokens]",
     output_p95="95th-percentile output length. [tokens]",
     average_utilisation="Average load over the month as a fraction of peak (0.40, not 40). [fraction]",
     prompt_p99="99th-percentile prompt length; may be blank. [tokens]",
     output_p99="99th-percentile output length; may be blank. [tokens]",
     hours_per_month="Hours in the month. [h/month]")
def tokens_per_month(arrival_rate_rps, prompt_p50, prompt_p95, output_p50, output_p95, average_utilisation=AVERAGE_UTILISATION,
                     prompt_p99=None, output_p99=None, hours_per_month=HOURS_PER_MONTH):
    """Tokens served in a month at the average utilisation (40 × 2,300 × 0.40 × 730 h = 96.7 billion). [tokens/month]"""
    prompt, output = lengths(prompt_p50, prompt_p95, prompt_p99, output_p50, output_p95, output_p99)
    return cost.tokens_per_month(
        number("arrival_rate_rps", arrival_rate_rps, "requests/s", at_least=0.0), prompt[0], prompt[1], output[0], output[1],
        fraction("average_utilisation", average_utilisation), prompt[2], output[2],
        number("hours_per_month", hours_per_month, "h/month", above=0.0, at_most=744.0))


@udf(monthly_usd="Monthly cost. [USD/month]", tokens_per_month="Tokens served in the month. [tokens/month]")
def cost_per_mtok(monthly_usd, tokens_per_month):
    """Cost per million tokens of all kinds ($10,950 ÷ 96.7 B = $0.113). [USD/Mtok]"""
    tokens = number("tokens_per_month", tokens_per_month, "tokens/month", above=0.0)
    return cost.usd_per_mtok(number("monthly_usd", monthly_usd, "USD/month", at_least=0.0), tokens)


@udf(tokens_per_month="Tokens served in the month. [tokens/month]", usd_per_mtok_input="API price of input tokens. [USD/Mtok]",
     usd_per_mtok_output="API price of output tokens. [USD/Mtok]", prompt_p50="Median prompt length. [tokens]",
     prompt_p95="95th-percentile prompt length. [tokens]", output_p50="Median output length. [tokens]",
     output_p95="95th-percentile output length. [tokens]", prompt_p99="99th-percentile prompt length; may be blank. [tokens]",
     output_p99="99th-percentile output length; may be blank. [tokens]")
def api_monthly_cost(tokens_per_month, usd_per_mtok_input, usd_per_mtok_output, prompt_p50, prompt_p95, output_p50, output_p95,
                     prompt_p99=None, output_p99=None):
    """The same traffic on a managed API at separate input and output prices (runbook: ~$30k/month). [USD/month]"""
    prompt, output = lengths(prompt_p50, prompt_p95, prompt_p99, output_p50, output_p95, output_p99)
    return cost.api_monthly_cost_usd(
        number("tokens_per_month", tokens_per_month, "tokens/month", at_least=0.0),
        number("usd_per_mtok_input", usd_per_mtok_input, "USD/Mtok", at_least=0.0),
        number("usd_per_mtok_output", usd_per_mtok_output, "USD/Mtok", at_least=0.0),
        prompt[0], prompt[1], output[0], output[1], prompt[2], output[2])


@udf(monthly_usd="Monthly cost of the fleet. [USD/month]", api_usd_per_mtok="The API's price at this input/output mix. [USD/Mtok]",
     ops_usd_per_month="Engineering and on-call cost of self-hosting. [USD/month]")
def breakeven_tokens(monthly_usd, api_usd_per_mtok, ops_usd_per_month=0.0):
    """Monthly volume above which this fleet is cheaper than the API: (fleet + ops) ÷ API price. [tokens/month]"""
    price = number("api_usd_per_mtok", api_usd_per_mtok, "USD/Mtok", above=0.0)
    return cost.breakeven_tokens_per_month(number("monthly_usd", monthly_usd, "USD/month", at_least=0.0), price,
                                               number("ops_usd_per_month", ops_usd_per_month, "USD/month", at_least=0.0))


# ---------------------------------------------------------------------------------------------- whole plans


PLAN_TABLE_DOC = ("Two-column range: plan keys (forecast.peak_rps, model.name, hardware.gpu, ...) and values; policy keys "
                  "left out take the engine's defaults as in a plan file, other keys the reference plan's; blank: the "
                  "reference plan. [text]")


@udf(tables=("plan_table",), gpus="GPUs serving the load, spares excluded. [GPUs]", plan_table=PLAN_TABLE_DOC)
def max_rate(gpus, plan_table=None):
    """The closed form's capacity of a fleet, queueing included: the highest peak rate whose closed-form load it holds. [requests/s]"""
    return cellwise_fleet.max_rate_rps(plan_from_table(plan_table), whole("gpus", gpus, "GPUs"))


@udf(tables=("plan_table",), plan_table=PLAN_TABLE_DOC)
def capacity_note(plan_table=None):
    """The whole capacity note as a two-column table, spilled: section, figure and value; a text past 255 characters
    goes on in the rows below it (the classic add-in's limit inside an array). [text]"""
    from xlplan.decide.planner import plan
    from xlplan.report.note import note_sections

    rows = []
    for title, figures, sentences in note_sections(plan(plan_from_table(plan_table))):
        rows.append([title, ""])
        for label, value in figures:  # a value past the classic add-in's 255 characters goes on below, label once
            rows.extend([label if k == 0 else "", part] for k, part in enumerate(text_rows(value)))
        rows.extend(["", part] for s in sentences for part in text_rows(s))
    return rows


@udf(tables=("plan_table",), plan_table=PLAN_TABLE_DOC)
def sensitivities(plan_table=None):
    """The what-if table, spilled: each change re-planned in full, with load, fleet, purchase, binding and cost. [table]"""
    from xlplan.decide.planner import plan

    result = plan(plan_from_table(plan_table))
    header = ["What-if", "Load GPUs", "Fleet GPUs", "Purchased GPUs", "Binding", "Monthly USD", "$/M tokens"]
    rows = [[s.change, s.load, s.fleet, s.purchased, s.binding, s.monthly_usd, s.usd_per_mtok] if s.feasible
            else [s.change, "infeasible", "", "", "", "", s.note] for s in result.sensitivities]
    return [header, *rows]


# ---------------------------------------------------------------------------------------------- catalog


@udf(name="Catalog GPU name or alias, e.g. h100-sxm. [text]", field="A GPUSpec field, e.g. memory_gib, bf16_tflops, hbm_tbps. [text]")
def gpu_spec(name, field):
    """One figure of a catalog GPU; an unknown name suggests the closest ones. [field's unit]"""
    value = inputs.gpu_field(text("name", name, "a GPU name [text]"), text("field", field, "a field name [text]"))
    return "" if value is None else value


@udf(name="Catalog model name, Hugging Face id or alias. [text]",
     field="A config field (num_hidden_layers, hidden_size, ...) or total_params / active_params. [text]")
def model_spec(name, field):
    """One figure of a catalog model; an unknown name suggests the closest ones. [field's unit]"""
    value = inputs.model_field(text("name", name, "a model name [text]"), text("field", field, "a field name [text]"))
    return "" if value is None else value


def public_udfs() -> dict:
    """Every Excel function in this module, by Python name."""
    return {n: f for n, f in globals().items() if callable(f) and hasattr(f, "__wrapped__") and getattr(f, "__module__", "") == __name__}


__all__ = [*sorted(public_udfs()), "UDFError", "public_udfs"]  # noqa: PLE0604 - every function, for Lite's `import *`
