"""DataLoader overhead, the figures and tables: pure functions of a result.

The sentences around them are the page's; the few numbers the page's text needs beyond a table come from the
small helpers at the end of each section.

Every ratio is printed with its 95% interval (``render.ratio_interval``, shares as percentages by ``percent``),
and every table whose ratios include a noisy one is followed by a warning naming them (``render.noise_warning``).
"""

from __future__ import annotations

import html
import inspect
import re
from typing import Callable, Sequence

import torch

from snippets.lab import i18n, machines
from snippets.lab.cache import Result
from snippets.lab.i18n import t
from snippets.lab.render import (COLORS, legend_below, new_figure, noise_warning, percent_interval, ratio_interval,
                                 seconds, stamp_line, svg, table)
from snippets.lab.timing import decide
from snippets.lab.timing import ratio as timing_ratio

from .derive import (COMPARED_KEYS, INSIDE_KEYS, PIN_BASELINE, RATIO_TARGET, SAME_OPERATION_MARGIN, SMALL_EPOCH,
                     SMALL_SLACK, STAGE_PREFIXES, TRAINING_TARGET, Interval, batch_size_ratios, breakdown_shares,
                     disagreements, equal_n_ratio, inside_row, loader_share, noisy, of_clone, per_sample_costs,
                     pin_memory_ratio, question_ratios, series, stack_to_clone, stage, stage_row, step_layout_ratio,
                     strided_step_ratio, worker_ratios, worker_rows)
from .measure import LOADER_NAMES

# ---------------------------------------------------------------------------------------------------------
# Intervals, as a reader reads them


def cell(text: str) -> str:
    """An interval in a table cell, kept on one line: ``12× (11–15)`` reads as one value."""
    return f'<span class="pitfalls-interval">{text}</span>'


def percent(interval: Interval) -> str:
    """A share with its 95% interval, in percent: ``61% (58–64)`` (``render.percent_interval``)."""
    return percent_interval(interval)


def ratio_cell(interval: Interval) -> str:
    """A ratio in a table's cell: its interval, or "not measured reliably here" (``render.unreliable``)."""
    return cell(ratio_interval(interval, flag=True))


def percent_cell(interval: Interval) -> str:
    """A share in a table's cell, in percent, or "not measured reliably here" (``render.unreliable``)."""
    return cell(percent_interval(interval, flag=True))


VERDICTS = {True: "met", False: "missed", None: "undecided (interval across the target)"}


def verdict(decided: bool | None) -> str:
    """A target or comparison decided from an interval: met, missed, or undecided on this machine (a table's
    cell takes ``VERDICTS[decided]``: the table translates its cells)."""
    return t(VERDICTS[decided])


def warning(named: list[tuple]) -> str:
    """The noise warning for the intervals among ``named`` (``(name, interval[, share])``, as ``noise_warning``
    takes them) that are too wide, after a blank line; or nothing."""
    found = noisy(named)
    return "\n" + noise_warning(found) if found else ""


def summary_warning(question: Result, parts: Result | None = None, shares: Sequence[str] = (),
                    steps: Result | None = None) -> str:
    """The noise warning for a summary quoting the question's ratios to the direct loop, the stages' ``shares``
    of the epoch (keys of ``breakdown_shares``; ``blamed`` is the iterator and the copy together) and, given
    ``steps``, DataLoader's share of the larger model's step: a number quoted away from its table is as noisy
    there as in the table, and says so there too. Nothing when every one of them is clear."""
    named = [(f"{name} ÷ direct", interval) for name, interval in question_ratios(question).items()]
    if parts is not None:
        by_key = breakdown_shares(parts, together={"blamed": ("iterator", "copy")})
        named += [(f"{key.replace('_', '-')} share of the epoch", by_key[key], True) for key in shares]
    if steps is not None:
        row = steps["rows"][-1]
        named.append((f"DataLoader per batch, {row['model']}: share of the loader and step time",
                      loader_share(steps, row, "DataLoader"), True))
    return warning(named)


# Fewer timed blocks than this in a measurement (in each round, for rounds) give no spread worth printing: the
# IQR column shows — instead.
MIN_BLOCKS_FOR_IQR = 4


def interval_table(result: Result, rows: Sequence[dict], intervals: dict[str, Interval], *, label: str,
                   baseline: str, extra: Sequence[str] = (),
                   intervals_of: Callable[[Result], dict[str, Interval]] | None = None,
                   shown_elsewhere: dict[str, str] | None = None) -> str:
    """Median, spread, and each row's ratio to the ``baseline`` row with its 95% interval; the stamp; a noise
    warning if one of the ratios is too wide. ``intervals`` are by row label; ``extra`` columns are row keys. The
    repeats column says how many fresh processes and rounds each was timed in. Given ``intervals_of`` (how
    ``intervals`` are computed from a result), a ratio that a recorded machine of the same kind measured outside
    this interval says so in its cell, with that machine's value (``same_kind_said``). A row whose time the page
    prints elsewhere (``shown_elsewhere``: label → where) gets that reference instead of a second number for the
    same quantity; its ratios stand."""
    shown_elsewhere = shown_elsewhere or {}
    elsewhere = machines.disagreeing(result, intervals_of) if intervals_of is not None else {}
    by_rounds = any(row.get("rounds") for row in rows)
    by_processes = any(row.get("processes") for row in rows)
    repeats_header = "processes × rounds" if by_processes else "rounds" if by_rounds else "blocks"
    # the ratio, the finding, next to the row's name: on a phone it is on the first screen of the table
    headers = [label, f"× {baseline} (95% interval)", "median", "IQR", repeats_header, *extra]
    body = []
    for row in rows:
        ratio = ("1 (baseline)" if row["label"] == baseline
                 else ratio_cell(intervals[row["label"]]) + same_kind_said(elsewhere.get(row["label"], ())))
        count = len(row["rounds"]) if by_rounds else row["blocks"]
        per_measurement = row["blocks"] / count if by_rounds else row["blocks"]
        spread = seconds(row["iqr"]) if per_measurement >= MIN_BLOCKS_FOR_IQR else "—"
        repeats = (f"{len(row['processes'])} × {len(row['processes'][0].get('rounds') or ())}"
                   if by_processes else count)
        if row["label"] in shown_elsewhere:
            median, spread = shown_elsewhere[row["label"]], "—"
        else:
            median = seconds(row["median"])
        body.append([row["label"], ratio, median, spread, repeats,
                     *(row.get(key, "") for key in extra)])
    named = [(f"{name} ÷ {baseline}", interval) for name, interval in intervals.items()]
    return (table(headers, body, align="l" + "r" * (len(headers) - 1)) + "\n" + stamp_line(result)
            + warning(named))


# ---------------------------------------------------------------------------------------------------------
# The question's timing


def same_kind_said(found: Sequence[tuple[str, str, Interval]]) -> str:
    """What recorded machines of this kind measured outside this build's interval, said beside the number:
    `` · another machine of the same type, measured 2026-11-30: 11.8× (11.1–12.3)``; nothing when none did. The prose
    names no recorded machine: its label is the span's title, for a reader who looks it up under Environment."""
    return "".join(f'<span class="pitfalls-same-kind" title="{html.escape(label)}"> · '
                   + t("another machine of the same type, measured {date}: {value}", date=date,
                       value=ratio_cell(interval)) + "</span>" for label, date, interval in found)


def question_timing(result: Result) -> str:
    """Time per epoch of the five loaders, scaled to the question's run from the mean epoch (a total is a sum),
    with each run's last compared loss."""
    epochs = result["epochs"]
    total, loss = f"mean × {epochs:,} epochs", f"loss, epoch {result['compared_epochs']:,}"
    rows = [{**row, total: seconds(row.get("mean", row["median"]) * epochs), loss: f"{result['same'][row['label']]['final_loss']:.6g}"}
            for row in result["rows"]]
    return interval_table(result, rows, question_ratios(result), label="Loader", baseline="direct",
                          extra=(total, loss), intervals_of=question_ratios)


def training_target(result: Result) -> dict:
    """The question's loop with TensorLoader against the direct loop, with its 95% interval over the rounds, and
    whether that meets the recipe's target: met when the whole interval is below it, missed when all of it is
    above, undecided otherwise (reported, not claimed: the benchmark checks it strictly)."""
    ratio = question_ratios(result)["TensorLoader"]
    return {"ratio": ratio, "target": TRAINING_TARGET, "met": decide(ratio, "<", TRAINING_TARGET)}


# The question's loop on each torch release recorded on this machine (the Versions page)
RELEASE_LOADERS = ("DataLoader", "DataLoader + BatchedTensorDataset", "TensorLoader")


def release_ratios(result: Result) -> list[tuple[str, dict]]:
    """The headline ratios (each of ``RELEASE_LOADERS`` ÷ the direct loop, with 95% intervals) on every release
    of this machine that measured the question's loop, oldest first: [(release, {loader: interval})]."""
    from snippets.lab import versions

    return [(version, {name: ratio for name, ratio in question_ratios(found).items() if name in RELEASE_LOADERS})
            for version, _, found in versions.by_release(result) if isinstance(found, Result)]


def release_table(result: Result) -> str:
    """The headline ratios by torch release, with their 95% intervals: one row per release."""
    found = release_ratios(result)
    rows = [[f"`{version}`", *[ratio_interval(ratios[name]) if name in ratios else "—" for name in RELEASE_LOADERS]]
            for version, ratios in found]
    return table(["torch", *[f"{name} ÷ direct" for name in RELEASE_LOADERS]], rows, align="lrrr")


def across_releases(result: Result) -> str:
    """The headline ratios by torch release, with their intervals, as a figure; nothing with fewer than two
    releases."""
    found = release_ratios(result)
    if len(found) < 2:
        return ""
    drawn = Result({"releases": [[version, ratios] for version, ratios in found]}, result.experiment, result.params,
                   result.fingerprint, result.computed_at, 0.0, True, cached=result.cached)

    def draw():
        fig, ax = new_figure("wide")
        width = 0.22
        for k, name in enumerate(RELEASE_LOADERS):
            xs, ys, errors = [], [], [[], []]
            for i, (_, ratios) in enumerate(found):
                interval = ratios.get(name)
                if interval is None or interval.get("low") is None:
                    continue
                xs.append(i + (k - 1) * width)
                ys.append(interval["value"])
                errors[0].append(interval["value"] - interval["low"])
                errors[1].append(interval["high"] - interval["value"])
            ax.errorbar(xs, ys, yerr=errors, fmt="o", capsize=3, color=COLORS[k], label=name)
        ax.axhline(1.0, color="#7f7f7f", linewidth=0.8)
        ax.set_xticks(range(len(found)), [version for version, _ in found])
        ax.set(yscale="log", xlabel="torch release", ylabel="time per epoch ÷ direct loop",
               title="Each recorded release (95% intervals)")
        legend_below(fig, ax)
        return fig

    return svg(draw, drawn, drawn_by=across_releases, alt="Time per epoch of DataLoader, DataLoader with BatchedTensorDataset and "
                               "TensorLoader as multiples of the direct loop, for each recorded torch release")


# ---------------------------------------------------------------------------------------------------------
# Where the time goes


def counts(result: Result) -> str:
    """What each loader does for its one full batch, counted (``measure.counts``)."""
    headers = ["Loader", "`x[...]` calls", "rows handed to `torch.stack`", "garbage collections (generation 0 / 1 / 2)"]
    body = [[row["label"], f"{row['indexing']:,}", f"{row['stacked']:,}",
             " / ".join(f"{count:,}" for count in row["collections"])] for row in result["rows"]]
    return table(headers, body, align="lrrr") + "\n" + stamp_line(result)


def fetcher_source() -> str:
    """The installed torch's map-style fetcher, printed from its source: what DataLoader does per batch."""
    from torch.utils.data._utils import fetch

    source = inspect.getsource(fetch._MapDatasetFetcher.fetch)
    return f"```python\n# torch/utils/data/_utils/fetch.py, torch {torch.__version__}\n{source.rstrip()}\n```\n"


def breakdown_noise(result: Result) -> str:
    """The noise warning for the stages' shares of the epoch, if one is too wide; or nothing."""
    shares = breakdown_shares(result)
    named = [(f"{inside_label(result, key)}: share of the epoch", shares[key], True) for key in INSIDE_KEYS]
    named += [(f"{stage_label(result, STAGE_PREFIXES[key])}: against a whole epoch", shares[key], True)
              for key in COMPARED_KEYS]
    return warning(named + [("training step on DataLoader's batch ÷ on x, y", step_layout_ratio(result))])


def strided_numbers(result: Result) -> dict:
    """What the strided-source section quotes: the table's width, the column's stride, both steps and their ratio."""
    steps = {row["label"]: row["median"] for row in result["steps"]}
    return {"columns": result["columns"], "stride": result["layout"]["column_stride"][0],
            "step_on_column": steps["training step on the strided column"],
            "step_on_batch": steps["training step on DataLoader's contiguous batch"],
            "ratio": strided_step_ratio(result)}


def strided_noise(result: Result) -> str:
    """The noise warning for the strided-source ratio, if it is too wide; or nothing."""
    return warning([("training step on DataLoader's contiguous batch ÷ on the strided column",
                     strided_step_ratio(result))])


def stage_label(result: Result, prefix: str) -> str:
    return next(row["label"] for row in result["stages"] if row["label"].startswith(prefix))


def inside_label(result: Result, key: str) -> str:
    return inside_row(result, key)["label"]


def breakdown(result: Result) -> str:
    """The stages of one DataLoader epoch, clocked inside it: mean time per epoch and share of the epoch with its
    95% interval, adding up to 100% with the remainder; then the copies, each timed on its own beside a whole
    epoch."""
    shares = breakdown_shares(result)
    whole = inside_row(result, "whole")
    rounds = _rounds_cell(whole)
    inside = [[row["label"], seconds(row["mean"]), seconds(row["median"]), percent_cell(shares[row["stage"]])]
              for row in result["inside"] if row["stage"] != "whole"]
    # the per-sample work together (indexing and collate): the share the In short and the home page quote
    per_sample = sum(inside_row(result, key)["mean"] for key in ("indexing", "collate"))
    inside.append(["indexing + collate: the per-sample work", seconds(per_sample), "—",
                   percent_cell(shares["per_sample"])])
    total = sum(shares[key]["value"] for key in INSIDE_KEYS)
    inside.append([f"**{t(whole['label'])}**", f"**{seconds(whole['mean'])}**", f"**{seconds(whole['median'])}**",
                   f"**{total:.0%}**"])
    # each is compared with a whole epoch timed in alternation with it: the same quantity as the first table's
    # epoch, measured another way, so its time is not printed a second time (the code panel has it)
    compared = [[row["label"], seconds(row["median"]),
                 percent_cell(shares[key]) if (key := _compared_key(row["label"])) else "—"]
                for row in result["stages"] if row["label"] != "whole epoch"]
    return (table([f"Stage, timed inside DataLoader epochs (N = {result['n']:,}, full batch; per epoch)", "mean",
                   "median of the rounds", "share of the epoch (95% interval, from the means)"], inside)
            + f"\n{rounds}\n\n"
            + table([f"Timed on its own (N = {result['n']:,})", "median",
                     "share of a whole epoch timed in alternation with it (95% interval)"], compared)
            + "\n" + stamp_line(result) + breakdown_noise(result))


def _compared_key(label: str) -> str | None:
    return next((key for key in COMPARED_KEYS if label.startswith(STAGE_PREFIXES[key])), None)


def _rounds_cell(row: dict) -> str:
    processes = row.get("processes")
    if processes:
        return t("*{processes} processes × {rounds} rounds of back-to-back epochs; the rest is the whole minus the "
                 "four stages, so the shares add up to 100% by construction. The means include the garbage "
                 "collector's collections, which land in some rounds and not others: that is why a mean can sit "
                 "well above the median.*",
                 processes=len(processes), rounds=len(processes[0]["rounds"]))
    return t("*{rounds} rounds of back-to-back epochs, in one process; the rest is the whole minus the four stages, "
             "so the shares add up to 100% by construction.*", rounds=len(row["rounds"]))


def stages_total(result: Result) -> dict:
    """Iterator, sampler, indexing and collate together, timed inside the epoch: their mean time per epoch and
    their share of the whole epoch (an interval)."""
    parts = sum(inside_row(result, key)["mean"] for key in ("iterator", "sampler", "indexing", "collate"))
    return {"time": parts, "share": breakdown_shares(result)["parts"]}


def verdict_numbers(result: Result) -> dict:
    """The measurements the verdicts on the original answer quote: stage times (inside the epoch, or on their own
    for the copies), shares (intervals) and training steps (with the interval of one against the other)."""
    steps = {row["label"]: row["median"] for row in result["steps"]}
    return {
        **{f"{key}_time": inside_row(result, key)["mean"] for key in ("iterator", "indexing", "collate")},
        **{f"{key}_time": stage(result, STAGE_PREFIXES[key]) for key in ("copy", "stack", "views")},
        "stack_to_clone": stack_to_clone(result),
        **{f"{key}_share": share for key, share in breakdown_shares(result).items()},
        "bytes": result["layout"]["bytes"], "n": result["n"],
        "step_on_x": steps["training step on x, y"],
        "step_on_batch": steps["training step on DataLoader's batch"],
        "step_ratio": step_layout_ratio(result),
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


def _order_panels(result: Result, key: str, xlabel: str, ylabel: str):  # noqa: ANN202 - matplotlib axes
    """Two log-log panels, sequential and shuffled: every loader's time per epoch against ``key``."""
    fig, axes = new_figure("pair", ncols=2, sharey=True)
    for ax, shuffle in zip(axes, (False, True)):
        for color, marker, name in zip(COLORS, "osvD^", LOADER_NAMES):
            xs, times = series(result["points"], name, shuffle, key=key)
            ax.plot(xs, times, marker=marker, markersize=4, color=color, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_title("shuffle=True" if shuffle else "shuffle=False")
        _seconds_axis(ax)
    axes[0].set_ylabel(ylabel)
    return fig, axes


def batch_size_scaling(result: Result) -> str:
    """Time per epoch against batch size, sequential and shuffled, every loader (log-log)."""
    def draw():
        fig, axes = _order_panels(result, "batch_size", "batch size", f"time per epoch (N = {result['n']:,})")
        legend_below(fig, axes[0], ncol=2)
        return fig

    alt = (f"Log-log plot of time per epoch against batch size for N = {result['n']} samples: DataLoader stays "
           "far above TensorLoader and the hand-written loop at every batch size.")

    return svg(draw, result, drawn_by=batch_size_scaling, alt=alt) + stamp_line(result)


def closest_slowdown(result: Result) -> dict:
    """DataLoader against TensorLoader where the two came closest: the ratio (an interval), where, and the noise
    warning if that ratio is too wide."""
    ratios = batch_size_ratios(result, "DataLoader", "TensorLoader")
    shuffle, size = min(ratios, key=lambda key: ratios[key]["value"])
    order, ratio = "shuffled" if shuffle else "sequential", ratios[(shuffle, size)]
    return {"ratio": ratio, "batch_size": size, "order": order,
            "warning": warning([(f"DataLoader ÷ TensorLoader, {order}, batch size {size:,}", ratio)])}


def speed_target_rows(result: Result) -> list[dict]:
    """TensorLoader against the hand-written loop at each batch size: the benchmark's targets.

    Medians, with the ratio's 95% interval over the timed blocks. A target is met when the whole interval is
    within it, missed when all of it is outside, undecided otherwise (``met`` is None). Where the loop takes
    less than ``SMALL_EPOCH``, the target is an absolute slack: at most ``SMALL_SLACK`` slower, that is a ratio
    below 1 + slack / the loop's time.
    """
    rows = []
    for shuffle in (False, True):
        base = [p for p in result["points"] if p["label"] == "hand-written loop" and p["shuffle"] == shuffle]
        ours = [p for p in result["points"] if p["label"] == "TensorLoader" and p["shuffle"] == shuffle]
        for b, t in zip(base, ours):
            small = b["median"] < SMALL_EPOCH
            ratio = timing_ratio(t, b)
            threshold = 1 + SMALL_SLACK / b["median"] if small else RATIO_TARGET
            rows.append({"shuffle": shuffle, "batch_size": b["batch_size"], "baseline": b["median"],
                         "tensorloader": t["median"], "ratio": ratio, "threshold": threshold,
                         "target": f"within {seconds(SMALL_SLACK)}" if small else f"≤ {RATIO_TARGET}×",
                         "met": decide(ratio, "<", threshold)})
    return rows


def speed_targets(result: Result) -> str:
    """This build's ratios against TensorLoader's speed targets, from the batch-size runs."""
    targets = speed_target_rows(result)
    rows = [["shuffled" if r["shuffle"] else "sequential", f"{r['batch_size']:,}", seconds(r["baseline"]),
             seconds(r["tensorloader"]), ratio_cell(r["ratio"]), r["target"], VERDICTS[r["met"]]]
            for r in targets]
    named = [(f"TensorLoader ÷ hand-written loop, {'shuffled' if r['shuffle'] else 'sequential'}, batch size "
              f"{r['batch_size']:,}", r["ratio"]) for r in targets]
    return (table(["order", "batch size", "hand-written loop", "TensorLoader", "ratio (95% interval)", "target",
                   "this build"], rows, align="lrrrrll") + "\n" + stamp_line(result) + warning(named))


def size_scaling(result: Result) -> str:
    """Time per full-batch epoch against dataset size, sequential and shuffled, every loader (log-log)."""
    def draw():
        fig, axes = _order_panels(result, "n", "N (samples, full batch)", "time per epoch")
        legend_below(fig, axes[0], ncol=2)
        return fig

    alt = ("Log-log plots of time per full-batch epoch against dataset size, sequential and shuffled: DataLoader "
           "grows linearly with N from far above the others; sequential TensorLoader and hand-written slices stay "
           "flat, shuffled ones grow with N far below DataLoader.")

    return svg(draw, result, drawn_by=size_scaling, alt=alt) + stamp_line(result)


def size_costs(result: Result) -> str:
    """Each loader's epoch and time per sample at the largest N every loader ran, sequential and shuffled, and as a
    multiple of TensorLoader's in the same order (with its 95% interval over the timed blocks)."""
    rows, named = [], []
    for shuffle in (False, True):
        order = "shuffled" if shuffle else "sequential"
        for name, c in per_sample_costs(result, shuffle).items():
            ratio = equal_n_ratio(result, shuffle, name) if name != "TensorLoader" else None
            rows.append([order, name, f"{c['n']:,}", seconds(c["epoch"]), seconds(c["per_sample"]),
                         "1 (baseline)" if ratio is None else ratio_cell(ratio)])
            if ratio is not None:
                named.append((f"{name} ÷ TensorLoader, {order}, N = {c['n']:,}", ratio))
    return (table(["order", "Loader", "N", "epoch time", "time per sample (epoch / N)",
                   "× TensorLoader at the same N (95% interval)"], rows, align="llrrrr")
            + "\n" + stamp_line(result) + warning(named))


# ---------------------------------------------------------------------------------------------------------
# When it matters


def step_share(result: Result) -> str:
    """Loader time per batch against one training step, for each model, with each share's 95% interval."""
    rows, named = [], []
    for r in result["rows"]:
        shares = {name: loader_share(result, r, name) for name in ("DataLoader", "TensorLoader")}
        rows.append([r["model"], seconds(r["step"]), seconds(r["DataLoader"]), percent_cell(shares["DataLoader"]),
                     seconds(r["TensorLoader"]), percent_cell(shares["TensorLoader"])])
        named += [(f"{name} per batch, {r['model']}: share of the loader and step time", share, True)
                  for name, share in shares.items()]
    return (table(["Model", "training step", "DataLoader per batch", "its share (95% interval)",
                   "TensorLoader per batch", "its share (95% interval)"], rows) + "\n" + stamp_line(result)
            + warning(named))


def _code_in(label: str) -> str:
    """A setting's label in the page's language, its code (``drop_last=False``, ``mark_dynamic(x_batch, 0)``) as
    code and its words as words."""
    return re.sub(r"[\w.]+(?:=[\w.]+|\([^()]*\))", lambda code: f"`{code.group(0)}`", t(label))


def compile_recompiles(result: Result) -> str:
    """Each setting's compiles per epoch and the graphs compiled, with their inputs (a SymInt: a dynamic size)."""
    rows = [[_code_in(s["label"]), ", ".join(str(c) for c in s["compiles_per_epoch"]),
             "<br>".join(f"{'dynamic' if dynamic else 'static'}: {', '.join(inputs)}"
                         for inputs, dynamic in zip(s["graphs"], s["dynamic"]))]
            for s in result["settings"]]
    return (table(["Setting", f"graphs compiled, epochs 1–{result['epochs']}", "graphs and their inputs"], rows,
                  align="lll") + "\n" + stamp_line(result))


def _batches(n: int, batch_size: int) -> int:
    return -(-n // batch_size)


# the num_workers=0 row's time where the breakdown timed that epoch (on the CPU clock; this table's is the wall clock);
# an HTML link: markdown-exec prefixes a Markdown link's "#anchor" with the block's id, which no heading has
EPOCH_ABOVE = '≈ the whole epoch in <a href="#stage-by-stage">Stage by stage</a>'


def workers(result: Result, epoch_above: tuple[int, int] | None = None) -> str:
    """One timing table per setting of N and batch size: DataLoader's worker settings and TensorLoader. At the
    setting ``epoch_above`` (N, batch size), whose num_workers=0 epoch the page has timed already (the breakdown),
    that row's time cell points there: one epoch, one number per page."""
    text = ""
    for n, batch_size in result["settings"]:
        above = {"num_workers=0": EPOCH_ABOVE} if epoch_above == (n, batch_size) else None
        batches = _batches(n, batch_size)
        heading = t("**N = {n}, batch size {batch_size}** ({batches} batches per epoch)" if batches > 1 else
                    "**N = {n}, batch size {batch_size}** ({batches} batch per epoch)",
                    n=f"{n:,}", batch_size=f"{batch_size:,}", batches=batches)
        text += (f"{heading}\n\n"
                 + interval_table(result, list(worker_rows(result, n).values()),
                                  worker_ratios(result, n, "num_workers=0"), label="Loader (time per epoch)",
                                  baseline="num_workers=0", shown_elsewhere=above)
                 + "\n")
    return text


def fastest_workers(result: Result) -> list[dict]:
    """For each setting, the fastest worker setting (num_workers > 0, by median) against num_workers=0 and
    TensorLoader, each ratio with its 95% interval."""
    out = []
    for n, batch_size in result["settings"]:
        rows = worker_rows(result, n)
        label = min((k for k in rows if k.startswith("num_workers=") and k != "num_workers=0"),
                    key=lambda k: rows[k]["median"])
        out.append({"n": n, "batch_size": batch_size, "batches": _batches(n, batch_size), "label": label,
                    "vs_serial": worker_ratios(result, n, "num_workers=0")[label],
                    "vs_tensorloader": worker_ratios(result, n, "TensorLoader")[label]})
    return out


def pin_memory(result: Result) -> str:
    """The host-to-device timing table against copies on the compute stream from pageable memory; where nothing
    was timed, nothing (the page says why)."""
    if not result["rows"]:
        return ""
    rows = result["rows"]
    intervals = {row["label"]: ratio for row in rows
                 if (ratio := pin_memory_ratio(result, row["label"])) is not None}
    return interval_table(result, rows, intervals,
                          label=f"{result['steps']} steps on {result['device']} (time per call)",
                          baseline=PIN_BASELINE)


# ---------------------------------------------------------------------------------------------------------
# The limit: memory bandwidth


def bandwidth(result: Result) -> str:
    """Time and GB/s of each way to produce a shuffled full batch, by row width, against clone(), with each
    share's 95% interval; a note when rows that time the same operation on the same bytes disagree."""
    rows, named = [], []
    for r in result["rows"]:
        shape = f"{r['rows']:,} × {r['width']:,}"
        if r["median"] is None:
            per_sample = r["label"].startswith("DataLoader, shuffle")
            limit = result["per_sample_limit"] if per_sample else result["batch_sampler_limit"]
            rows.append([shape, r["label"], "not run", f"more than {limit:,} rows", "", ""])
            continue
        speeds = [seconds(r["median"]), f"{r['gbps']:.2f}", f"{2 * r['gbps']:.2f}"]
        if r["label"].startswith("clone"):
            rows.append([shape, r["label"], *speeds, "100% (reference)"])
        else:
            share = of_clone(result, r)
            rows.append([shape, r["label"], *speeds, percent_cell(share)])
            named.append((f"{r['label'].split(':')[0]}, {shape}: share of clone()'s speed", share, True))
    return (table([f"rows × floats ({result['megabytes']} MiB)", "what", "median", "GB/s of batch",
                   "GB/s moved (read + write)", "of clone() (95% interval)"], rows, align="llrrrr")
            + "\n" + stamp_line(result) + warning(named) + agreement(result))


def agreement(result: Result) -> str:
    """Rows that time the same operation on the same bytes must agree within their uncertainty; if they do not,
    say so under the table (after a blank line), naming the rows and the ratio between them."""
    found = disagreements(result)
    if not found:
        return ""
    lines = [f'\n!!! warning "{t("Identical operations disagree on this machine")}"']
    for operation in dict.fromkeys(d["operation"] for d in found):
        pairs = i18n.joined((t("{a} against {b} floats per row: {ratio}", a=f"{a:,}", b=f"{b:,}",
                            ratio=ratio_interval(d["ratio"]))
                          for d in found if d["operation"] == operation for a, b in [d["widths"]]), clauses=True)
        lines.append("    " + t("These rows time the same {operation} of the same {megabytes} MiB; they disagree "
                                "by more than ±{margin}, beyond their uncertainty ({pairs}): the machine was busy "
                                "while one of them ran.",
                                operation=operation, megabytes=result["megabytes"],
                                margin=f"{SAME_OPERATION_MARGIN:.0%}", pairs=pairs) + "\n")
    return "\n".join(lines)


def tensorloader_of_clone(result: Result) -> list[dict]:
    """TensorLoader's shuffled-epoch GB/s as a share of clone()'s (an interval), by row width in bytes, narrowest
    first."""
    ours = [r for r in result["rows"] if r["label"].startswith("TensorLoader")]
    return [{"row_bytes": 4 * r["width"], "share": of_clone(result, r)} for r in sorted(ours, key=lambda r: r["width"])]


# ---------------------------------------------------------------------------------------------------------
# The recipes' contract


def worker_rng(result: Result) -> str:
    """What each worker setting draws from the global RNG: per epoch, and already at ``iter()`` when shuffled."""
    rng = result["rng"]

    def yes(flag: bool) -> str:
        return "yes" if flag else "no"

    rows = [[f"`{label}`" if label != "TensorLoader" else label, i18n.joined(t(yes(moved)) for moved in advanced),
             yes(rng["sampler_at_iter"][label])] for label, advanced in rng["advanced"].items()]
    return (table(["Loader", f"global RNG moved, epochs 1–{rng['epochs']}",
                   "shuffled: RandomSampler's seed drawn at iter()"], rows, align="lll")
            + "\n" + stamp_line(result))
