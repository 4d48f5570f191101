"""Benchmark: Excel-function calls per second, as plain Python calls and through xlwings' Office.js dispatch.

The Office.js path is what xlwings Server and xlwings Lite run for each cell
(`xlwings.server.custom_functions_call`: argument conversion, the call, result
conversion), without the network or Excel. Run:

    .venv/bin/python benchmarks/bench_udfs.py
"""

from __future__ import annotations

import asyncio
import os
import time

os.environ.setdefault("XLWINGS_ON_SERVER", "true")
os.environ.setdefault("XLWINGS_LICENSE_KEY", "noncommercial")

import xlwings
from xlwings.server import custom_functions_call

from udfs import functions as U

CASES = {
    "LITTLES_LAW": ("littles_law", (40.0, 15.0)),
    "MEMORY_GPUS": ("memory_gpus", (600.0, 0.28076171875, 53.73, 1.0, 1.0)),
    "PREFILL_TFLOPS": ("prefill_tflops", (40.0, "llama-3.1-8b", 2000.0, 6000.0, 9000.0, 0.0)),
    "SENSITIVITIES": ("sensitivities", (None,)),
}


def rate(fn, seconds: float = 1.0) -> float:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def main() -> None:
    print(f"{'function':16s} {'plain calls/s':>14s} {'Office.js calls/s':>18s}")
    for label, (name, args) in CASES.items():
        f = getattr(U, name)
        plain = rate(lambda f=f, args=args: f(*args))
        data = {"func_name": name, "args": [[[a]] for a in args], "version": xlwings.__version__, "client": "Office.js",
                "runtime": "1.4", "culture_info_name": "en-US", "date_format": "M/d/yyyy"}

        async def many(k: int = 200, data=data):
            for _ in range(k):
                await custom_functions_call(data, U)

        start = time.perf_counter()
        k = 200 if label != "SENSITIVITIES" else 10
        asyncio.run(many(k))
        officejs = k / (time.perf_counter() - start)
        print(f"{label:16s} {plain:14,.0f} {officejs:18,.0f}")


if __name__ == "__main__":
    main()
