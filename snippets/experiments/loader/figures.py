"""DataLoader overhead, the figures and tables: pure functions of a result.

The sentences around them are the page's; the few numbers the page's text needs beyond a table come from the
small helpers at the end of each section.
"""

from __future__ import annotations

import inspect

import torch

from snippets.lab.cache import Result
from snippets.lab.render import COLORS, new_figure, seconds, stamp_line, svg, table, timing_table

from .derive import (RATIO_TARGET, SMALL_EPOCH, SMALL_SLACK, TRAINING_TARGET, breakdown_shares, loader_share,
                     per_sample_costs, series, stage, worker_rows)
from .measure import LOADER_NAMES

# ---------------------------------------------------------------------------------------------------------
# The question's timing


def question_timing(result: Result) -> str:
    """Time per epoch of the four loaders, scaled to the question's run, with each run's last compared loss."""
    epochs = result["epochs"]
    total, loss = f"× {epochs:,} epochs", f"loss, epoch {result['compared_epochs']:,}"
    rows = [{**row, total: seconds(row["median"] * epochs), loss: f"{result['same'][row['label']]['final_loss']:.6g}"}
            for row in result["rows"]]
    return timing_table(result, rows, label="Loader", extra=(total, loss))


def training_target(result: Result) -> dict:
    """The question's loop with TensorLoader against the direct loop, fastest epoch against fastest epoch, and
    whether that meets the recipe's target (reported, not claimed: the benchmark checks it strictly)."""
    fastest = {row["label"]: row["min"] for row in result["rows"]}
    ratio = fastest["TensorLoader"] / fastest["direct"]
    return {"ratio": ratio, "target": TRAINING_TARGET, "met": ratio <= TRAINING_TARGET}


# ---------------------------------------------------------------------------------------------------------
# Where the time goes


def fetcher_source() -> str:
    """The installed torch's map-style fetcher, printed from its source: what DataLoader does per batch."""
    from torch.utils.data._utils import fetch

    source = inspect.getsource(fetch._MapDatasetFetcher.fetch)
    return f"```python\n# torch/utils/data/_utils/fetch.py, torch {torch.__version__}\n{source.rstrip()}\n```\n"


def breakdown(result: Result) -> str:
    """Each stage of one DataLoader epoch: median, spread and share of the whole epoch."""
    epoch = stage(result, "whole epoch")
    rows = [[row["label"], seconds(row["median"]), seconds(row["iqr"]),
             f"{row['median'] / epoch:.1%}" if i else "100% (baseline)", row["blocks"]]
            for i, row in enumerate(result["stages"])]
    return table([f"Stage of one DataLoader epoch (N = {result['n']:,}, full batch)", "median", "IQR",
                  "share of the epoch", "blocks"], rows) + "\n" + stamp_line(result)


def stages_total(result: Result) -> dict[str, float]:
    """Iterator, sampler, indexing and collate together: their time and their share of the whole epoch."""
    parts = sum(row["median"] for row in result["stages"][1:-1])
    return {"time": parts, "share": parts / stage(result, "whole epoch")}


def verdict_numbers(result: Result) -> dict[str, float]:
    """The measurements the verdicts on the original answer quote: stage times, shares and training steps."""
    steps = {row["label"]: row["median"] for row in result["steps"]}
    return {
        **{f"{key}_time": stage(result, prefix) for key, prefix in
           (("iterator", "iter("), ("copy", "the copy"), ("indexing", "dataset[i]"), ("collate", "default_collate"))},
        **{f"{key}_share": share for key, share in breakdown_shares(result).items()},
        "bytes": result["layout"]["bytes"],
        "step_on_x": steps["training step on x, y"],
        "step_on_batch": steps["training step on DataLoader's batch"],
    }


def profile(result: Result) -> str:
    """The functions of one profiled epoch that took the most time themselves."""
    profile = result["profile"]
    rows = [[f"`{e['function']}`", f"{e['calls']:,}", seconds(e["own"]), f"{e['own'] / profile['total_own']:.0%}",
             seconds(e["cumulative"])] for e in profile["top"]]
    return table(["Function", "calls", "own time", "share of own time", "cumulative"], rows) + "\n" + stamp_line(result)


# ---------------------------------------------------------------------------------------------------------
# Scaling


def _seconds_axis(ax) -> None:  # noqa: ANN001
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: seconds(v)))


def batch_size_scaling(result: Result) -> str:
    """Time per epoch against batch size, sequential and shuffled, every loader (log-log)."""
    fig, axes = new_figure("pair", ncols=2, sharey=True)
    for ax, shuffle in zip(axes, (False, True)):
        for color, marker, name in zip(COLORS, "osD^", LOADER_NAMES):
            sizes, times = series(result["points"], name, shuffle)
            ax.plot(sizes, times, marker=marker, markersize=4, color=color, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_title("shuffle=True" if shuffle else "shuffle=False")
        _seconds_axis(ax)
    axes[0].set_ylabel(f"time per epoch (N = {result['n']:,})")
    axes[1].legend(fontsize=8)
    alt = (f"Log-log plot of time per epoch against batch size for N = {result['n']} samples: DataLoader stays "
           "far above TensorLoader and the hand-written loop at every batch size.")
    return svg(fig, result, alt=alt) + stamp_line(result)


def speed_target_rows(result: Result) -> list[dict]:
    """TensorLoader against the hand-written loop at each batch size: the benchmark's targets.

    Like the benchmark, it compares the fastest timed block of each: what the code costs when nothing else
    on the machine interferes.
    """
    rows = []
    for shuffle in (False, True):
        base = [p for p in result["points"] if p["label"] == "hand-written loop" and p["shuffle"] == shuffle]
        ours = [p for p in result["points"] if p["label"] == "TensorLoader" and p["shuffle"] == shuffle]
        for b, t in zip(base, ours):
            small = b["min"] < SMALL_EPOCH
            met = (t["min"] - b["min"] <= SMALL_SLACK) if small else (t["min"] / b["min"] <= RATIO_TARGET)
            rows.append({"shuffle": shuffle, "batch_size": b["batch_size"], "baseline": b["min"],
                         "tensorloader": t["min"], "ratio": t["min"] / b["min"],
                         "target": f"within {seconds(SMALL_SLACK)}" if small else f"≤ {RATIO_TARGET}×", "met": met})
    return rows


def speed_targets(result: Result) -> str:
    """This build's ratios against TensorLoader's speed targets, from the batch-size runs."""
    rows = [["shuffled" if r["shuffle"] else "sequential", f"{r['batch_size']:,}", seconds(r["baseline"]),
             seconds(r["tensorloader"]), f"{r['ratio']:.2f}×", r["target"], "met" if r["met"] else "missed"]
            for r in speed_target_rows(result)]
    return table(["order", "batch size", "hand-written loop", "TensorLoader", "ratio", "target", "this build"],
                 rows, align="lrrrrll") + "\n" + stamp_line(result)


def size_scaling(result: Result) -> str:
    """Time per full-batch epoch against dataset size, sequential, every loader (log-log)."""
    fig, ax = new_figure("wide")
    for color, marker, name in zip(COLORS, "osD^", LOADER_NAMES):
        ns, times = series(result["points"], name, False, key="n")
        ax.plot(ns, times, marker=marker, markersize=4, color=color, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (samples, all in one batch)")
    ax.set_ylabel("time per epoch")
    _seconds_axis(ax)
    ax.legend(fontsize=8)
    alt = ("Log-log plot of time per full-batch epoch against dataset size: DataLoader grows linearly with N "
           "from far above the others; TensorLoader and the hand-written slices stay flat.")
    return svg(fig, result, alt=alt) + stamp_line(result)


def size_costs(result: Result) -> str:
    """Each loader's time per sample at the largest N it ran."""
    rows = [[name, f"{c['n']:,}", seconds(c["epoch"]), seconds(c["per_sample"])]
            for name, c in per_sample_costs(result).items()]
    return (table(["Loader", "largest N run", "epoch at that N", "time per sample (epoch / N)"], rows)
            + "\n" + stamp_line(result))


# ---------------------------------------------------------------------------------------------------------
# When it matters


def step_share(result: Result) -> str:
    """Loader time per batch against one training step, for each model."""
    rows = [[r["model"], seconds(r["step"]), seconds(r["DataLoader"]), f"{loader_share(r, 'DataLoader'):.1%}",
             seconds(r["TensorLoader"]), f"{loader_share(r, 'TensorLoader'):.1%}"] for r in result["rows"]]
    return (table(["Model", "training step", "DataLoader per batch", "its share",
                   "TensorLoader per batch", "its share"], rows) + "\n" + stamp_line(result))


def _batches(n: int, batch_size: int) -> int:
    return -(-n // batch_size)


def workers(result: Result) -> str:
    """One timing table per setting of N and batch size: DataLoader's worker settings and TensorLoader."""
    text = ""
    for n, batch_size in result["settings"]:
        batches = _batches(n, batch_size)
        plural = "es" if batches > 1 else ""
        text += (f"**N = {n:,}, batch size {batch_size:,}** ({batches} batch{plural} per epoch)\n\n"
                 + timing_table(result, list(worker_rows(result, n).values()), label="Loader (time per epoch)")
                 + "\n")
    return text


def fastest_workers(result: Result) -> list[dict]:
    """For each setting, the fastest worker setting (num_workers > 0) against num_workers=0 and TensorLoader."""
    out = []
    for n, batch_size in result["settings"]:
        rows = worker_rows(result, n)
        label, row = min(((k, r) for k, r in rows.items() if k.startswith("num_workers=") and k != "num_workers=0"),
                         key=lambda item: item[1]["median"])
        out.append({"n": n, "batch_size": batch_size, "batches": _batches(n, batch_size), "label": label,
                    "vs_serial": row["median"] / rows["num_workers=0"]["median"],
                    "vs_tensorloader": row["median"] / rows["TensorLoader"]["median"]})
    return out


def pin_memory(result: Result) -> str:
    """The pinned-memory timing table; where nothing was timed, only the stamp of the machine that ran it."""
    if not result["rows"]:
        return stamp_line(result)
    return timing_table(result, result["rows"], label=f"Loader on {result['accelerator']} (time per epoch)")


# ---------------------------------------------------------------------------------------------------------
# The limit: memory bandwidth


def _clone_gbps(result: Result) -> dict[int, float]:
    return {r["width"]: r["gbps"] for r in result["rows"] if r["label"].startswith("clone")}


def bandwidth(result: Result) -> str:
    """Time and GB/s of each way to produce a shuffled full batch, by row width, against clone()."""
    clone = _clone_gbps(result)
    rows = []
    for r in result["rows"]:
        shape = f"{r['rows']:,} × {r['width']:,}"
        if r["median"] is None:
            per_sample = r["label"].startswith("DataLoader, shuffle")
            limit = result["per_sample_limit"] if per_sample else result["batch_sampler_limit"]
            rows.append([shape, r["label"], "not run", f"more than {limit:,} rows", ""])
        else:
            rows.append([shape, r["label"], seconds(r["median"]), f"{r['gbps']:.2f}",
                         f"{r['gbps'] / clone[r['width']]:.0%}"])
    return (table([f"rows × floats ({result['megabytes']} MiB)", "what", "median", "GB/s", "of clone()"], rows,
                  align="llrrr") + "\n" + stamp_line(result))


def tensorloader_of_clone(result: Result) -> list[dict]:
    """TensorLoader's shuffled-epoch GB/s as a share of clone()'s, by row width in bytes, narrowest first."""
    clone = _clone_gbps(result)
    ours = [r for r in result["rows"] if r["label"].startswith("TensorLoader")]
    return [{"row_bytes": 4 * r["width"], "share": r["gbps"] / clone[r["width"]]}
            for r in sorted(ours, key=lambda r: r["width"])]
