"""Update-step counts, the checks: named conditions on measured results, each the basis of a claim on the page.

Each returns ``(holds, values)``; the page writes the sentence and injects the values (``snippets.lab.say``).
"""

from __future__ import annotations

import math
import statistics

from snippets.lab import check
from snippets.lab.cache import Result

from . import derive
from .derive import at_step, losses_at

# ---- 1. step arithmetic ----------------------------------------------------------------------------------------


@check("for every batch size, with and without drop_last, the formula, steps_per_epoch, len(loader) and the number "
       "of batches a real DataLoader yielded are one number")
def counts_agree(result: Result) -> tuple[bool, dict]:
    disagree = [row["batch_size"] for row in result["rows"] for kind in ("keep", "drop")
                if not row[kind]["formula"] == row[kind]["recipe"] == row[kind]["len_loader"]
                == row[kind]["batches_yielded"]]
    return bool(result["rows"]) and not disagree, {"batch_sizes": len(result["rows"]), "disagree": disagree}


# ---- 2. curves -------------------------------------------------------------------------------------------------


def _steps_per_epoch(result: Result, batch_size: int) -> int:
    return next(r["steps_per_epoch"] for r in result["runs"] if r["batch_size"] == batch_size)


@check("from every start, after the epoch budget, shuffled, the batch with the highest loss is larger than the one with the lowest, "
       "and its loss is more than 10× higher")
def epochs_separate_batch_sizes(result: Result) -> tuple[bool, dict]:
    return derive.across_starts(result, _epochs_separate_batch_sizes)


def _epochs_separate_batch_sizes(result: dict) -> tuple[bool, dict]:
    epochs = result["epochs"]
    at = losses_at(result, "shuffled", lambda r: epochs * r["steps_per_epoch"])
    lo, hi = min(at, key=at.get), max(at, key=at.get)
    return (at[hi] > 10 * at[lo] and lo < hi,
            {"epochs": epochs, "loss_lo": at[lo], "batch_lo": lo, "steps_lo": epochs * _steps_per_epoch(result, lo),
             "loss_hi": at[hi], "batch_hi": hi, "steps_hi": epochs * _steps_per_epoch(result, hi),
             "ratio": at[hi] / at[lo], "ratio_rounded": _two_figures(at[hi] / at[lo])})


def _two_figures(value: float) -> float:
    """``value`` to two significant figures (31,070 → 31,000): a ratio of losses is no more precise than that."""
    return round(value, 1 - math.floor(math.log10(abs(value)))) if value else 0.0


@check("from every start, after the second-to-last step mark, shuffled, every batch size's loss is within 10% of the others'")
def shuffled_steps_align(result: Result) -> tuple[bool, dict]:
    return derive.across_starts(result, _shuffled_steps_align)


def _shuffled_steps_align(result: dict) -> tuple[bool, dict]:
    mid = result["equal_steps"][-2]
    at = losses_at(result, "shuffled", lambda r: mid)
    spread = max(at.values()) / min(at.values())
    return (spread < 1.1,
            {"steps": mid, "batch_min": min(at), "batch_max": max(at), "spread_pct": 100 * (spread - 1),
             "loss_min": min(at.values()), "loss_max": max(at.values()), "samples_ratio": max(at) // min(at)})


@check("from every start, at the last step mark, shuffled, the smallest batch has the highest loss")
def smallest_batch_falls_behind(result: Result) -> tuple[bool, dict]:
    return derive.across_starts(result, _smallest_batch_falls_behind)


def _smallest_batch_falls_behind(result: dict) -> tuple[bool, dict]:
    last = result["equal_steps"][-1]
    at = losses_at(result, "shuffled", lambda r: last)
    smallest = min(at)
    return (at[smallest] == max(at.values()),
            {"steps": last, "batch": smallest, "loss_smallest": at[smallest], "loss_best": min(at.values())})


@check("from every start, at the last step mark, unshuffled, the loss falls with every increase of the batch size")
def unshuffled_loss_falls_with_batch(result: Result) -> tuple[bool, dict]:
    return derive.across_starts(result, _unshuffled_loss_falls_with_batch)


def _unshuffled_loss_falls_with_batch(result: dict) -> tuple[bool, dict]:
    last = result["equal_steps"][-1]
    at = losses_at(result, "sequential", lambda r: last)
    sizes = sorted(at)
    return (len(sizes) > 1 and all(at[a] > at[b] for a, b in zip(sizes, sizes[1:])),
            {"steps": last, "losses": [[b, at[b]] for b in sizes]})


@check("from every start, after one epoch, the smallest batch has a lower full-dataset loss than the largest")
def full_batch_behind_per_sample(result: Result) -> tuple[bool, dict]:
    return derive.across_starts(result, _full_batch_behind_per_sample)


def _full_batch_behind_per_sample(result: dict) -> tuple[bool, dict]:
    order = "shuffled" if "shuffled" in result["orders"] else "sequential"
    at = losses_at(result, order, lambda r: r["steps_per_epoch"])
    lo, hi = min(at), max(at)
    return (at[lo] < at[hi],
            {"n_samples": result["n_samples"], "batch_lo": lo, "steps_lo": _steps_per_epoch(result, lo),
             "loss_lo": at[lo], "steps_hi": _steps_per_epoch(result, hi), "loss_hi": at[hi]})


# ---- 3. what the question's code hides -------------------------------------------------------------------------


@check("in every epoch, the question's logged loss is above the full-dataset loss at the end of the epoch")
def logged_above_true(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    above = sum(r["logged"] > r["true_end"] for r in rows)
    last = rows[-1]
    return (bool(rows) and above == len(rows),
            {"above": above, "epochs": len(rows), "last_epoch": last["epoch"], "logged": last["logged"],
             "true": last["true_end"], "pct_higher": 100 * (last["logged"] / last["true_end"] - 1)})


@check("at fixed weights, the plain mean of the batch losses is more than 0.1% off the full-dataset loss in "
       "some epoch")
def plain_mean_is_off(result: Result) -> tuple[bool, dict]:
    worst = max(result["rows"], key=lambda r: abs(r["fixed_plain"] / r["true_end"] - 1))
    largest = abs(worst["fixed_plain"] / worst["true_end"] - 1)
    return largest > 1e-3, {"largest_pct": 100 * largest, "epoch": worst["epoch"]}


@check("in every seed, the full batch ends above the small batch (from either start) at equal epochs by more than "
       "twice the most that swapping the start changes the small-batch run")
def epoch_gap_exceeds_start_effect(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    moves = [abs(r["small_from_a"] - r["small_from_b"]) for r in rows]
    gaps = [r["full_short"] - max(r["small_from_a"], r["small_from_b"]) for r in rows]
    return (min(gaps) > 2 * max(moves),
            {"epochs": result["epochs"], "batch_size": result["batch_size"], "min_gap": min(gaps),
             "max_start_effect": max(moves), "ratio": min(gaps) / max(moves) if max(moves) else float("inf")})


@check("at equal steps, for this seed, the full batch ends more than 3× below the small batch from either start")
def full_batch_ahead_at_equal_steps(result: Result, seed: int) -> tuple[bool, dict]:
    row = next((r for r in result["rows"] if r["seed"] == seed and r["full_long"] is not None), None)
    if row is None:
        return False, {"seed": seed, "full_long": None}
    return (3 * row["full_long"] < min(row["small_from_a"], row["small_from_b"]),
            {"seed": seed, "full_epochs": result["full_epochs"], "epochs": result["epochs"],
             "batch_size": result["batch_size"], "full_long": row["full_long"], "same_start": row["small_from_b"],
             "ratio": row["small_from_b"] / row["full_long"], "as_asked": row["small_from_a"]})


# ---- 4. gradient noise -----------------------------------------------------------------------------------------


@check("for every batch size, the measured minibatch-gradient variance is within a factor of 2 of "
       "tr(Σ)/B · (N−B)/(N−1)")
def variance_follows_the_law(result: Result) -> tuple[bool, dict]:
    rows = result["variance"]
    ratios = [r["measured"] / r["law"] for r in rows]
    return (bool(rows) and all(0.5 < q < 2 for q in ratios),
            {"batch_min": rows[0]["batch_size"], "batch_max": rows[-1]["batch_size"], "ratio_min": min(ratios),
             "ratio_max": max(ratios), "draws": rows[0]["draws"]})


@check("at the largest batch, the plain 1/B law is more than 2× the measured variance")
def plain_law_overestimates(result: Result) -> tuple[bool, dict]:
    top = result["variance"][-1]
    return (top["plain"] > 2 * top["measured"],
            {"batch_size": top["batch_size"], "factor": top["plain"] / top["measured"],
             "n_samples": result["n_samples"]})


@check("the question's contiguous batches scatter more than 10× as much as random batches of the same size")
def contiguous_batches_scatter(result: Result) -> tuple[bool, dict]:
    c = result["contiguous"]
    return c["measured"] > 10 * c["law_random"], {"batch_size": c["batch_size"],
                                                 "factor": c["measured"] / c["law_random"]}


def noise_points(result: Result, order: str) -> list[dict]:
    """The noise-scale checkpoints measured along the run of one batch order, in step order."""
    return sorted((p for p in result["points"] if p["order"] == order), key=lambda p: p["step"])


@check("along the shuffled run, B_simple at the last checkpoint is more than 5× B_simple at the first")
def noise_scale_grows(result: Result, order: str = "shuffled") -> tuple[bool, dict]:
    points = noise_points(result, order)
    if len(points) < 2:
        return False, {"order": order, "first": None, "last": None}
    first, last = points[0], points[-1]
    return (last["b_simple"] > 5 * first["b_simple"],
            {"order": order, "first": first["b_simple"], "first_step": first["step"], "last": last["b_simple"],
             "last_step": last["step"], "grad_fall": first["grad_sq"] / last["grad_sq"],
             "trace_fall": first["trace"] / last["trace"]})


@check("along the shuffled run, every batch size is more than 10× B_simple at the first checkpoint after step 0, "
       "and B_simple is above the smallest batch size at the last checkpoint")
def noise_scale_passes_smallest_batch(result: Result, batch_sizes: list[int]) -> tuple[bool, dict]:
    points = [p for p in noise_points(result, "shuffled") if p["step"] > 0]
    if len(points) < 2 or not batch_sizes:
        return False, {"early": None, "last": None}
    smallest, early, last = min(batch_sizes), points[0], points[-1]
    crossed = next((p for p in points if p["b_simple"] > smallest), None)
    return (smallest > 10 * early["b_simple"] and last["b_simple"] > smallest,
            {"smallest": smallest, "early_step": early["step"], "early": early["b_simple"],
             "early_times": smallest / early["b_simple"], "crossed_step": crossed and crossed["step"],
             "crossed": crossed and crossed["b_simple"], "last_step": last["step"], "last": last["b_simple"]})


# ---- learning-rate scaling -------------------------------------------------------------------------------------


@check("every seed's best learning rate at every batch multiple lies inside the grid, not at either edge")
def best_lr_inside_grid(result: Result) -> tuple[bool, dict]:
    best = derive.best_lrs(result)["best"]
    edges = [[seed, k, b["grid_lr"]] for seed, row in best.items() for k, b in row.items() if b["edge"]]
    points = sum(len(row) for row in best.values())
    lowest = min((b["lr"] for row in best.values() for b in row.values()), default=0.0)
    return (points > 0 and not edges,
            {"points": points, "edges": edges, "low": min(result["lrs"]), "high": max(result["lrs"]),
             "grid": len(result["lrs"]), "seeds": len(result["seeds"]), "question_lr": result["question_lr"],
             "lowest_best": lowest, "question_times": lowest / result["question_lr"]})


@check("every seed's fitted exponent of the best learning rate against k is nearer 0 than ½ or 1: the best "
       "learning rate follows neither the square-root nor the linear rule")
def best_lr_exponent_near_zero(result: Result) -> tuple[bool, dict]:
    found = derive.best_lrs(result)
    exponents = sorted(found["exponent"].values())
    multiples, median = result["multiples"], found["median"]
    largest = max(multiples)
    # where the seeds disagree most: the largest ratio of one k's best learning rates across seeds
    per_k = {k: [row[k]["lr"] for row in found["best"].values()] for k in multiples}
    spread = {k: max(lrs) / min(lrs) for k, lrs in per_k.items() if lrs}
    widest = max(spread, key=spread.get) if spread else None
    return (len(multiples) > 1 and bool(exponents) and all(derive.nearest_rule(e) == 0.0 for e in exponents),
            {"exponents": exponents, "low": exponents[0] if exponents else None,
             "high": exponents[-1] if exponents else None, "median_exponent": found["median_exponent"],
             "seeds": len(exponents), "smallest_k": min(multiples), "largest_k": largest,
             "best_first": median[min(multiples)], "best_last": median[largest],
             "linear_times": (largest / min(multiples)) * median[min(multiples)] / median[largest],
             "sqrt_times": math.sqrt(largest / min(multiples)) * median[min(multiples)] / median[largest],
             "widest_k": widest, "widest_ratio": spread.get(widest)})


@check("for every seed, each larger batch ends above the smaller one even at its own best learning rate")
def tuned_larger_batch_falls_behind(result: Result) -> tuple[bool, dict]:
    best, multiples = derive.best_lrs(result)["best"], result["multiples"]
    rising = [seed for seed, row in best.items()
              if all(row[a]["score"] < row[b]["score"] for a, b in zip(multiples, multiples[1:]))]
    loss = {k: 10 ** statistics.median(row[k]["score"] for row in best.values()) for k in multiples}
    return (len(multiples) > 1 and bool(best) and len(rising) == len(best),
            {"not_rising": sorted(set(best) - set(rising)), "smallest_k": min(multiples), "largest_k": max(multiples),
             "loss_first": loss[min(multiples)], "loss_last": loss[max(multiples)],
             "times": loss[max(multiples)] / loss[min(multiples)], "epochs": result["epochs"]})


# ---- 5. pitfalls that follow from step counts ------------------------------------------------------------------


@check("a OneCycleLR sized for the planned batch raises at the first step past its total, in a run with a "
       "smaller batch")
def undersized_schedule_raises(result: Result) -> tuple[bool, dict]:
    small, error = result["smaller"], result["smaller"]["error"] or {}
    return (bool(error) and error["step"] == result["planned_total"] + 1,
            {"planned_total": result["planned_total"], "planned_batch": result["planned_batch"],
             "error": error.get("type"), "step": error.get("step"), "epoch": error.get("epoch"),
             "batch": error.get("batch"), "batch_size": small["batch_size"], "needed": small["loader_steps"]})


@check("a OneCycleLR sized for the planned batch, run with a larger one, ends above half of max_lr")
def oversized_schedule_ends_warm(result: Result) -> tuple[bool, dict]:
    large = result["larger"]
    end = large["lrs"][-1] / result["max_lr"]
    return (end > 0.5,
            {"planned_batch": result["planned_batch"], "batch_size": large["batch_size"],
             "steps_run": large["steps_run"], "total_steps": large["total_steps"], "end_fraction": end})


@check("the OneCycleLR sized with total_steps(...) ends below 1% of max_lr")
def resized_schedule_anneals(result: Result) -> tuple[bool, dict]:
    fixed = result["larger_resized"]
    return fixed["lrs"][-1] < 0.01 * result["max_lr"], {"end_lr": fixed["lrs"][-1],
                                                        "total_steps": fixed["total_steps"]}


def _first_uneven(result: Result) -> dict | None:
    return next((r for r in result["rows"] if r["micro_batches"] % r["k"]), None)


@check("for every k, the optimizer steps counted in every epoch of the real loop equal "
       "steps_per_epoch(N, B, accumulation_steps=k)")
def accumulation_counts_match_recipe(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    return (bool(rows) and all(r["with"]["steps_per_epoch"] == [r["recipe"]] * result["epochs"] for r in rows),
            {"counted": [[r["k"], r["with"]["steps_per_epoch"]] for r in rows]})


@check("for the first k that does not divide the micro-batches, the epoch's last step has less than 0.9× the mean "
       "gradient of its samples")
def last_group_scaled_down(result: Result) -> tuple[bool, dict]:
    row = _first_uneven(result)
    if row is None:
        return False, {"k": None, "scale": None}
    scale = row["with"]["partial_group_scale"]
    return (scale is not None and scale < 0.9,
            {"k": row["k"], "micro_batches": row["micro_batches"], "leftover": row["micro_batches"] % row["k"],
             "scale": scale})


@check("for the first k that does not divide the micro-batches, without the end-of-epoch step one step sums more "
       "than k micro-batches")
def leftovers_carry_over(result: Result) -> tuple[bool, dict]:
    row = _first_uneven(result)
    if row is None:
        return False, {"k": None, "largest_group": None}
    without = row["without"]
    return (without["largest_group"] > row["k"],
            {"k": row["k"], "steps_per_epoch": without["steps_per_epoch"], "largest_group": without["largest_group"]})


# ---- DistributedSampler ----------------------------------------------------------------------------------------


def _sampler_row(result: Result, n_samples: int, sampler_drop_last: bool) -> dict | None:
    return next((r for r in result["rows"]
                 if r["n_samples"] == n_samples and r["sampler_drop_last"] == sampler_drop_last), None)


@check("every rank's step count equals steps_per_epoch(N, B, world_size, sampler_drop_last) and its len(loader)")
def rank_steps_match_recipe(result: Result) -> tuple[bool, dict]:
    world, rows = result["world_size"], result["rows"]
    return (bool(rows) and all(r["per_rank_steps"] == [r["recipe_steps"]] * world == r["per_rank_len_loader"]
                               for r in rows),
            {"batch_size": result["batch_size"], "world_size": world,
             "per_rank_steps": [r["per_rank_steps"] for r in rows]})


@check("with N divisible by the world size, each rank takes fewer steps than one process, and no index is "
       "repeated or dropped")
def ranks_take_fewer_steps(result: Result, n_samples: int) -> tuple[bool, dict]:
    row = _sampler_row(result, n_samples, False)
    if row is None:
        return False, {"n_samples": n_samples, "steps": None}
    return (row["per_rank_steps"][0] < row["single_process_steps"] and not row["repeated"] and not row["dropped"],
            {"n_samples": n_samples, "world_size": result["world_size"], "backend": row["backend"],
             "steps": row["per_rank_steps"][0], "samples": row["per_rank_samples"][0],
             "single_process_steps": row["single_process_steps"]})


@check("with N not divisible by the world size, the default sampler makes all ranks together see more than N "
       "samples, one repeated index per extra sample: the first indices of its list, each repeated at the end of "
       "one of the last ranks")
def padding_repeats_indices(result: Result, n_samples: int) -> tuple[bool, dict]:
    row = _sampler_row(result, n_samples, False)
    if row is None:
        return False, {"n_samples": n_samples, "repeated": None}
    total, world = row["all_reduce_samples"], result["world_size"]
    extra = total - n_samples
    return (total > n_samples and row["repeated"] == list(range(extra))
            and row["ranks_ending_in_a_repeat"] == list(range(world - extra, world)),
            {"n_samples": n_samples, "per_rank": row["per_rank_samples"][0], "repeated": row["repeated"],
             "all_reduce_samples": total, "extra": extra, "ranks": row["ranks_ending_in_a_repeat"],
             "world_size": world})


@check("with N not divisible by the world size and the sampler's drop_last=True, all ranks together see fewer "
       "than N samples, one never-seen index per missing sample")
def drop_last_skips_indices(result: Result, n_samples: int) -> tuple[bool, dict]:
    row = _sampler_row(result, n_samples, True)
    if row is None:
        return False, {"n_samples": n_samples, "dropped": None}
    total = row["all_reduce_samples"]
    return (total < n_samples and len(row["dropped"]) == n_samples - total,
            {"n_samples": n_samples, "per_rank": row["per_rank_samples"][0], "dropped": row["dropped"],
             "all_reduce_samples": total})


@check("in every configuration and every shuffled epoch, rank r receives every world_size-th index of the sampler's "
       "padded (or trimmed) list, starting at position r")
def shards_are_strided(result: Result) -> tuple[bool, dict]:
    layouts = [*result["rows"], *result["shuffled"]]
    row = next((r for r in result["rows"] if not r["sampler_drop_last"]), None)
    return (bool(layouts) and row is not None and all(layout["strided"] for layout in layouts),
            {"layouts": len(layouts), "world_size": result["world_size"],
             "heads": row["per_rank_head"] if row else None, "not_strided": sum(not l["strided"] for l in layouts)})


def _epochs(result: Result, set_epoch: bool) -> list[dict]:
    return sorted((e for e in result["shuffled"] if e["set_epoch"] == set_epoch), key=lambda e: e["epoch"])


@check("without set_epoch every shuffled epoch deals out epoch 0's permutation, identically on every rank; with "
       "set_epoch(e), epoch e deals out the permutation of seed + e, and no later epoch repeats epoch 0's order on "
       "any rank")
def set_epoch_reshuffles(result: Result) -> tuple[bool, dict]:
    without, with_ = _epochs(result, False), _epochs(result, True)
    repeat = bool(without) and all(e["permutation_of_epoch"] == [0] and all(e["same_as_first_epoch"])
                                   for e in without)
    fresh = len(with_) > 1 and all(e["permutation_of_epoch"] == [e["epoch"]] for e in with_) \
        and not any(any(e["same_as_first_epoch"]) for e in with_[1:])
    return (repeat and fresh,
            {"epochs": len(without), "without": [e["per_rank_head"][0] for e in without],
             "with": [e["per_rank_head"][0] for e in with_], "seed": result["sampler_seed"]})


@check("in every shuffled epoch, the repeated indices are the first ones of that epoch's permutation, and each "
       "sits at the end of one of the last ranks")
def shuffled_padding_repeats_permutation_start(result: Result) -> tuple[bool, dict]:
    world = result["world_size"]
    epochs = result["shuffled"]
    extra = len(epochs[0]["repeated"]) if epochs else 0

    def holds(e: dict) -> bool:
        return (0 < len(e["repeated"]) == extra and e["repeated"] == sorted(e["order_head"][:extra])
                and e["ranks_ending_in_a_repeat"] == list(range(world - extra, world)))

    first = _epochs(result, True)
    return (bool(epochs) and all(holds(e) for e in epochs),
            {"extra": extra, "world_size": world, "ranks": epochs[0]["ranks_ending_in_a_repeat"] if epochs else None,
             "repeated": [e["order_head"][:extra] for e in first]})


@check("summed over the default padded shards, the evaluation counts more than N samples and its mean is more than "
       "1e-5 (relative) off the mean over the dataset; trimmed shards count fewer than N and are off too; shards "
       "that neither pad nor trim count N and match the dataset's mean within 1e-6")
def padded_evaluation_is_off(result: Result) -> tuple[bool, dict]:
    ev = result["evaluation"]
    n, exact = ev["n_samples"], ev["exact"]["sum"] / ev["exact"]["count"]
    off = {name: abs(ev[name]["sum"] / ev[name]["count"] / exact - 1) for name in ("padded", "drop_last", "unpadded")}
    return (ev["padded"]["count"] > n and off["padded"] > 1e-5 and ev["drop_last"]["count"] < n
            and off["drop_last"] > 1e-5 and ev["unpadded"]["count"] == n and off["unpadded"] < 1e-6,
            {"n_samples": n, "exact": exact, "padded_count": ev["padded"]["count"],
             "padded": ev["padded"]["sum"] / ev["padded"]["count"], "padded_off": off["padded"],
             "drop_last_count": ev["drop_last"]["count"],
             "drop_last": ev["drop_last"]["sum"] / ev["drop_last"]["count"], "drop_last_off": off["drop_last"],
             "unpadded_off": off["unpadded"]})


@check("on every rank, accumulating k micro-batches under DistributedDataParallel all-reduces the gradients k "
       "times as often as with no_sync() around the first k − 1, and both leave the same gradient (within 1e-5 of "
       "its largest entry)")
def no_sync_all_reduces_once(result: Result) -> tuple[bool, dict]:
    acc = result["accumulation"]
    ranks = acc["per_rank"]
    k = acc["accumulation_steps"]
    return (bool(ranks) and all(r["micro_batches"] == k and r["no_sync"]["all_reduces"] > 0
                                and r["all_reduce_each"]["all_reduces"] == k * r["no_sync"]["all_reduces"]
                                and r["max_grad_difference"] <= 1e-5 * r["max_grad"] for r in ranks),
            {"k": k, "each": ranks[0]["all_reduce_each"]["all_reduces"] if ranks else None,
             "no_sync": ranks[0]["no_sync"]["all_reduces"] if ranks else None,
             "elements": ranks[0]["no_sync"]["elements"] if ranks else None,
             "difference": max((r["max_grad_difference"] for r in ranks), default=None),
             "world_size": result["world_size"]})


@check("with drop_last=False and a last batch of one sample, BatchNorm in train mode raises at that batch; with "
       "drop_last=True every batch trains")
def batchnorm_last_batch_raises(result: Result) -> tuple[bool, dict]:
    keep, drop = result["keep"], result["drop_last"]
    raised_at_last = (keep["error"] is not None and keep["batch_sizes"][-1:] == [1]
                      and keep["steps"] == len(keep["batch_sizes"]) - 1)
    return (result["last_batch"] == 1 and raised_at_last and drop["error"] is None,
            {"n_samples": result["n_samples"], "batch_size": result["batch_size"], "last_batch": result["last_batch"],
             "error": keep["error"]["type"] if keep["error"] else None, "steps_kept": keep["steps"],
             "steps_dropped": drop["steps"]})


@check("with GradScaler skipping the overflowing steps, a scheduler stepped every iteration counts every iteration, "
       "more than the optimizer steps taken, and torch warns of the order when the first step is skipped; stepped "
       "only when scaler_stepped says the optimizer did, it counts exactly the steps taken")
def gradscaler_schedule_runs_ahead(result: Result) -> tuple[bool, dict]:
    plain, guarded, iterations = result["plain"], result["guarded"], result["iterations"]
    skipped = len(result["overflow_at"])
    warned = bool(plain["warnings"])
    holds = (plain["scheduler_steps"] == iterations and plain["optimizer_steps"] == iterations - skipped
             and guarded["optimizer_steps"] == guarded["scheduler_steps"] == plain["optimizer_steps"]
             and warned == (0 in result["overflow_at"]) and not guarded["warnings"])
    return holds, {"iterations": iterations, "skipped": iterations - plain["optimizer_steps"],
                   "taken": plain["optimizer_steps"], "scheduler_steps": plain["scheduler_steps"],
                   "guarded_scheduler_steps": guarded["scheduler_steps"], "warned": warned}
