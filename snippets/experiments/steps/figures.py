"""Update-step counts, the figures and tables: pure functions of a result."""

from __future__ import annotations

import math
import statistics

from matplotlib.ticker import LogLocator

from snippets.lab import render
from snippets.lab.cache import Result
from snippets.lab.i18n import t

from . import derive
from .derive import at_step, runs

ORDER_TITLE = {"sequential": "shuffle=False, as asked", "shuffled": "shuffled each epoch"}


def _loss(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-3 else f"{value:.2e}"


def times(value: float) -> str:
    """A ratio of losses at two significant figures (26×, 3.9×; 1,900× above 100): no more precise than they are."""
    return f"{value:.2g}×" if value < 100 else f"{value:,.0f}×"


def arithmetic(result: Result) -> str:
    n, epochs = result["n_samples"], result["epochs"]
    body = []
    for row in result["rows"]:
        keep, drop = row["keep"], row["drop"]
        body.append([f"{row['batch_size']:,}", f"⌈{n:,}/{row['batch_size']:,}⌉ = {keep['formula']}",
                     keep["len_loader"], f"{keep['last_batch']:,}", f"{keep['total_steps']:,}",
                     f"⌊{n:,}/{row['batch_size']:,}⌋ = {drop['formula']}", drop["len_loader"],
                     f"{n - drop['samples_seen']:,}"])
    headers = ["batch", "steps/epoch (formula)", "`len(loader)`", "last batch", f"steps in {epochs} epochs",
               "`drop_last=True` (formula)", "`len(loader)`", "samples dropped/epoch"]
    return render.table(headers, body, align="rrrrrrrr")


def curves(result: Result, order: str) -> str:
    n = result["n_samples"]
    # No time panel: a run's own clock has no protocol (one run, evaluations between steps); what a step costs is
    # timed as a timing experiment (measure.step_cost) and said beside the curves.
    # two panels a row, as wide as a phone; the fourth cell holds the legend

    def draw():
        fig, axes = render.new_figure("tall", nrows=2, ncols=2, sharey=True)
        panels = [("epochs", lambda r: r["samples"] / n), ("optimizer steps", lambda r: r["step"]),
                  ("samples seen", lambda r: r["samples"])]
        for ax, (label, fx) in zip(axes.flat, panels):
            for i, run in enumerate(runs(result, order)):
                recs = [r for r in run["records"] if r["step"] > 0]
                ax.plot([fx(r) for r in recs], [r["loss"] for r in recs], color=render.COLORS[i],
                        label=f"batch {run['batch_size']:,}")
            ax.set(xscale="log", yscale="log", xlabel=label)
            ax.xaxis.set_major_locator(LogLocator(numticks=4))  # half the width: every other decade labelled
        for ax in axes[:, 0]:
            ax.set_ylabel("full-dataset MSE")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        axes[1, 1].axis("off")
        axes[1, 1].legend(handles, labels, loc="center", frameon=False)
        fig.suptitle(f"Same start, Adam lr {result['lr']:g}, {ORDER_TITLE[order]}", fontsize=10)
        return fig

    return render.svg(draw, result, drawn_by=curves, alt=f"Full-dataset loss against epochs, steps and samples ({order})") \
        + render.stamp_line(result)


def equal_steps(result: Result) -> str:
    """Two tables, narrow enough for a laptop's page: the runs at equal step counts, with what the last count cost
    in samples (in time: a step's cost, measure.step_cost, said beside the curves); then the same runs at equal
    epochs, the question's comparison."""
    n, epochs = result["n_samples"], result["epochs"]
    marks = result["equal_steps"]
    last = marks[-1]
    steps_headers = ["order", "batch", *[f"loss @ {s} steps" for s in marks], f"samples for {last} steps"]
    epochs_headers = ["order", "batch", f"steps in {epochs} epochs", f"loss @ {epochs} epochs"]
    by_steps, by_epochs = [], []
    for run in result["runs"]:
        name = [ORDER_TITLE[run["order"]].split(",")[0], f"{run['batch_size']:,}"]
        cells = list(name)
        for s in marks:
            rec = at_step(run, s)
            cells.append(_loss(rec["loss"]) if rec else "—")
        rec = at_step(run, last)
        cells.append(t("{samples} ({epochs} ep.)", samples=f"{rec['samples']:,}", epochs=f"{rec['samples'] / n:.3g}")
                     if rec else "—")
        by_steps.append(cells)
        end = at_step(run, epochs * run["steps_per_epoch"])
        by_epochs.append([*name, f"{epochs * run['steps_per_epoch']:,}", _loss(end["loss"]) if end else "—"])
    return (f"{t('**At equal steps**')}\n\n" + render.table(steps_headers, by_steps, align="lr" + "r" * len(marks) + "r")
            + "\n" + t("**At equal epochs ({epochs}), as the question compares them**", epochs=epochs) + "\n\n"
            + render.table(epochs_headers, by_epochs, align="lrrr") + "\n" + render.stamp_line(result))


def fit(result: Result) -> str:
    by_key = {(r["order"], r["batch_size"]): r for r in result["runs"]}
    n, epochs = result["n_samples"], result["epochs"]
    xs = result["fit_x"]
    truth = [math.sin(v) for v in xs]
    lines = []
    for order, batch, step, style in (("sequential", 512, None, "-"), ("sequential", n, epochs, "--"),
                                      ("sequential", n, result["min_steps"], "-"),
                                      ("shuffled", 512, None, ":")):
        run = by_key.get((order, batch))
        if run is None:
            continue
        step = step or epochs * run["steps_per_epoch"]
        preds = run["predictions"].get(str(step))
        if preds is None:
            continue
        label = f"batch {batch:,}, {step // run['steps_per_epoch']} epochs ({step} steps)"
        if order == "shuffled":
            label += ", shuffled"
        lines.append((label, preds, style))

    def draw():
        fig, (left, right) = render.new_figure("tall", nrows=2, sharex=True)
        left.plot(xs, truth, color="#7f7f7f", linewidth=3, alpha=0.5, label="sin(x)")
        for i, (label, preds, style) in enumerate(lines):
            left.plot(xs, preds, color=render.COLORS[i], linestyle=style, label=label)
            right.plot(xs, [p - t for p, t in zip(preds, truth)], color=render.COLORS[i], linestyle=style)
        left.set(ylabel="prediction", title="Fits, same start")
        right.set(xlabel="x", ylabel="prediction − sin(x)", title="Errors")
        right.axhline(0, color="#7f7f7f", linewidth=0.8)
        render.legend_below(fig, left)
        return fig

    return render.svg(draw, result, drawn_by=fit, alt="The question's sin(x) fits from the same start, and their errors")


def logged(result: Result) -> str:
    rows = result["rows"]
    epochs = [r["epoch"] for r in rows]

    def draw():
        fig, (left, right) = render.new_figure("tall", nrows=2, sharex=True)
        left.plot(epochs, [r["logged"] for r in rows], marker="o", markersize=3, label="logged, as asked")
        left.plot(epochs, [r["logged_weighted"] for r in rows], marker="^", markersize=3, linestyle="--",
                  label="logged, sample-weighted")
        left.plot(epochs, [r["true_end"] for r in rows], marker="s", markersize=3, label="true, at epoch end")
        left.set(yscale="log", ylabel="MSE", title=f"Batch {result['batch_size']}: logged vs true")
        left.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # less than a decade: 0.1, 0.2, 0.5 labelled
        render.legend_beside(left)
        right.plot(epochs, [100 * (r["fixed_plain"] / r["fixed_weighted"] - 1) for r in rows], marker="o",
                   markersize=3, color=render.COLORS[2], label="plain mean")
        right.plot(epochs, [100 * (r["fixed_weighted"] / r["true_end"] - 1) for r in rows], marker="s",
                   markersize=3, color=render.COLORS[3], label="sample-weighted mean")
        right.axhline(0, color="#7f7f7f", linewidth=0.8)
        right.set(xlabel="epoch", ylabel="% off the true loss", title="Same model, two averages")
        render.legend_beside(right)
        return fig

    return render.svg(draw, result, drawn_by=logged, alt="The question's logged loss against the true full-dataset loss")


def init(result: Result) -> str:
    e, fe, b = result["epochs"], result["full_epochs"], result["batch_size"]
    headers = ["seed", "max |Δw| of the starts", f"batch {b}, {e} ep., 1st start (as asked)",
               f"batch {b}, {e} ep., 2nd start", f"full, {e} ep., 2nd start", f"full, {fe} ep., 2nd start"]
    body = [[r["seed"], f"{r['start_max_abs_diff']:.3g}", f"{r['small_from_a']:.4f}", f"{r['small_from_b']:.4f}",
             f"{r['full_short']:.4f}", f"{r['full_long']:.4f}" if r["full_long"] is not None else "—"]
            for r in result["rows"]]
    return render.table(headers, body, align="rrrrrr")


def noise(result: Result) -> str:
    rows = result["variance"]
    n = result["n_samples"]
    c = result["contiguous"]
    factor = c["measured"] / c["law_random"]  # as the page's claim computes it

    def draw():
        fig, ax = render.new_figure("wide")
        bs = [r["batch_size"] for r in rows]
        grid = sorted({*bs, *[round(b * f) for b in bs for f in (1.25, 1.6, 2.0, 2.5, 3.2)], n - 1})
        grid = [b for b in grid if b < n]
        trace = rows[0]["plain"] * rows[0]["batch_size"]
        ax.plot(grid, [trace / b for b in grid], color="#7f7f7f", linestyle="--", label="tr(Σ)/B")
        ax.plot(grid, [trace / b * (n - b) / (n - 1) for b in grid], color=render.COLORS[0],
                label="tr(Σ)/B · (N−B)/(N−1)")
        ax.plot(bs, [r["measured"] for r in rows], "o", color=render.COLORS[1], label="measured, random batches")
        ax.plot([c["batch_size"]], [c["measured"]], "s", color=render.COLORS[2], markersize=7,
                label="measured, the question's contiguous batches")
        # the key point, written beside the square where no legend can cover it
        ax.annotate(f"{factor:,.0f}× random batches", (c["batch_size"], c["measured"]), xytext=(8, -4),
                    textcoords="offset points", va="top")  # the text colour: legible on any background
        ax.set(xscale="log", yscale="log", xlabel="batch size B", ylabel="E |g_B − G|²",
               title=f"Minibatch gradient variance after {result['variance_at']} steps")
        # below the axes: inside them it covers the contiguous batches' square, the figure's key point
        render.legend_below(fig, ax)
        return fig

    alt = ("Minibatch gradient variance against batch size on log axes, with the 1/B law and its finite-population "
           "correction; random batches follow the law, the question's contiguous batches of "
           f"{c['batch_size']:,} sit far above it")
    return render.svg(draw, result, drawn_by=noise, alt=f"{alt}, {factor:,.0f}× what the law gives random batches of that size.")


def noise_table(result: Result) -> str:
    rows = [[f"{r['batch_size']:,}", f"{r['measured']:.3g}", f"{r['law']:.3g}", f"{r['measured'] / r['law']:.2f}",
             f"{r['plain']:.3g}", r["draws"]] for r in result["variance"]]
    return render.table(["B", "measured E|g_B − G|²", "law with (N−B)/(N−1)", "measured / law", "plain tr(Σ)/B",
                         "draws"], rows, align="rrrrrr")


def _scale(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def noise_scale(result: Result) -> str:
    per_epoch = result["steps_per_epoch"]
    rows = [[ORDER_TITLE[r["order"]].split(",")[0], r["step"], f"{r['step'] / per_epoch:.3g}", f"{r['loss']:.4f}",
             f"{r['grad_sq']:.3g}", f"{r['trace']:.3g}", _scale(r["b_simple"])]
            for order in result["orders"] for r in result["points"] if r["order"] == order]
    return render.table(["order", "step", "epoch", "full-dataset loss", "|G|²", "tr(Σ)", "B_simple = tr(Σ)/|G|²"],
                        rows, align="lrrrrrr")


def lr_sweep(result: Result) -> str:
    found = derive.best_lrs(result)
    multiples, lrs, seeds = result["multiples"], result["lrs"], result["seeds"]

    def draw():
        fig, (left, right) = render.new_figure("tall", nrows=2)
        for i, k in enumerate(multiples):
            median = [10 ** statistics.median(derive.sweep_scores(result, seed, k)[j] for seed in seeds)
                      for j in range(len(lrs))]
            left.plot(lrs, median, color=render.COLORS[i % 6], marker="o", markersize=2.5,
                      label=f"k = {k} (batch {k * result['base_batch']:,})")
        left.axvline(result["question_lr"], color="#000000", linestyle=":", linewidth=1,
                     label=f"the question's lr {result['question_lr']:g}")
        left.set(xscale="log", yscale="log", xlabel="learning rate", ylabel="loss (mean, last half)",
                 title=f"Median over {len(seeds)} seeds, {result['epochs']} epochs")
        render.legend_beside(left)
        first = found["median"][multiples[0]]
        for j, seed in enumerate(seeds):
            right.plot(multiples, [found["best"][seed][k]["lr"] for k in multiples], color=render.COLORS[j % 6],
                       marker="o", markersize=3, linewidth=0.8, alpha=0.7, label=f"best, seed {seed}")
        right.plot(multiples, [found["median"][k] for k in multiples], color="#000000", linewidth=2.4,
                   label=f"median (slope {found['median_exponent']:.2f})")
        right.plot(multiples, [first * k / multiples[0] for k in multiples], color="#000000", linestyle="--",
                   linewidth=1, label="linear rule: × k")
        right.plot(multiples, [first * math.sqrt(k / multiples[0]) for k in multiples], color="#000000",
                   linestyle="-.", linewidth=1, label="square-root rule: × √k")
        right.axhspan(min(lrs), max(lrs), color="#999999", alpha=0.12, linewidth=0, label="grid swept")
        right.set(xscale="log", yscale="log", xlabel="k (batch / base batch)", ylabel="best learning rate",
                  title="Best learning rate against k")
        right.set_xticks(multiples, [str(k) for k in multiples])
        render.legend_beside(right)
        return fig

    return render.svg(draw, result, drawn_by=lr_sweep, alt="Loss against learning rate for each batch multiple, and the best learning "
                                       "rate against k beside the linear and square-root rules")


def lr_sweep_table(result: Result) -> str:
    found = derive.best_lrs(result)
    multiples, seeds, epochs = result["multiples"], result["seeds"], result["epochs"]
    first = found["median"][multiples[0]]
    rows = []
    for k in multiples:
        steps = next(r["steps"] for r in result["runs"] if r["k"] == k)
        loss = 10 ** statistics.median(found["best"][seed][k]["score"] for seed in seeds)
        rows.append([k, f"{k * result['base_batch']:,}", f"{steps:,}",
                     *[f"{found['best'][seed][k]['lr']:.2g}" for seed in seeds], f"{found['median'][k]:.2g}",
                     f"{first * math.sqrt(k / multiples[0]):.2g}", f"{first * k / multiples[0]:.2g}", _loss(loss)])
    rows.append(["slope", "", "", *[f"{found['exponent'][seed]:.2f}" for seed in seeds],
                 f"{found['median_exponent']:.2f}", "0.5", "1", ""])
    headers = ["k", "batch", f"steps in {epochs} epochs", *[f"best lr, seed {seed}" for seed in seeds],
               "median", "× √k rule", "× k rule", "loss at the best (median)"]
    return render.table(headers, rows, align="rrr" + "r" * (len(seeds) + 4))


def scheduler(result: Result) -> str:
    def draw():
        fig, (left, right) = render.new_figure("tall", nrows=2)
        small = result["smaller"]
        # the schedule sized for the planned batch: blue in both panels (the crash is marked in orange)
        left.plot(range(1, len(small["lrs"]) + 1), small["lrs"], color=render.COLORS[0])
        max_lr = result["max_lr"]
        if small["error"]:
            left.axvline(small["error"]["step"], color=render.COLORS[1], linestyle=":")
            left.annotate(f"ValueError at step {small['error']['step']}", (small["error"]["step"], max_lr * 1.15),
                          xytext=(6, 0), textcoords="offset points", fontsize=8, color="#A64B00")
        left.axvline(small["loader_steps"], color="#7f7f7f", linestyle="--")
        left.annotate("end of the run", (small["loader_steps"], max_lr * 0.6), xytext=(-6, 0),
                      textcoords="offset points", ha="right", fontsize=8, color="#555555")
        left.set(xlabel="optimizer step", ylabel="learning rate", xlim=(0, small["loader_steps"] * 1.03),
                 ylim=(0, max_lr * 1.45), title=f"Batch {small['batch_size']}: needs {small['loader_steps']:,} steps")
        for i, key in enumerate(("larger", "larger_resized")):
            run = result[key]
            steps = len(run["lrs"])
            label = (f"sized for batch {result['planned_batch']} ({run['total_steps']} steps)" if key == "larger"
                     else f"sized with total_steps(...) = {run['total_steps']}")
            right.plot([100 * (s + 1) / steps for s in range(steps)], run["lrs"], color=render.COLORS[i * 2],
                       label=label)
        right.set(xlabel="% of the run", ylabel="learning rate", ylim=(0, max_lr * 1.45),
                  title=f"Batch {result['larger']['batch_size']}: {len(result['larger']['lrs'])} steps")
        render.legend_below(fig, right)
        return fig

    return render.svg(draw, result, drawn_by=scheduler, alt="OneCycleLR sized for the wrong batch size: a crash, or a schedule cut short")


def accumulation(result: Result) -> str:
    b = result["batch_size"]
    rows = []
    for r in result["rows"]:
        w, wo = r["with"], r["without"]
        last = w["groups"][len(w["groups"]) // result["epochs"] - 1]
        scale = w["partial_group_scale"]
        rows.append([r["k"], f"{b * r['k']:,}", r["micro_batches"], r["recipe"], w["steps_per_epoch"][0],
                     f"{last['micro_batches']} ({last['samples']:,} samples)",
                     f"{scale:.2f}" if scale is not None else "— (full group)",
                     " + ".join(map(str, wo["steps_per_epoch"])), wo["largest_group"]])
    headers = ["k", "effective batch", "micro-batches/epoch", "`steps_per_epoch(..., accumulation_steps=k)`",
               "steps counted/epoch", "last group", "last step's gradient scale",
               "without end-of-epoch step: steps per epoch", "its largest group (micro-batches)"]
    return render.table(headers, rows, align="rrrrrrrrr")


def distributed(result: Result) -> str:
    rows = []
    for r in result["rows"]:
        repeated = ", ".join(map(str, r["repeated"][:4])) + ("…" if len(r["repeated"]) > 4 else "")
        dropped = ", ".join(f"{i:,}" for i in r["dropped"][:4]) + ("…" if len(r["dropped"]) > 4 else "")
        rows.append([f"{r['n_samples']:,}", f"`{r['sampler_drop_last']}`",
                     " / ".join(f"{s:,}" for s in r["per_rank_samples"]), f"{r['all_reduce_samples']:,}",
                     repeated or "none", ", ".join(map(str, r["ranks_ending_in_a_repeat"])) or "—",
                     dropped or "none", " / ".join(map(str, r["per_rank_steps"])),
                     r["recipe_steps"], r["single_process_steps"]])
    headers = ["N", "sampler `drop_last`", "samples per rank", "sum (all_reduce)", "indices dealt twice",
               "ranks ending in a repeat", "indices never dealt", "steps per rank", "recipe", "steps, one process"]
    return render.table(headers, rows, align="rlrrllrrrr")


def distributed_shards(result: Result) -> str:
    """Which indices each rank starts with, unshuffled and in each shuffled epoch, with and without set_epoch."""
    world = result["world_size"]
    row = next(r for r in result["rows"] if not r["sampler_drop_last"])
    body = [[f"`shuffle=False`, N = {row['n_samples']:,}", "—",
             *["`" + ", ".join(map(str, head)) + ", …`" for head in row["per_rank_head"]], "—"]]
    for e in result["shuffled"]:
        used = e["permutation_of_epoch"]
        body.append([f"shuffled, {'with' if e['set_epoch'] else 'without'} `set_epoch`", e["epoch"],
                     *["`" + ", ".join(map(str, head)) + ", …`" for head in e["per_rank_head"]],
                     f"`seed + {used[0]}`" if used else "none"])
    headers = ["sampler", "epoch", *[f"rank {r}" for r in range(world)], "permutation dealt out"]
    return render.table(headers, body, align="lr" + "l" * world + "l")


def distributed_evaluation(result: Result) -> str:
    ev = result["evaluation"]
    exact = ev["exact"]["sum"] / ev["exact"]["count"]
    labels = {"exact": "one process, every sample once", "padded": "`DistributedSampler` (pads)",
              "drop_last": "`DistributedSampler(drop_last=True)`", "unpadded": "`range(rank, N, world_size)`"}
    body = []
    for name in ("exact", "padded", "drop_last", "unpadded"):
        mean = ev[name]["sum"] / ev[name]["count"]
        body.append([labels[name], f"{ev[name]['count']:,}", f"{mean:.7f}", f"{mean / exact - 1:+.1e}"])
    return render.table(["samples from", "samples counted", "mean squared error", "relative to the dataset's"],
                        body, align="lrrr")
