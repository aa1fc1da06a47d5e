"""The plot in docs/mock.md: TTFT and TPOT (mean inter-token latency) against closed-loop concurrency, from the
batching engine's own model (the simulation behind /mock/capacity), for the h20-8b profile with and without a
shared system prompt. Writes docs/img/engine-latency.svg (deterministic: same numbers, same bytes).

    /work/venv/bin/python bench/engine_plot.py [--out docs/img/engine-latency.svg]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadlib.mock.engine.capacity import closed_level
from loadlib.mock.engine.params import PROFILES
from loadlib.mock.engine.sim import Workload, quantile, tpot_ms, ttft_ms

LEVELS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
WORKLOADS = {
    "prompt 1,024, answer 128 +/- 50 %": Workload(1024, 128, output_spread=0.5),
    "the same, first 768 tokens shared (prefix cache)": Workload(1024, 128, 768, output_spread=0.5),
}


def curves(work: Workload) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"ttft50": [], "ttft95": [], "tpot50": []}
    for users in LEVELS:
        seqs = closed_level(PROFILES["h20-8b"], work, users, 6)
        out["ttft50"].append(quantile([ttft_ms(s) for s in seqs], 0.5))
        out["ttft95"].append(quantile([ttft_ms(s) for s in seqs], 0.95))
        out["tpot50"].append(quantile([tpot_ms(s) for s in seqs], 0.5))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs/img/engine-latency.svg"))
    args = ap.parse_args()
    plt.rcParams["svg.hashsalt"] = "engine-latency"
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for (label, work), style in zip(WORKLOADS.items(), ("-", "--"), strict=True):
        c = curves(work)
        left.plot(LEVELS, c["ttft50"], "o" + style, label=f"p50, {label}")
        left.plot(LEVELS, c["ttft95"], "^" + style, label=f"p95, {label}", alpha=0.6)
        right.plot(LEVELS, c["tpot50"], "o" + style, label=f"p50, {label}")
    for ax, title in ((left, "TTFT (ms)"), (right, "TPOT: mean inter-token latency (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("closed-loop users")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    fig.suptitle("Batching engine, profile h20-8b: the model's own prediction (bench/engine_plot.py)", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, format="svg", metadata={"Date": None})
    print(args.out)


if __name__ == "__main__":
    main()
