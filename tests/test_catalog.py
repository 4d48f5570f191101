"""The catalog against the public reference figures (tests/data, copied from shared/reference)."""

import csv
from pathlib import Path

import pytest

from xlplan import catalog
from xlplan.catalog import parameters
from xlplan.io import names
from xlplan.serving import memory
from xlplan.units import GIB

DATA = Path(__file__).parent / "data"
MODELS = {r["hf_id"]: r for r in csv.DictReader((DATA / "models.csv").read_text(encoding="utf-8").splitlines())}
MEASURED = {r["id"]: r for r in csv.DictReader((DATA / "measurements-public.csv").read_text(encoding="utf-8").splitlines())}

REQUIRED_GPUS = ["h100-sxm", "h100-pcie", "h200", "b200", "a100-80gb", "l40s", "l4", "mi300x"]
REQUIRED_MODELS = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "mistral-7b",
                   "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b",
                   "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b"]


def test_required_entries_present_with_sources():
    for k in REQUIRED_GPUS:
        assert catalog.get_gpu(k).source.startswith("spec:")
    for k in REQUIRED_MODELS:
        assert "config:" in catalog.get_model(k).source


def test_every_gpu_states_datacenter_eligibility_with_a_source():
    # `compare` ranks only the parts that may be deployed in a datacenter, so every entry must say which it is and why
    # (a missing flag would read as "not stated" and slip into the ranking unexamined)
    import yaml

    raw = yaml.safe_load((Path(catalog.__file__).parent / "gpus.yaml").read_text(encoding="utf-8"))
    for key, row in raw.items():
        assert isinstance(row.get("datacenter"), bool), key
        assert row.get("datacenter_source", "").strip(), key
    # GeForce cards: the GeForce driver licence's "No Datacenter Deployment" clause (section 2.1.3) forbids it
    for key in catalog.gpu_names():
        g = catalog.get_gpu(key)
        if "GeForce" in g.name:
            assert g.datacenter is False and "No Datacenter Deployment" in g.datacenter_source, key
    assert "rtx-5090" not in catalog.datacenter_gpu_names() and "h100-sxm" in catalog.datacenter_gpu_names()


def test_price_date_reads_the_date_a_price_note_names():
    # the notes' own words: an ISO date, a month and year, or none ("undated")
    assert catalog.price_date("Lambda on-demand, 2026-05-18 (RunPod 2.69 on 2026-07-23)") == "2026-05-18"
    assert catalog.price_date("AWS g5.xlarge on-demand us-east-1, June 2026 (blog)") == "June 2026"
    assert catalog.price_date("RunPod, undated (LOW reliability)") == ""


@pytest.mark.parametrize("key", [k for k in catalog.model_names() if catalog.get_model(k).published_params_b])
def test_param_count_within_2pct_of_published(key):
    # only entries with a published decimal count (gemma-3-4b and phi-4 publish a name, "4B" and "14B", not a count)
    m = catalog.get_model(key)
    assert parameters.total_params(m) / 1e9 == pytest.approx(m.published_params_b, rel=0.02)


@pytest.mark.parametrize("key", [k for k in catalog.model_names() if catalog.get_model(k).hf_id in MODELS])
def test_kv_bytes_and_counts_equal_models_csv(key):
    m = catalog.get_model(key)
    row = MODELS[m.hf_id]
    # models.csv: kv_bytes_per_token_bf16 = 2 × layers × kv_heads × head_dim × 2 (MLA: (512 + 64) × 61 × 2)
    assert memory.kv_bytes_per_token(m, "bf16") == float(row["kv_bytes_per_token_bf16"])
    # models.csv computes the text model's total and active counts to 0.01 B (a vision tower, where the checkpoint
    # ships one, is counted beside it: Gemma-3-27B's SigLIP tower)
    assert (parameters.total_params(m) - m.vision_params) / 1e9 == pytest.approx(float(row["computed_total_params_B"]), abs=0.006)
    assert parameters.active_params(m) / 1e9 == pytest.approx(float(row["computed_active_params_B"]), abs=0.006)


def test_mla_and_mha_cache_ratio():
    # MLA caches one 576-wide latent per layer instead of 2 × 128 heads × 128: DeepSeek-V3's 70,272 B/token
    # against 61 × 2 × 128 × 128 × 2 = 3,997,696 B if it cached full MHA K/V — a 56.9× saving.
    ds = catalog.get_model("deepseek-v3")
    mha = ds.model_copy(update={"attention": "gqa", "head_dim": 128})
    assert memory.kv_bytes_per_token(mha, "bf16") / memory.kv_bytes_per_token(ds, "bf16") == pytest.approx(3997696 / 70272)
    # GQA 8 of 32 heads caches a quarter of MHA (Llama-3.1-8B)
    llama = catalog.get_model("llama-3.1-8b")
    assert memory.kv_bytes_per_token(llama.model_copy(update={"num_key_value_heads": 32}), "bf16") == 4 * memory.kv_bytes_per_token(llama, "bf16")


def test_the_silicon_samples_moe_models_by_hand():
    # MiniMax-M2.5 (config.json: 62 layers, 8 KV heads of 128, every layer MoE): 2 × 62 × 8 × 128 × 2 = 253,952 B/token.
    # Experts 62 × 256 × 3 × 3,072 × 1,536 = 224.65 B of its 228.69 B; one token uses 8 of 256 (7.02 B of them).
    mm = catalog.get_model("minimax-m2.5")
    assert memory.kv_bytes_per_token(mm, "bf16") == 2 * 62 * 8 * 128 * 2 == 253952
    assert parameters.routed_expert_params(mm) == 62 * 256 * 3 * 3072 * 1536
    assert parameters.routed_expert_active_params(mm) == 62 * 8 * 3 * 3072 * 1536
    # Kimi-K2.5's text decoder is DeepSeek-V3's shape (MLA latent 512 + rope 64 over 61 layers: the same 70,272 B/token)
    # with 384 experts, one dense layer and a 400M vision tower held in memory but not in a text token's FLOPs
    kimi, ds = catalog.get_model("kimi-k2.5"), catalog.get_model("deepseek-v3")
    assert memory.kv_bytes_per_token(kimi, "bf16") == memory.kv_bytes_per_token(ds, "bf16") == (512 + 64) * 61 * 2
    assert parameters.moe_layers(kimi) == 60 and parameters.routed_expert_params(kimi) == 60 * 384 * 3 * 7168 * 2048
    assert parameters.total_params(kimi) - parameters.total_params(kimi.model_copy(update={"vision_params": 0})) == 400_000_000
    assert names.model_key("moonshotai/Kimi-K2.5") == "kimi-k2.5" and names.model_key("MiniMaxAI/MiniMax-M2.5") == "minimax-m2.5"
    # the sample's two other missing models stay unresolved rather than map to a wrong shape
    assert names.model_key("Qwen/Qwen3.5-397B-A17B") is None and names.model_key("zhipuai/GLM-5") is None


def test_sliding_window_caps_cache():
    # gpt-oss-120b: 18 full layers + 18 layers capped at 128 tokens; per layer 2 × 8 × 64 × 2 = 2,048 B/token.
    # At 10,000 tokens: 2,048 × (18 × 10,000 + 18 × 128) = 373,358,592 B (models.csv kv_note: 36,864 B/token + ~4.7 MB/seq)
    m = catalog.get_model("gpt-oss-120b")
    per_layer = memory.kv_bytes_per_token_per_layer(m, "bf16")
    assert memory.kv_bytes_per_conversation(10000, per_layer, 18, 18, 128) == 2048 * (18 * 10000 + 18 * 128)


@pytest.mark.parametrize("row_id,key,dtype,tp", [("K01", "llama-3.1-8b", "bf16", 1), ("K04", "llama-3.1-70b", "fp8", 2),
                                                 ("K06", "qwen3-32b", "bf16", 1), ("K09", "mistral-small-3.2-24b", "bf16", 1)])
def test_kv_budget_reproduces_vllm_startup(row_id, key, dtype, tp):
    row = MEASURED[row_id]
    util = float(row["settings"].split("gpu_memory_utilization=")[1].split(";")[0])
    visible = float(row["gpu"].split("(")[1].split(" GiB")[0])  # "H100 80GB (79.18 GiB visible)"
    measured_weights, measured_kv = float(row["weights_GiB_per_gpu"]), float(row["kv_cache_GiB_per_gpu"])
    # the same overheads as the run: activation + non-torch memory = util × visible − weights − KV, from the log
    overhead = util * visible - measured_weights - measured_kv
    ours = memory.weights_bytes(catalog.get_model(key), dtype) / tp / GIB
    assert ours == pytest.approx(measured_weights, rel=0.02)
    predicted = memory.kv_budget_gib(visible, util, ours, overhead)
    assert predicted == pytest.approx(measured_kv, rel=0.02)


def test_k01_overheads_as_logged():
    # K01 planner_check: 0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38 GiB; ours with 8.03e9 × 2 B = 14.96 GiB of weights
    ours = memory.weights_bytes(catalog.get_model("llama-3.1-8b"), "bf16") / GIB
    assert memory.kv_budget_gib(79.18, 0.9, ours, 4.76 + 0.13) == pytest.approx(51.38, rel=0.002)


def test_h100_memory_is_driver_reported_not_marketed():
    # nvidia-smi 81,559 MiB = 79.65 GiB, not "80 GB" (= 74.5 GiB) and not 80 GiB
    g = catalog.get_gpu("h100-sxm")
    assert g.memory_gib == pytest.approx(81559 / 1024)
    assert g.memory_marketed_gb * 1e9 / GIB == pytest.approx(74.51, abs=0.01)


def test_unknown_name_suggests():
    with pytest.raises(catalog.UnknownNameError, match="did you mean 'h100-sxm'"):
        catalog.get_gpu("h100-sx")
    assert catalog.get_model("meta-llama/Llama-3.1-8B") == catalog.get_model("LLAMA-3.1-8B")
