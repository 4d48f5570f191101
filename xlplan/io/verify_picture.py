"""The picture of a simulated fleet: p95 TTFT and inter-token gap against GPUs, the promise and the runbook's load marked."""

from __future__ import annotations

import math
from pathlib import Path


def picture_path(note: Path) -> Path:
    """Where the picture goes beside a note: ``NOTE.verified.png``. [path]"""
    return note.with_name(note.stem + ".verified.png")


def picture_png(points, ttft_target_s: float, itl_target_s: float, percentile: float, runbook_load: int,
                title: str = "") -> bytes:
    """A PNG of p95 TTFT (left) and the p95 inter-token gap (right) against GPUs, log scale. [bytes]

    Parameters
    ----------
    points
        :class:`xlplan.schema.result.SimulatedPoint` items, one per fleet size simulated.
    ttft_target_s, itl_target_s
        The promise. [s]
    percentile
        The promise's percentile. [percent]
    runbook_load
        The runbook's load, marked. [GPUs]
    """
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted(points, key=lambda p: p.gpus)
    x = [p.gpus for p in pts]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), dpi=110)
    for ax, key, target, name, log in ((axes[0], "ttft_at_percentile_s", ttft_target_s, "TTFT", True),
                                       (axes[1], "itl_at_percentile_s", itl_target_s, "inter-token gap", False)):
        y = [getattr(p, key) if math.isfinite(getattr(p, key)) else float("nan") for p in pts]
        colours = ["#2ca02c" if p.meets_promise else "#d62728" for p in pts]
        ax.plot(x, y, color="#1f77b4", lw=1.2, zorder=1)
        ax.scatter(x, y, c=colours, zorder=2, s=28)
        ax.axhline(target, color="#ff7f0e", ls="--", lw=1, label=f"promise: {target * 1000:,.0f} ms")
        ax.axvline(runbook_load, color="#7f7f7f", ls=":", lw=1, label=f"runbook's load: {runbook_load} GPUs")
        if log:
            ax.set_yscale("log")
        else:
            ax.set_ylim(0, 1.25 * max([target] + [v for v in y if math.isfinite(v)]))
        ax.set_xlabel("GPUs serving the peak")
        ax.set_ylabel(f"p{percentile:g} {name} [s]")
        ax.set_xticks(x)
        ax.set_title(f"p{percentile:g} {name} (green: promise kept)", fontsize=10)
        ax.legend(loc="upper right", fontsize=8)
    if title:
        fig.suptitle(f"{title}: simulated at peak", fontsize=11)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
