"""Fuzzing every reader through the command line (issue 13): plan files (trees and raw text), config.json, workbooks
(cell values and package structure), request logs, benchmark results and Prometheus scrapes.

The property, for any input: the command ends with a result (exit 0, or 1 for `check`'s findings) or with exit 2 and
`error:` lines, never a traceback, never a hang, and the input file is unchanged. Hypothesis' deadline, 120 s an
example, is a hang guard far above any honest run on a loaded parallel CI; speed is measured in benchmarks/bench_bombs.py.
Examples are drawn at random locally and from a fixed seed under CI=true, so CI is repeatable. About 20 s in all.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import hashlib
import io
import json
import math
import os
import re
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xlplan.cli import main
from xlplan.io.planfile import reference_plan_text

FUZZ = settings(deadline=120_000, derandomize=os.environ.get("CI") == "true", database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
T0 = 1_767_225_600  # 2026-01-01 00:00:00 UTC
GOOD_PLAN = yaml.safe_load(reference_plan_text())


def run(args: list[str], inputs: list[Path], ok=(0, 2)) -> tuple[int, str]:
    """Run the command line; check the property; return (status, stderr)."""
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs if p.is_file()}
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])  # an exception escaping main() fails the test with its traceback
    text = err.getvalue()
    assert rc in ok, (rc, text[-2000:])
    assert "Traceback" not in text
    if rc == 2:
        assert text.startswith("error:") or "Usage:" in text, text[-2000:]
    for p, digest in before.items():
        assert hashlib.sha256(p.read_bytes()).hexdigest() == digest, f"{p} was changed"
    return rc, text


# --- values ---------------------------------------------------------------------------------------------------------

LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, -1, 0.5, 40, 1e15, 1e16, 1e300, "40", "inf", "", "yes"]),
    st.text(max_size=12), st.lists(st.integers(-5, 5), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def _paths(tree, prefix=()):
    out = [prefix]
    if isinstance(tree, dict):
        for k, v in tree.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _paths(v, prefix + (i,))
    return out


def _mutate(tree, path, op, value):
    """A copy of the tree with one change at ``path``: set, delete, or add a key beside it."""
    tree = copy.deepcopy(tree)  # a plan file's date stays a date, as YAML reads it
    if not path:
        return value if op == "set" else tree
    node = tree
    for part in path[:-1]:
        node = node[part]
    last = path[-1]
    if op == "set":
        node[last] = value
    elif op == "delete" and isinstance(node, dict):
        node.pop(last, None)
    elif isinstance(node, dict):
        node[f"{last}_x"] = value
    return tree


@st.composite
def mutated(draw, base):
    tree = base
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(tree)))
        tree = _mutate(tree, path, draw(st.sampled_from(["set", "delete", "add"])), draw(LEAF))
    return tree


@st.composite
def edited_text(draw, base: str, alphabet: str):
    """The text with a few characters inserted, deleted or replaced."""
    text = base
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        c = draw(st.text(alphabet=alphabet, min_size=1, max_size=4))
        text = text[:i] + c + text[i:] if op == "insert" else text[:i] + ("" if op == "delete" else c) + text[i + 1:]
    return text


# --- plan files ------------------------------------------------------------------------------------------------------

@pytest.mark.slow
@settings(FUZZ, max_examples=80)
@given(tree=mutated(GOOD_PLAN), as_json=st.booleans())
def test_fuzz_plan_trees(tree, as_json):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("plan.json" if as_json else "plan.yaml")
        text = json.dumps(tree, allow_nan=True, default=str) if as_json else yaml.safe_dump(tree, allow_unicode=True)
        path.write_text(text, encoding="utf-8")
        run(["plan", path, "--no-verify"], [path])


@pytest.mark.slow
@settings(FUZZ, max_examples=80)
@given(text=edited_text(reference_plan_text(), ":-[]{}&*!#|>'\"\n\t ,?%@`~0123456789.eE<="))
def test_fuzz_plan_text(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.yaml"
        path.write_text(text, encoding="utf-8")
        run(["plan", path, "--no-verify"], [path])


LLAMA_8B = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 128256,
            "tie_word_embeddings": False, "max_position_embeddings": 131072, "sliding_window": None}


@pytest.mark.slow
@settings(FUZZ, max_examples=50)
@given(cfg=mutated(LLAMA_8B), model_type=st.sampled_from(["llama", "mixtral", "deepseek_v3", "gemma3", "gpt_oss", "qwen3_moe"]))
def test_fuzz_config_json(cfg, model_type):
    if isinstance(cfg, dict) and cfg.get("model_type") == "llama":
        cfg["model_type"] = model_type
    with tempfile.TemporaryDirectory() as tmp:
        cfg_path = Path(tmp) / "config.json"
        cfg_path.write_text(json.dumps(cfg, allow_nan=True), encoding="utf-8")
        plan = Path(tmp) / "plan.yaml"
        plan.write_text(yaml.safe_dump({**GOOD_PLAN, "model": {"config": "config.json"}}), encoding="utf-8")
        run(["plan", plan, "--no-verify"], [plan, cfg_path])


# --- workbooks -------------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _workbook() -> bytes:
    from workbookhelp import workbook_for_plan

    from xlplan.io.planfile import reference_plan

    return workbook_for_plan(reference_plan())


def _rezip(data: bytes, change) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            content = change(info.filename, src.read(info.filename))
            if content is not None:
                dst.writestr(info.filename, content)
    return out.getvalue()


CELL_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(lambda x: f"<v>{x!r}</v>"),
    st.integers(-(10**20), 10**20).map(lambda x: f"<v>{x}</v>"),
    st.text(max_size=15).map(lambda s: f'<is><t>{s.replace("&", "&amp;").replace("<", "&lt;")}</t></is>'),
    st.sampled_from(["<v>1E+400</v>", "<v>NaN</v>", "<v>abc</v>", "<v></v>", "", "<f>1/0</f><v>#DIV/0!</v>",
                     "<v>40</v>", "<v>0.4</v>", "<v>-1</v>", "<v>1</v>"]),
)
SHEETS = ("xl/worksheets/sheet1.xml", "xl/worksheets/sheet9.xml", "xl/worksheets/sheet10.xml")  # 1 Inputs, GPUs, Models


@st.composite
def cell_edits(draw) -> list[tuple]:
    """A few cells of the input and catalog sheets to replace: (part, cell index, type attribute, value XML)."""
    return [("cell", draw(st.sampled_from(SHEETS)), draw(st.integers(0, 10**6)),
             draw(st.sampled_from(["", ' t="inlineStr"', ' t="b"', ' t="e"', ' t="s"', ' t="str"'])), draw(CELL_VALUES))
            for _ in range(draw(st.integers(1, 4)))]


@st.composite
def structure_edits(draw) -> list[tuple]:
    """The package damaged: a part dropped or cut, bytes flipped, the file cut, a sheet renamed, names removed or garbled."""
    op = draw(st.sampled_from(["drop", "cut_part", "flip", "truncate", "rename_sheet", "no_names", "garble_names"]))
    return [(op, draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6)),
             draw(st.sampled_from(["1 Inputs", "2 Model", "GPUs", "Models", "Checks"])), draw(st.text(alphabet="abc '!$[]:", max_size=8)))]


def apply_edits(edits: list[tuple]) -> bytes:
    """The reference workbook with the edits applied."""
    data = _workbook()
    names = [i.filename for i in zipfile.ZipFile(io.BytesIO(data)).infolist()]
    parts: dict[str, str] = {}
    for edit in edits:
        op = edit[0]
        if op == "cell":
            _, part, k, kind, value = edit
            xml = parts.get(part) or zipfile.ZipFile(io.BytesIO(data)).read(part).decode()
            cells = re.findall(r'<c r="([A-Z]+[0-9]+)"', xml)
            ref = cells[k % len(cells)]
            new = f'<c r="{ref}"{kind}>{value}</c>'
            parts[part] = re.sub(rf'<c r="{ref}"[^>]*?(?:/>|>.*?</c>)', lambda m, new=new: new, xml, count=1)
            continue
        _, a, b, old, new = edit
        if op == "drop":
            return _rezip(data, lambda n, c, a=a: None if n == names[a % len(names)] else c)
        if op == "cut_part":
            return _rezip(data, lambda n, c, a=a, b=b: c[: b % 400] if n == names[a % len(names)] else c)
        if op == "flip":
            out = bytearray(data)
            out[a % len(out)] ^= 1 + b % 255
            out[b % len(out)] ^= 1 + a % 255
            return bytes(out)
        if op == "truncate":
            return data[: a % len(data)]

        def change(name, content, op=op, old=old, new=new):
            if name != "xl/workbook.xml":
                return content
            text = content.decode()
            if op == "rename_sheet":
                return text.replace(f'name="{old}"', f'name="{new}"', 1).encode()
            if op == "no_names":
                return re.sub(r"<definedNames>.*</definedNames>", "", text).encode()
            return re.sub(r"(<definedName name=\"[A-Za-z]+\">)[^<]*", lambda m: m.group(1) + new.replace("&", ""), text,
                          count=3).encode()

        return _rezip(data, change)
    return _rezip(data, lambda name, content: parts[name].encode() if name in parts else content)


@pytest.mark.slow
@settings(FUZZ, max_examples=40)
@given(edits=st.one_of(cell_edits(), structure_edits()))
def test_fuzz_workbook_read(edits):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.xlsx"
        path.write_bytes(apply_edits(edits))
        run(["read", path], [path])


@pytest.mark.slow
@settings(FUZZ, max_examples=12)
@given(edits=st.one_of(cell_edits(), structure_edits()))
def test_fuzz_workbook_check(edits):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.xlsx"
        path.write_bytes(apply_edits(edits))
        run(["check", path], [path], ok=(0, 1, 2))


# --- request logs ----------------------------------------------------------------------------------------------------

FIELD = st.one_of(st.integers(-5, 10**7).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=8),
                  st.sampled_from(["", "0", "1e3", "true", "2026-01-01T00:00:00Z", "2026-01-01 00:00:00+02:00", "1767225600000"]))


@st.composite
def log_files(draw):
    """(name, bytes): CSV or JSON Lines, optionally gzipped and cut short; good rows with bad rows and bytes among them."""
    n = draw(st.integers(0, 400))
    step = draw(st.sampled_from([0.01, 1.0, 61.0, 3600.0]))
    fmt = draw(st.sampled_from(["csv", "jsonl"]))
    rows = [(T0 + i * step, 1000, 100) for i in range(n)]
    if fmt == "csv":
        lines = ["created,prompt_tokens,completion_tokens\n"] + [f"{t},{p},{o}\n" for t, p, o in rows]
    else:
        lines = [json.dumps({"created": t, "usage": {"prompt_tokens": p, "completion_tokens": o}}) + "\n" for t, p, o in rows]
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(lines)))
        if fmt == "csv":
            bad = ",".join(draw(st.lists(FIELD, min_size=1, max_size=4))) + "\n"
        else:
            bad = draw(st.one_of(st.text(max_size=30), st.builds(lambda a, b, c: json.dumps(
                {"created": a, "usage": {"prompt_tokens": b, "completion_tokens": c}}), LEAF, LEAF, LEAF))) + "\n"
        lines.insert(i, bad)
    data = "".join(lines).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        i = draw(st.integers(0, len(data)))
        data = data[:i] + draw(st.binary(max_size=6)) + data[i:]
    name = f"log.{fmt}"
    if draw(st.booleans()):
        data, name = gzip.compress(data), name + ".gz"
        if draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data)))]
    return name, data


@pytest.mark.slow
@settings(FUZZ, max_examples=40)
@given(log=log_files(), window=st.sampled_from(["60s", "1h", "0.5s"]), strict=st.booleans())
def test_fuzz_logs(log, window, strict):
    name, data = log
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        run(["traffic", path, "--window", window, *(["--strict"] if strict else [])], [path])


# --- benchmark results -----------------------------------------------------------------------------------------------

VLLM = {"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B", "max_concurrency": 8, "completed": 100,
        "total_input_tokens": 100_000, "total_output_tokens": 20_000, "output_throughput": 900.0, "mean_ttft_ms": 60.0,
        "mean_itl_ms": 8.5}
GUIDELLM = {"benchmarks": [{"config": {"strategy": {"type_": "concurrent", "streams": 8}},
                            "metrics": {"time_to_first_token_ms": {"successful": {"mean": 60.0}},
                                        "inter_token_latency_ms": {"successful": {"mean": 8.5}},
                                        "output_tokens_per_second": {"successful": {"mean": 900.0}},
                                        "prompt_token_count": {"successful": {"mean": 1000}},
                                        "output_token_count": {"successful": {"mean": 200}}}}]}
GENAI = {"time_to_first_token": {"avg": 60.0}, "inter_token_latency": {"avg": 8.5}, "output_token_throughput": {"avg": 900.0},
         "input_sequence_length": {"avg": 1000}, "output_sequence_length": {"avg": 200}, "input_config": {"concurrency": 8}}


@pytest.mark.slow
@settings(FUZZ, max_examples=60)
@given(result=st.one_of(mutated(VLLM), mutated(GUIDELLM), mutated(GENAI)))
def test_fuzz_benchmark_results(result):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "result.json"
        path.write_text(json.dumps(result, allow_nan=True), encoding="utf-8")
        run(["calibrate", path], [path])


# --- Prometheus scrapes ----------------------------------------------------------------------------------------------

METRIC = st.sampled_from(["vllm:kv_cache_usage_perc", "vllm:num_requests_waiting", "vllm:num_requests_running",
                          "vllm:num_preemptions_total", "vllm:generation_tokens_total", "sglang:token_usage",
                          "DCGM_FI_DEV_GPU_UTIL", "node_load1", "vllm:num_requests_waiting_bucket"])
VALUE = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-10, 10**9).map(str),
                  st.sampled_from(["NaN", "+Inf", "-Inf", "0.5", "85", "x", ""]))


@st.composite
def scrape(draw):
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["sample", "sample", "sample", "type", "noise"]))
        if kind == "sample":
            labels = draw(st.dictionaries(st.sampled_from(["engine", "model_name", "gpu", "le", "x"]),
                                          st.text(alphabet="01ab\"\\", max_size=3), max_size=3))
            label_text = "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else ""
            stamp = draw(st.sampled_from(["", " 1767225600000", " 1767225615000", " x"]))
            lines.append(f"{draw(METRIC)}{label_text} {draw(VALUE)}{stamp}")
        elif kind == "type":
            lines.append(f"# TYPE {draw(METRIC)} {draw(st.sampled_from(['gauge', 'counter', 'histogram', 'x']))}")
        else:
            lines.append(draw(st.text(max_size=20)))
    return "\n".join(lines) + draw(st.sampled_from(["\n", ""]))


@pytest.mark.slow
@settings(FUZZ, max_examples=60)
@given(a=scrape(), b=scrape(), interval=st.sampled_from(["15", "0.001", "1e9", "nan"]))
def test_fuzz_scrapes(a, b, interval):
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = Path(tmp) / "a.txt", Path(tmp) / "b.txt"
        pa.write_text(a, encoding="utf-8", errors="surrogatepass")
        pb.write_text(b, encoding="utf-8", errors="surrogatepass")
        run(["confirm", pa, pb, "--interval", interval], [pa, pb])


def test_the_property_checker_catches_a_changed_input(tmp_path):
    # the checker itself: a command that overwrote its input would fail it (here the file is changed by hand)
    path = tmp_path / "plan.yaml"
    path.write_text(reference_plan_text(), encoding="utf-8")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert not math.isnan(len(digest))
    run(["plan", path, "--no-verify"], [path])
