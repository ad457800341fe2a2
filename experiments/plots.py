"""PNG plots of the experiments (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def ladder_chart(records: Sequence[dict], path: Path, *, title: str, peak: Optional[float],
                 numpy_gflops: Optional[float], paper_peak: float,
                 numpy_paper: Optional[float] = None) -> None:
    """Bars per step like the paper's Figure 5: LLVM's vectorizers on and off side by side,
    then numpy; the paper's GFLOPS as markers (``numpy_paper``: its OpenBLAS), our FMA peak
    and numpy as lines."""
    plt = _pyplot()
    labels: list[str] = []
    for r in records:
        if r["label"] not in labels:
            labels.append(r["label"])
    on = {r["label"]: r for r in records if r["llvm_vectorize"]}
    off = {r["label"]: r for r in records if not r["llvm_vectorize"]}
    fig, ax = plt.subplots(figsize=(max(8.0, 0.75 * len(labels) + 2), 5.5))
    width = 0.4
    for offset, series, color, name in (
            (-width / 2, on, "#4c72b0", "polyopt, LLVM vectorizers on (LLVM 22 default)"),
            (width / 2, off, "#dd8452", "polyopt, LLVM vectorizers off (the paper's setting)")):
        xs, ys = [], []
        for i, label in enumerate(labels):
            r = series.get(label)
            if r is not None and r["status"] == "ok":
                # a step without a second series gets the whole slot
                x = i if label not in (off if series is on else on) else i + offset
                xs.append(x)
                ys.append(r["gflops"])
        bars = ax.bar(xs, ys, width=width, color=color, label=name)
        ax.bar_label(bars, labels=[f"{y:.1f}" if y >= 10 else f"{y:.2f}" for y in ys],
                     fontsize=7, padding=1)
    if numpy_gflops:
        labels.append("numpy (OpenBLAS)")
        bars = ax.bar([len(labels) - 1], [numpy_gflops], width=width, color="green")
        ax.bar_label(bars, labels=[f"{numpy_gflops:.1f}"], fontsize=7, padding=1)
    paper_x, paper_y = [], []
    for i, label in enumerate(labels):
        r = on.get(label) or off.get(label)
        if r and r.get("paper") and r["paper"]["gflops"]:
            paper_x.append(i)
            paper_y.append(r["paper"]["gflops"])
    if numpy_gflops and numpy_paper:
        paper_x.append(len(labels) - 1)
        paper_y.append(numpy_paper)
    if paper_x:
        ax.scatter(paper_x, paper_y, marker="D", color="black", zorder=3, s=22,
                   label=f"paper (i7-8700K, peak {paper_peak:.1f} GFLOPS)")
    if peak:
        ax.axhline(peak, color="gray", linestyle="--", linewidth=1)
        ax.annotate(f"measured FMA peak {peak:.1f}", (len(labels) - 0.5, peak), ha="right",
                    va="bottom", fontsize=8, color="gray")
    if numpy_gflops:
        ax.axhline(numpy_gflops, color="green", linestyle=":", linewidth=1.2)
        ax.annotate(f"numpy (OpenBLAS, 1 thread) {numpy_gflops:.1f}", (-0.5, numpy_gflops),
                    ha="left", va="bottom", fontsize=8, color="green")
    unavailable = [i for i, label in enumerate(labels)
                   if (label in on or label in off)
                   and all(r["status"] != "ok" for r in (on.get(label), off.get(label)) if r)]
    for i in unavailable:
        ax.text(i, 0, "not\navailable", ha="center", va="bottom", fontsize=7, color="red")
    # steps timed at another size than the ladder's (the slow first ones in quick mode)
    size = {r["label"]: f"{r['m']}x{r['n']}x{r['k']}" for r in records}
    ladder_size = size[records[-1]["label"]] if records else ""
    ticks = [label if size.get(label, ladder_size) == ladder_size
             else f"{label} ({size[label]})" for label in labels]
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(ticks, rotation=35, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylabel("GFLOPS (median)")
    ax.set_ylim(0, max([peak or 0, numpy_gflops or 0]
                       + [r["gflops"] for r in records if r["status"] == "ok"] + [1]) * 1.12)
    ax.set_title(title, pad=30)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sweep_chart(records: Sequence[dict], path: Path, *, peaks: dict, title: str) -> None:
    """GFLOPS against size, one panel per element type: polyopt and numpy, and the peak."""
    plt = _pyplot()
    dtypes = [d for d in ("f64", "f32") if any(r["dtype"] == d for r in records)]
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6 * len(dtypes), 4.5), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        ok = sorted((r for r in records if r["dtype"] == dtype and r["status"] == "ok"),
                    key=lambda r: r["m"])
        sizes = [r["m"] for r in ok]
        ax.plot(sizes, [r["gflops"] for r in ok], "o-", color="#4c72b0",
                label="polyopt (all passes)")
        ax.fill_between(sizes, [r["gflops_min"] for r in ok], [r["gflops_max"] for r in ok],
                        color="#4c72b0", alpha=0.2)
        ax.plot(sizes, [r["numpy_gflops"] for r in ok], "s--", color="green",
                label="numpy (OpenBLAS, 1 thread)")
        ax.fill_between(sizes, [r["numpy_gflops_min"] for r in ok],
                        [r["numpy_gflops_max"] for r in ok], color="green", alpha=0.15)
        peak = peaks.get(dtype)
        if peak:
            ax.axhline(peak, color="gray", linestyle="--", linewidth=1,
                       label=f"measured FMA peak {peak:.1f}")
        ax.set_xlabel("M = N = K")
        ax.set_ylabel("GFLOPS (median, band: min..max)")
        ax.set_title(f"{dtype} matmul")
        ax.set_ylim(0, max([peak or 0] + [r["gflops_max"] for r in ok]
                           + [r["numpy_gflops_max"] for r in ok] + [1]) * 1.1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def conv_chart(records: Sequence[dict], path: Path, *, peak: Optional[float],
               title: str) -> None:
    """Bars per convolution layer: polyopt against numpy im2col + matmul (and torch when it
    ran), GFLOPS medians with min..max whiskers; polyopt's speed-up over numpy above its bar;
    the measured FMA peak as a line."""
    plt = _pyplot()
    ok = [r for r in records if r["status"] == "ok"]
    series = [("polyopt (all passes)", "", "#4c72b0"),
              ("numpy im2col + matmul (OpenBLAS, 1 thread)", "numpy_", "green")]
    if any(r.get("torch_gflops") for r in ok):
        series.append(("torch conv2d (1 thread, channels_last)", "torch_", "#8172b2"))
    labels = [r["label"] for r in records]
    fig, ax = plt.subplots(figsize=(max(8.0, 1.5 * len(labels) + 2), 5.5))
    width = 0.8 / len(series)
    for s, (name, prefix, color) in enumerate(series):
        xs, ys, lows, highs = [], [], [], []
        for i, r in enumerate(records):
            if r["status"] != "ok" or not r.get(f"{prefix}gflops"):
                continue
            y = r[f"{prefix}gflops"]
            xs.append(i + (s - (len(series) - 1) / 2) * width)
            ys.append(y)
            # torch's spread is only in the harness's timing (median only here)
            lows.append(y - r.get(f"{prefix}gflops_min", y))
            highs.append(r.get(f"{prefix}gflops_max", y) - y)
        bars = ax.bar(xs, ys, width=width, color=color, label=name, yerr=[lows, highs],
                      error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "black"})
        if prefix == "":
            texts = [f"{y:.1f}\n{r['ratio_vs_numpy']:.2f}x numpy" if y >= 10 else
                     f"{y:.2f}\n{r['ratio_vs_numpy']:.2f}x numpy"
                     for y, r in zip(ys, (r for r in records if r["status"] == "ok"))]
        else:
            texts = [f"{y:.1f}" if y >= 10 else f"{y:.2f}" for y in ys]
        ax.bar_label(bars, labels=texts, fontsize=7, padding=2)
    for i, r in enumerate(records):
        if r["status"] != "ok":
            ax.text(i, 0, r["status"], ha="center", va="bottom", fontsize=7, color="red")
    if peak:
        ax.axhline(peak, color="gray", linestyle="--", linewidth=1)
        ax.annotate(f"measured FMA peak {peak:.1f}", (len(labels) - 0.5, peak), ha="right",
                    va="bottom", fontsize=8, color="gray")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylabel("GFLOPS (median, whiskers: min..max)")
    ax.set_ylim(0, max([peak or 0] + [r["gflops_max"] for r in ok]
                       + [r["numpy_gflops_max"] for r in ok] + [1]) * 1.15)
    ax.set_title(title, pad=20)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(series),
              frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def polybench_chart(record: dict, path: Path, *, title: str) -> None:
    """Bars per PolyBench kernel: the speed-up over clang -O3 (clang's median time over the
    build's) of polyopt without passes, polyopt --hopt and Polly, on a log scale, the
    geometric means as the last group; 1 (clang -O3) as a line."""
    from polyopt.polybench.harness import CLANG, HOPT, POLLY, POLYOPT, geomean
    plt = _pyplot()
    kernels = record["kernels"]
    series = [(POLYOPT, "polyopt, no passes", "#9ecae1"),
              (HOPT, "polyopt --hopt", "#4c72b0"),
              (POLLY, "clang -O3 + Polly", "#dd8452")]

    def speedup(k: dict, label: str) -> Optional[float]:
        b, c = k["builds"].get(label), k["builds"].get(CLANG)
        if not b or not c or b["error"] or c["error"] or not b["timing"] or not c["timing"]:
            return None
        return c["timing"]["median"] / b["timing"]["median"]

    labels = [k["kernel"] for k in kernels] + ["geomean"]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.6 * len(labels) + 3), 5.5))
    width = 0.8 / len(series)
    for s, (label, name, color) in enumerate(series):
        values = [speedup(k, label) for k in kernels]
        values.append(geomean(values))
        xs = [i + (s - (len(series) - 1) / 2) * width for i, v in enumerate(values)
              if v is not None]
        ys = [v for v in values if v is not None]
        bars = ax.bar(xs, ys, width=width, color=color, label=name)
        if label == HOPT:
            ax.bar_label(bars, labels=[f"{y:.2g}" for y in ys], fontsize=6, padding=1,
                         rotation=90)
    for i, k in enumerate(kernels):
        if any(b["error"] for b in k["builds"].values()):
            ax.text(i, 1, "failed", ha="center", va="bottom", fontsize=7, color="red")
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylabel("speed-up over clang-22 -O3 -march=native (log scale)")
    ax.set_title(title, pad=20)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(series),
              frameon=False)
    ax.grid(axis="y", alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def shape_sweep_chart(records: Sequence[dict], path: Path, *, title: str) -> None:
    """One row per shape, the ratio to numpy of each type (bars: static shapes, markers: the
    one ``?x?`` function), the line at 1.0 (numpy's speed)."""
    plt = _pyplot()
    shapes = list(dict.fromkeys(f"{r['m']}x{r['n']}x{r['k']}" for r in records))
    dtypes = [d for d in ("f64", "f32") if any(r["dtype"] == d for r in records)]
    by = {(f"{r['m']}x{r['n']}x{r['k']}", r["dtype"]): r for r in records}
    fig, ax = plt.subplots(figsize=(8, max(3.0, 0.28 * len(shapes) * len(dtypes) + 1.5)))
    height = 0.8 / max(1, len(dtypes))
    colors = {"f64": "#4c72b0", "f32": "#dd8452"}
    for t, dtype in enumerate(dtypes):
        ys = [i + (t - (len(dtypes) - 1) / 2) * height for i in range(len(shapes))]
        rs = [by.get((s, dtype)) for s in shapes]
        ax.barh([y for y, r in zip(ys, rs) if r], [r["ratio"] for r in rs if r], height=height,
                color=colors[dtype], label=f"{dtype}, static shape")
        dyn = [(y, r["dynamic_ratio"]) for y, r in zip(ys, rs)
               if r and r.get("dynamic_ratio") is not None]
        if dyn:
            ax.plot([x for _, x in dyn], [y for y, _ in dyn], "k|", markersize=8,
                    label=f"{dtype}, one ?x? function" if t == 0 else None)
    ax.axvline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(shapes)))
    ax.set_yticklabels(shapes, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("speed relative to numpy (OpenBLAS), same run; above 1: polyopt faster")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def low_precision_chart(records: Sequence[dict], path: Path, *, title: str) -> None:
    """One group per size and type: polyopt, torch's matmul of the type and polyopt's SGEMM,
    in GFLOPS (GOP/s for int8)."""
    plt = _pyplot()
    labels = [f"{r['kind']}\n{r['m']}x{r['n']}x{r['k']}" for r in records]
    series = [("polyopt", "polyopt", "#4c72b0"), ("torch", "torch", "#dd8452"),
              ("sgemm", "polyopt SGEMM (f32)", "#8c8c8c")]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(records) + 2), 4))
    width = 0.8 / len(series)
    for s, (key, label, color) in enumerate(series):
        xs = [i + (s - 1) * width for i in range(len(records))]
        ys = [r[key] or 0.0 for r in records]
        ax.bar(xs, ys, width=width, color=color, label=label)
    ax.set_xticks(range(len(records)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("GFLOPS (GOP/s for i8, u8)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def tuning_chart(record: dict, path: Path, *, title: str) -> None:
    """Each trial's GFLOPS (failed ones left out), the best so far, the model's choice."""
    plt = _pyplot()
    rows = record["trials"]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    timed = [(r["number"], r["gflops"]) for r in rows if r["gflops"]]
    ax.scatter([x for x, _ in timed], [y for _, y in timed], s=14, color="#4c72b0",
               label="trial")
    best, xs, ys = 0.0, [], []
    for r in rows:
        if r["gflops"]:
            best = max(best, r["gflops"])
        xs.append(r["number"])
        ys.append(best)
    ax.step(xs, ys, where="post", color="#dd8452", label="best so far")
    if rows[0]["gflops"]:
        ax.axhline(rows[0]["gflops"], color="#8c8c8c", linestyle="--", linewidth=1,
                   label="model's choice (trial 1)")
    ax.set_xlabel("trial")
    ax.set_ylabel("GFLOPS")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
