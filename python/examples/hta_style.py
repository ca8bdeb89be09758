"""A distributed-training profile, the way Holistic Trace Analysis users
work in a notebook, with lumos: load a job, the time breakdown per step,
the top kernels, the stragglers, a what-if, a plot.

HTA                                          lumos
-------------------------------------------  ---------------------------------------------
TraceAnalysis(trace_dir=d)                   job = lumos.load_job(d); r = job.replay()
get_temporal_breakdown()                     r.step_breakdown  (exposed compute/overlap/comm/idle)
get_gpu_kernel_breakdown()                   r.top_kernels(n), r.kernels  (per name, per operator)
get_comm_comp_overlap()                      r.breakdown (overlapped_us over busy time)
(straggler analysis)                         r.stragglers(), r.collective_ranks (who waited for whom)
(no equivalent: HTA only reads what ran)     job.replay(scale_rank={3: 1.5}), lumos.predict(...)

Run: python hta_style.py [TRACE_DIR] [PLOT.png]
(default TRACE_DIR: the corpus' 8-rank DLRM job, ../shared/traces or $LUMOS_CORPUS)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

import lumos

pd.set_option("display.width", 160)
pd.set_option("display.max_columns", 12)
pd.set_option("display.max_colwidth", 48)


def default_dir() -> Path:
    corpus = os.environ.get("LUMOS_CORPUS") or Path(__file__).resolve().parents[3] / "shared" / "traces"
    return Path(corpus) / "multi-rank" / "dlrm-8xv100"


def main() -> None:
    trace_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir()
    plot_to = sys.argv[2] if len(sys.argv) > 2 else None

    # 1. Load the job once (every rank's trace, read in parallel), replay it.
    job = lumos.load_job(trace_dir)
    print(f"== {job!r}: {len(job.programs())} distinct rank program(s)")
    base = job.replay()
    print(base.steps.to_string(index=False))

    # 2. Where each step's GPU time went, per rank (HTA's temporal breakdown).
    b = base.step_breakdown.query("side == 'measured'")
    b = b.assign(**{
        "compute_%": 100 * b.exposed_compute_us / b.total_us,
        "overlap_%": 100 * b.overlapped_us / b.total_us,
        "comm_%": 100 * b.exposed_comm_us / b.total_us,
        "idle_%": 100 * b.idle_us / b.total_us,
    })
    print("\n== breakdown per step (measured)")
    print(b[["rank", "step", "total_us", "compute_%", "overlap_%", "comm_%", "idle_%"]]
          .round(1).to_string(index=False))

    # 3. Top kernels over all ranks, and the operators that launch them.
    print("\n== top kernels (measured GPU time)")
    top = base.top_kernels(8, side="measured")
    top["name"] = top["name"].str.slice(0, 60)
    print(top.round(1).to_string(index=False))
    print("\n== top launching operators")
    print(base.top_kernels(5, by="operator", side="measured").round(1).to_string(index=False))

    # 4. Stragglers: who kept the others waiting in collectives.
    s = base.stragglers(side="measured")
    print("\n== stragglers (measured): time others waited for each rank")
    print(s[["rank", "measured_caused_us", "measured_last_arrivals", "measured_wait_us"]]
          .to_string(index=False))
    worst = int(s["rank"].iloc[0])

    # 5. What-if: the worst straggler's compute 25% faster.
    fast = job.replay(scale_rank={worst: 0.75})
    cmp = base.job_steps[["step", "measured_us", "replayed_us"]].assign(
        what_if_us=fast.job_steps["replayed_us"])
    cmp["change_%"] = 100 * (cmp.what_if_us - cmp.replayed_us) / cmp.replayed_us
    print(f"\n== what-if: rank {worst}'s GPU compute x0.75 (job step = slowest rank's)")
    print(cmp.round(2).to_string(index=False))

    # 6. A plot: each rank's step, measured, replayed and under the what-if.
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib is not installed: no plot)")
        return
    per_rank = base.steps.groupby("rank")[["measured_us", "replayed_us"]].mean()
    per_rank["what_if_us"] = fast.steps.groupby("rank")["replayed_us"].mean()
    per_rank.columns = ["measured", "replayed", "what-if"]
    ax = (per_rank / 1e3).plot.bar(figsize=(8, 4))
    ax.set_ylabel("step time (ms)")
    ax.set_title(f"{trace_dir.name}: step per rank; what-if: rank {worst} compute x0.75")
    plt.tight_layout()
    if plot_to:
        plt.savefig(plot_to)
        print(f"\nplot written to {plot_to}")


if __name__ == "__main__":
    main()
