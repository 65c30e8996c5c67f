"""Seeding order, the figures and tables: pure functions of a result."""

from __future__ import annotations

import re

from snippets.lab import render
from snippets.lab.i18n import language, t
from snippets.lab.cache import Result


def creation_order(result: Result) -> str:
    rows = []
    for before, after in zip(result["one_seed"], result["reseeded"]):
        rows.append([f"`{before['name']}`", "×".join(map(str, before["shape"])),
                     "yes" if before["equal"] else "**no**", f"{before['max_abs_diff']:.3g}",
                     "yes" if after["equal"] else "**no**"])
    return render.table(["parameter", "shape", "equal after one seed", "max |Δ|", "equal, seed before each"],
                        rows, align="llrrr")


def loss_curves(result: Result) -> str:
    fixed, asked = result["fixed"], result["as_asked"]
    epochs = result["curve_epochs"]

    def draw():
        fig, (left, right) = render.new_figure("pair", ncols=2)
        left.plot(epochs, asked["direct"], label="direct (as asked)")
        left.plot(epochs, asked["loader"], label="DataLoader (as asked)", linestyle="--")
        left.plot(epochs, fixed["direct"], label="direct (seed before each model)")
        left.plot(epochs, fixed["loader"], label="DataLoader (seed before each model)", linestyle=":")
        left.set(yscale="log", xlabel="epoch", ylabel="MSE loss", title="Loss per epoch")
        render.legend_below(fig, left)
        diff = [a - b for a, b in zip(fixed["direct"], fixed["loader"])]
        right.plot(epochs, diff, color=render.COLORS[2])
        right.set(xlabel="epoch", ylabel="direct − DataLoader", title="With equal starts")
        return fig

    return render.svg(draw, result, drawn_by=loss_curves, alt="Loss curves of direct and DataLoader training, and their difference")


def fits(result: Result) -> str:
    def draw():
        fig, axes = render.new_figure("pair", ncols=2, sharey=True)
        for ax, key, title in zip(axes, ("pred_direct", "pred_loader"), ("Direct training", "Training with DataLoader")):
            # Rasterised points: 2000 SVG markers make the page's styling pass take seconds.
            ax.scatter(result["x"], result["y"], s=1, color="#7f7f7f", label="data", rasterized=True)
            ax.plot(result["x"], result["fixed"][key], color=render.COLORS[1], label="fit")
            ax.set(title=title, xlabel="x")
        axes[0].set_ylabel("y")
        fig.suptitle("The question's two fits, each model seeded first", fontsize=10)
        return fig

    return render.svg(draw, result, drawn_by=fits, alt="The question's two fitted curves, identical once both models start alike")


def operation(label: str) -> str:
    """An operation's label as a table or sentence shows it: its code as code, its words in the page's language
    (``one epoch, shuffle=False`` reads "one epoch, `shuffle=False`"); the part after " — " is the row's note."""
    label = label.split(" — ")[0]
    comma = "，" if language() == "zh" else ", "
    if match := re.fullmatch(r"(one epoch|epoch (\d+)), (.+)", label):
        words = t("epoch {n}", n=match.group(2)) if match.group(2) else t("one epoch")
        return f"{words}{comma}`{match.group(3)}`"
    if match := re.fullmatch(r"(.+) forward, (train|eval) mode", label):
        return f"`{match.group(1)}` " + t(f"forward, {match.group(2)} mode")
    if match := re.fullmatch(r"(\w+) \(backward of (.+)\)", label):
        return t("the backward of {code}", code=f"`{match.group(2)}`") + (f"（`{match.group(1)}`）" if language() == "zh"
                                                                           else f" (`{match.group(1)}`)")
    return f"`{label}`"


def rng_consumers(result: Result) -> str:
    rows = []
    for row in result["rows"]:
        draws = row["int64_draws"]
        shown = str(draws) if draws is not None else "not a count of int64 draws"
        rows.append([operation(row["operation"]),
                     "**yes**" if row["advances"] else "no", shown])
    return render.table(["operation", "advances the global RNG", "equivalent int64 draws"], rows, align="lcr")


def thread_count_effect(result: Result) -> str:
    lo, hi = result["thread_counts"][0], result["thread_counts"][-1]
    rows = [[row["operation"], "yes" if row["repeatable"] else "**no**", "yes" if row["equal"] else "**no**",
             f"{row['max_abs_diff']:.3g}", f"{row['max_abs_diff'] / row['max_abs_value']:.2g}"
             if row["max_abs_value"] else "—"] for row in result["rows"]]
    return render.table(["computation", "repeats bitwise at each count", f"bitwise equal, {lo} vs {hi} threads",
                         "max |Δ|", "max |Δ| ÷ max |value|"], rows, align="lccrr")


def deterministic_operations(result: Result) -> str:
    runs = result["runs"]
    rows = [[operation(row["operation"]), str(row["distinct_off"]),
             "raises" if row["raises_on"] else str(row["distinct_on"]),
             "—" if row["raises_on"] else f"{row['off_equal_to_on']} of {runs}"] for row in result["rows"]]
    return render.table(["operation (repeated indices)", f"distinct results in {runs} runs, flag off",
                         "… flag on", "flag-off runs bitwise equal to flag on"], rows, align="lccc")


def cuda_generators(result: Result) -> str:
    rows = [[f"`{row['operation']}`", "**yes**" if row["cpu_advances"] else "no",
             "**yes**" if row["cuda_advances"] else "no"] for row in result["cuda_rows"]]
    return render.table(["operation", "advances the CPU generator", "advances the CUDA generator"], rows,
                        align="lcc")


def checkpoint_resume(result: Result) -> str:
    """Each combination of restored random states (✓), and whether the resumed run ended where the
    uninterrupted one did."""
    states = result["states"]
    rows = []
    for variant in result["variants"]:
        recipe = variant["restored"] == ["recipe"]
        marks = ["✓" if recipe or name in variant["restored"] else "—" for name in states]
        rows.append(["`restore_rng_states`" if recipe else "by hand", *marks,
                     "yes" if variant["equal"] else "**no**", f"{variant['max_abs_diff']:.3g}"])
    headers = {"torch": "torch's RNG state", "loader": "the loader's generator", "random": "Python's random"}
    return render.table(["restored", *[headers[name] for name in states], "same weights as uninterrupted",
                         "largest |Δ| in a weight"], rows, align="l" + "c" * len(states) + "cr")
