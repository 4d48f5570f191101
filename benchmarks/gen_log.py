"""Generate a request log for the traffic benchmark: N requests over 30 days, OpenAI-style column names, CSV.

    .venv/bin/python benchmarks/gen_log.py [N] [OUT]      (defaults: 10,000,000 and /tmp/xlplan-10m.csv)

Arrivals follow a daily cycle (busiest mid-afternoon); prompt and output lengths are
lognormal (median 1,500 / 300 tokens); a quarter of each prompt is a cached prefix.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

T0 = 1_767_225_600  # 2026-01-01 UTC


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    out = sys.argv[2] if len(sys.argv) > 2 else "/tmp/xlplan-10m.csv"
    rng = np.random.default_rng(0)
    days = 30
    # thinning a uniform draw by a daily cycle: rate ∝ 1 + 0.6 sin(2π (hour - 9) / 24)
    t = rng.uniform(0, days * 86_400, int(n * 1.7))
    keep = rng.uniform(0, 1.6, t.size) < 1 + 0.6 * np.sin(2 * np.pi * ((t / 3600) % 24 - 9) / 24)
    t = np.sort(t[keep][:n]) + T0
    prompt = np.maximum(1, np.round(rng.lognormal(np.log(1500), 0.7, t.size))).astype(np.int64)
    table = pa.table({"created": t.astype(np.int64), "prompt_tokens": prompt,
                      "completion_tokens": np.maximum(1, np.round(rng.lognormal(np.log(300), 0.6, t.size))).astype(np.int64),
                      "cached_tokens": prompt // 4})
    pacsv.write_csv(table, out)
    print(f"wrote {t.size:,} requests to {out}")


if __name__ == "__main__":
    main()
