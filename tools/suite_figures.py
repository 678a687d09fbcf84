"""The figures of tools/bench_suite.py's report (PNGs, matplotlib): latency CDFs per load,
wake-up p99 per phase, RFC 2544 throughput and latency, and the redundancy's."""

from __future__ import annotations

import os

from tools import bench_frer
from tools.suite_config import LOADS
from tools.suite_tables import COL_NAMES, COLUMNS, LOAD_NAMES


def figures(results: dict, outdir: str) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    os.makedirs(outdir, exist_ok=True)
    out = {}
    mx = results["matrix"]
    if mx:
        loads = [ld for ld in LOADS if any(k.endswith("/" + ld) for k in mx)]
        from matplotlib.ticker import LogLocator, NullFormatter

        fig, axes = plt.subplots(
            1, len(loads), figsize=(3.2 * len(loads), 3.2), sharey=True, sharex=True, squeeze=False
        )
        colours = dict(
            zip(
                COLUMNS,
                ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"),
            )
        )
        for ax, load in zip(axes[0], loads):
            empty = []
            for a, d in COLUMNS:
                cdf = mx.get(f"{a}/{d}/{load}", {}).get("cdf_us")
                if cdf:
                    ax.plot(
                        np.maximum(cdf, 1),
                        np.linspace(0, 1, len(cdf)),
                        color=colours[(a, d)],
                        label=COL_NAMES[(a, d)],
                    )
                else:
                    empty.append(COL_NAMES[(a, d)])
            if empty:
                ax.text(
                    0.03,
                    0.5,
                    "nothing delivered:\n" + "\n".join(empty),
                    fontsize=6,
                    transform=ax.transAxes,
                )
            ax.axvline(1000, color="grey", lw=0.8, ls="--")
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_title(LOAD_NAMES[load], fontsize=9)
            ax.set_xlabel("end-to-end latency (us)", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("CDF", fontsize=8)
        handles = [plt.Line2D([], [], color=colours[c], label=COL_NAMES[c]) for c in COLUMNS]
        axes[0][0].legend(handles=handles, fontsize=6, loc="lower right")
        fig.tight_layout()
        out["a"] = os.path.join(outdir, "a_latency_cdf.png")
        fig.savefig(out["a"], dpi=70)
        plt.close(fig)
    wk = results["wakeup"]
    if wk:
        keys = list(wk)
        series = (
            ("RT thread", "station_wakeup_us"),
            ("RT app", "rt_app_wakeup_us"),
            ("cyclictest", "cyclictest_us"),
        )
        fig, ax = plt.subplots(figsize=(7, 3))
        x = np.arange(len(keys))
        for i, (name, field) in enumerate(series):
            ax.bar(
                x + (i - 1) * 0.27, [wk[k][field].get("p99") or 0 for k in keys], 0.27, label=name
            )
        ax.set_xticks(x, keys, fontsize=7, rotation=30)
        ax.set_ylabel("wake-up p99 (us)", fontsize=8)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, axis="y")
        fig.tight_layout()
        out["b"] = os.path.join(outdir, "b_wakeup_p99.png")
        fig.savefig(out["b"], dpi=70)
        plt.close(fig)
    rfc = results["rfc2544"]
    if rfc:
        rt, vn = rfc.get("rt_path", {}), rfc.get("vnic", {}).get("sizes", {})
        fig, ax = plt.subplots(1, 2, figsize=(8, 3))
        sizes = sorted(int(s) for s in rt) or sorted(int(s) for s in vn)
        if rt:
            ax[0].plot(
                sizes, [rt[str(s)]["throughput_pct"] for s in sizes], "o-", label="RT path (NoMAC)"
            )
            ax[1].plot(
                sizes,
                [rt[str(s)]["latency_us"].get("p50") or 0 for s in sizes],
                "o-",
                label="RT path one-way p50",
            )
            ax[1].plot(
                sizes,
                [rt[str(s)]["latency_us"].get("p99.9") or 0 for s in sizes],
                "o--",
                label="RT path one-way p99.9",
            )
        if vn:
            vs = sorted(int(s) for s in vn)
            ax[0].plot(
                vs,
                [vn[str(s)]["pct_of_nrt_capacity"] for s in vs],
                "s-",
                label="VNIC (% of NRT share)",
            )
            ax[1].plot(
                vs,
                [vn[str(s)]["rtt_us"].get("p50") or 0 for s in vs],
                "s-",
                label="VNIC ping RTT p50",
            )
        ax[0].set_ylabel("zero-loss throughput (%)", fontsize=8)
        ax[1].set_ylabel("latency (us)", fontsize=8)
        ax[1].set_yscale("log")
        for a in ax:
            a.set_xlabel("frame size (B)", fontsize=8)
            a.set_xscale("log", base=2)
            a.tick_params(labelsize=7)
            a.legend(fontsize=6)
            a.grid(alpha=0.3)
        fig.tight_layout()
        out["c"] = os.path.join(outdir, "c_rfc2544.png")
        fig.savefig(out["c"], dpi=70)
        plt.close(fig)
        red = bench_frer.figure(results, outdir, plt)
        if red:
            out["c-frer"] = red
    return out
