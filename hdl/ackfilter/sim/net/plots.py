"""The experiments' plots (matplotlib): each figure's median over the
valid runs with its range, by variant and link."""

from ...units import format_rate
from .scenarios import CAKE, GRADES, L_LOADS
from .tables import aggregate
from .variants import VARIANTS

__all__ = ["plots"]


def _yerr(rs, fig, scale):
    """matplotlib's ``yerr`` (below, above) of aggregated rows' medians: their ranges."""
    lo = [(r["_y"] - (r.get("spread") or {}).get(fig, [r["_y"] * scale] * 2)[0] / scale) for r in rs]
    hi = [((r.get("spread") or {}).get(fig, [r["_y"] * scale] * 2)[1] / scale - r["_y"]) for r in rs]
    return [lo, hi]


def _save(fig, path):
    """``fig`` laid out, written to ``path`` and closed; returns ``path``."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plots(rows, out_dir, name):
    """PNG plots of the medians over the runs, with their ranges as error
    bars; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = []
    rows = aggregate(rows)
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in rows)]

    s1 = [r for r in rows if r["scenario"] == "S1" and r["valid"]]
    if s1:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for v in variants:
            rs = sorted((r for r in s1 if r["variant"] == v), key=lambda r: r["uplink_bps"])
            if rs:
                for r in rs:
                    r["_y"] = r["forward_goodput_bps"] / 1e6
                ax.errorbar([r["uplink_bps"] / 1e3 for r in rs], [r["_y"] for r in rs],
                            yerr=_yerr(rs, "forward_goodput_bps", 1e6), fmt="o-", capsize=3, label=v)
        for key, marker, label in (("fifo", "x", "CAKE anchor: FIFO"), ("cake", "s", "CAKE anchor: ack-filter"),
                                   ("cake-aggressive", "^", "CAKE anchor: aggressive")):
            pts = sorted((up, a[key]) for (sc, up), a in CAKE.items() if sc == "S1")
            ax.plot([p[0] / 1e3 for p in pts], [p[1] / 1e3 for p in pts], marker, color="gray",
                    linestyle=":", label=label, markerfacecolor="none")
        ax.set_xscale("log")
        ax.set_xticks([28.8, 64, 128, 256], ["28.8k", "64k", "128k", "256k"])
        ax.set_xlabel("uplink rate (bit/s)")
        ax.set_ylabel("download goodput (Mb/s)")
        ax.set_title("S1: one download, 10 Mb/s down, RTT 50 ms")
        ax.set_ylim(0, 10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
        paths.append(_save(fig, out_dir / f"{name}-s1-throughput.png"))

    s4 = [r for r in rows if r["scenario"] == "S4" and r["valid"]]
    if s4:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.8))
        for v in variants:
            pts = sorted((r["flows"], r["jain"] or 1.0, r["forward_goodput_bps"]) for r in s4 if r["variant"] == v)
            if pts:
                ax1.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=v)
                ax2.plot([p[0] for p in pts], [p[2] / 1e6 for p in pts], "o-", label=v)
        ax1.axhline(0.99, color="gray", linestyle=":", label="CAKE anchor: ack-filter (>= 0.99)")
        ax1.plot([12], [0.51], "x", color="gray", label="CAKE anchor: FIFO at 12")
        ax1.set_xlabel("parallel downloads")
        ax1.set_ylabel("Jain fairness index")
        ax1.set_ylim(0, 1.05)
        ax2.axhspan(6.0, 7.1, color="gray", alpha=0.15, label="CAKE ack-filter")
        ax2.set_xlabel("parallel downloads")
        ax2.set_ylabel("aggregate goodput (Mb/s)")
        ax2.set_ylim(0, 10)
        for ax in (ax1, ax2):
            ax.grid(True, alpha=0.3)
        ax1.legend(fontsize=7, loc="lower left")
        fig.suptitle("S4: n downloads, uplink 64 kb/s")
        paths.append(_save(fig, out_dir / f"{name}-s4-jain.png"))

    s5 = [r for r in rows if r["scenario"] in ("S5", "S5U") and r["valid"] and r["page_time_s"]]
    if s5:
        groups = sorted({(r["scenario"], r["uplink_bps"]) for r in s5}, key=lambda g: (g[0] != "S5", g[1]))
        fig, ax = plt.subplots(figsize=(9, 4))
        width = 0.8 / max(1, len(variants))
        for i, v in enumerate(variants):
            xs, rs = [], []
            for gi, g in enumerate(groups):
                r = next((r for r in s5 if (r["scenario"], r["uplink_bps"]) == g and r["variant"] == v), None)
                if r:
                    xs.append(gi + (i - len(variants) / 2 + 0.5) * width)
                    r["_y"] = r["page_time_s"]
                    rs.append(r)
            if xs:
                ax.bar(xs, [r["_y"] for r in rs], width=width, yerr=_yerr(rs, "page_time_s", 1), capsize=2,
                       label=v)
        for gi, g in enumerate(groups):
            a = CAKE.get(g, {})
            if "cake_page_s" in a:
                lo, hi = a["cake_page_s"]
                ax.plot([gi - 0.45, gi + 0.45], [hi, hi], color="black", linestyle=":")
        ax.set_xticks(range(len(groups)), [f"{s} {format_rate(u)}" for s, u in groups])
        ax.set_yscale("log")
        ax.set_ylabel("page time (s, log)")
        ax.set_title("S5 / S5U: Wu & Williamson's page, 1.5 Mb/s down (dotted: CAKE's worst)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=6, ncol=3)
        paths.append(_save(fig, out_dir / f"{name}-s5-page-time.png"))

    s3 = [r for r in rows if r["scenario"] == "S3" and r["valid"]]
    if s3:
        ups = sorted({r["uplink_bps"] for r in s3})
        fig, axes = plt.subplots(1, len(ups), figsize=(5.5 * len(ups), 5), squeeze=False)
        for ax, up in zip(axes[0], ups):
            rs = [r for r in s3 if r["uplink_bps"] == up]
            xs = range(len(rs))
            for r in rs:
                r["_y"] = r["forward_goodput_bps"] / 1e6
            ax.bar([x - 0.2 for x in xs], [r["_y"] for r in rs], 0.4, label="download (Mb/s)",
                   yerr=_yerr(rs, "forward_goodput_bps", 1e6), capsize=2)
            ax2 = ax.twinx()
            for r in rs:
                r["_y"] = (r["reverse_goodput_bps"] or 0) / 1e3
            ax2.bar([x + 0.2 for x in xs], [r["_y"] for r in rs], 0.4, color="tab:orange", label="upload (kb/s)",
                    yerr=_yerr(rs, "reverse_goodput_bps", 1e3), capsize=2)
            ax2.axhline(up / 2e3, color="tab:orange", linestyle=":")
            ax.set_xticks(list(xs), [r["variant"] for r in rs], rotation=60, ha="right", fontsize=7)
            ax.set_ylabel("download goodput (Mb/s)")
            ax2.set_ylabel("upload goodput (kb/s)")
            handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
            # On the twin axes, which are drawn over the first.
            ax2.legend(handles + [plt.Line2D([], [], color="tab:orange", linestyle=":")],
                       ["download (Mb/s, left)", "upload (kb/s, right)", "half the uplink"],
                       fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.66), ncol=3, framealpha=1)
            ax.set_title(f"S3: download + upload, uplink {format_rate(up)}")
            ax.set_ylim(0, 10)
            ax2.set_ylim(0, up / 1e3)
        paths.append(_save(fig, out_dir / f"{name}-s3-two-way.png"))
    lrows = [r for r in rows if r["scenario"] in L_LOADS and r["valid"] and r.get("probe")
             and r["probe"]["added_ms"]["median"] is not None]
    if lrows:
        links = sorted({(r["uplink_bps"], r["downlink_bps"], r.get("rtt_ms", 50)) for r in lrows})
        loads = [n for n in L_LOADS if any(r["scenario"] == n for r in lrows)]
        lvars = [v for v in variants if any(r["variant"] == v for r in lrows)]
        fig, axes = plt.subplots(1, len(links), figsize=(4.6 * len(links), 4.2), squeeze=False, sharey=True)
        width = 0.8 / max(1, len(lvars))
        for ax, link in zip(axes[0], links):
            for i, v in enumerate(lvars):
                rs = [next((r for r in lrows if r["variant"] == v and r["scenario"] == n and
                            (r["uplink_bps"], r["downlink_bps"], r.get("rtt_ms", 50)) == link), None)
                      for n in loads]
                xs = [k + (i - len(lvars) / 2 + 0.5) * width for k, r in enumerate(rs) if r]
                rs = [r for r in rs if r]
                for r in rs:
                    r["_y"] = max(0.1, r["probe"]["added_ms"]["median"])
                if rs:
                    err = _yerr(rs, "probe.added_ms.median", 1)
                    err = [[max(0.0, min(e, y - 0.05)) for e, y in zip(err[0], (r["_y"] for r in rs))], err[1]]
                    ax.bar(xs, [r["_y"] for r in rs], width=width, yerr=err, capsize=2, label=v,
                           color=f"C{i % 10}")     # a variant's colour in every panel
            for bound, g in GRADES[1:]:
                ax.axhline(bound, color="gray", linestyle=":", linewidth=0.8)
                ax.text(len(loads) - 0.45, bound, f" {g}/", fontsize=6, va="bottom", color="gray")
            ax.set_xticks(range(len(loads)), loads)
            ax.set_yscale("log")
            ax.set_title(f"{format_rate(link[0])} / {format_rate(link[1])}, RTT {link[2]} ms", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
        axes[0][0].set_ylabel("probe's added round trip, median (ms, log)")
        # Every variant in the legend, whichever panels it ran in.
        from matplotlib.patches import Patch
        axes[0][-1].legend(handles=[Patch(color=f"C{i % 10}", label=v) for i, v in enumerate(lvars)],
                           fontsize=6)
        fig.suptitle("Latency under load: LU upload, LD download, LB both, LP page during an upload "
                     "(dotted: the grades' bounds)", fontsize=9)
        paths.append(_save(fig, out_dir / f"{name}-latency.png"))
    return paths
