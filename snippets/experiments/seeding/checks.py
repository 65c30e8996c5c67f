"""Seeding order, the checks: named conditions on measured results, each the basis of a claim on the page.

Each returns ``(holds, values)``; the page writes the sentence and injects the values (``snippets.lab.say``).
"""

from __future__ import annotations

from snippets.lab import check
from snippets.lab.cache import Result


@check("from equal starts, no epoch's loss differs between the direct and the DataLoader run")
def equal_starts_identical(result: Result) -> tuple[bool, dict]:
    fixed = result["fixed"]
    return (bool(fixed["same_start"]) and result["differing_epochs"] == 0 and result["compared_epochs"] == result["epochs"]
            and fixed["direct"] == fixed["loader"],
            {"epochs": result["epochs"], "differing_epochs": result["differing_epochs"],
             "max_abs_diff": result["max_abs_diff"]})


@check("from equal starts, the two runs end with bitwise-equal weights")
def same_final_weights(result: Result) -> tuple[bool, dict]:
    return bool(result["fixed"]["same_end"]), {"same_end": result["fixed"]["same_end"]}


@check("as asked (one seed), the two models start apart and end with different losses")
def as_asked_differ(result: Result) -> tuple[bool, dict]:
    asked = result["as_asked"]
    direct, loader = asked["direct"][-1], asked["loader"][-1]
    return not asked["same_start"] and direct != loader, {"final_direct": direct, "final_loader": loader,
                                                           "gap": abs(direct - loader)}


@check("as asked, the DataLoader run's losses and final weights are bitwise those of the direct loop started "
       "from the same (second model's) weights")
def as_asked_start_explains(result: Result) -> tuple[bool, dict]:
    asked = result["as_asked"]
    # every epoch was compared when it was measured; the kept curves are compared again here
    unexplained = max(result["as_asked_unexplained_epochs"],
                      sum(a != b for a, b in zip(asked["loader"], asked["loader_start_direct"])))
    holds = (unexplained == 0 and result["compared_epochs"] == result["epochs"]
             and bool(asked["same_end_as_loader_start_direct"]))
    return holds, {"epochs": result["epochs"], "unexplained_epochs": unexplained}


def _draws(result: Result, operation: str) -> int | None:
    return result["by_name"][operation]["int64_draws"]


@check("iter() of an unshuffled DataLoader and a whole unshuffled epoch each advance the global RNG by one int64")
def unshuffled_loader_draws(result: Result) -> tuple[bool, dict]:
    at_iter = _draws(result, "iter(DataLoader(..., shuffle=False))")
    epoch = _draws(result, "one epoch, shuffle=False")
    return at_iter == 1 and epoch == 1, {"at_iter": at_iter, "per_epoch": epoch}


@check("a shuffled epoch advances the global RNG by two int64 draws")
def shuffled_loader_draws(result: Result) -> tuple[bool, dict]:
    epoch = _draws(result, "one epoch, shuffle=True")
    return epoch == 2, {"per_epoch": epoch}


def _workers(result: Result) -> str:
    return f"num_workers={result['num_workers']}"


@check("without workers iter() of a shuffled DataLoader draws only the base seed (the sampler draws at the first "
       "batch); with workers iter() prefetches and takes the sampler's draw too")
def workers_draw_at_iter(result: Result) -> tuple[bool, dict]:
    plain = _draws(result, "iter(DataLoader(..., shuffle=True))")
    unshuffled = _draws(result, f"iter(DataLoader(..., shuffle=False, {_workers(result)}))")
    shuffled = _draws(result, f"iter(DataLoader(..., shuffle=True, {_workers(result)}))")
    return plain == 1 and unshuffled == 1 and shuffled == 2, \
        {"at_iter_plain": plain, "at_iter_workers": shuffled, "workers": result["num_workers"]}


@check("with persistent_workers=True only the first epoch draws the base seed; a shuffled loader's sampler still "
       "draws every epoch")
def persistent_workers_draw_once(result: Result) -> tuple[bool, dict]:
    per_epoch = {shuffle: [_draws(result, f"epoch {epoch}, shuffle={shuffle}, {_workers(result)}, "
                                          "persistent_workers=True") for epoch in (1, 2, 3)]
                 for shuffle in (False, True)}
    return per_epoch[False] == [1, 0, 0] and per_epoch[True] == [2, 1, 1], \
        {"unshuffled": ", ".join(map(str, per_epoch[False])), "shuffled": ", ".join(map(str, per_epoch[True])),
         "workers": result["num_workers"]}


@check("on CUDA, modules built on the device, dropout and randn there draw from the CUDA generator and leave the "
       "CPU one alone; a module built on the CPU and moved draws from the CPU generator only")
def cuda_has_its_own_generator(result: Result) -> tuple[bool, dict]:
    rows = {row["operation"]: row for row in result["cuda_rows"]}
    moved = rows.pop('nn.Linear(1, 10).to("cuda")', None)
    on_device = list(rows.values())
    holds = (moved is not None and moved["cpu_advances"] and not moved["cuda_advances"] and len(on_device) > 0
             and all(row["cuda_advances"] and not row["cpu_advances"] for row in on_device))
    return holds, {"on_device": len(on_device)}


@check("a shuffled epoch with generator=g does not advance the global RNG")
def generator_loader_draws_nothing(result: Result) -> tuple[bool, dict]:
    advances = result["by_name"]["one epoch, shuffle=True, generator=g"]["advances"]
    return not advances, {"advances": advances}


@check("the model built after the iterator gets different weights")
def peek_changes_second(result: Result) -> tuple[bool, dict]:
    return not result["second_model_unchanged"], {"second_model_unchanged": result["second_model_unchanged"]}


@check("two models built in seeded(0) blocks are equal with an iterator created in between")
def seeded_blocks_equal(result: Result) -> tuple[bool, dict]:
    return bool(result["seeded_models_equal"]), {"seeded_models_equal": result["seeded_models_equal"]}


@check("without a generator, building a model between the seed and random_split moves samples into or out of the "
       "validation set")
def split_moved_by_model(result: Result) -> tuple[bool, dict]:
    return result["moved"] > 0, {"moved": result["moved"], "validation": result["validation"]}


@check("with a seeded generator of its own, random_split gives the same split whether or not a model was built first")
def split_generator_stable(result: Result) -> tuple[bool, dict]:
    return bool(result["generator_same"]), {"generator_same": result["generator_same"]}


@check("a shuffled epoch with its own generator leaves the global RNG state unchanged")
def generator_leaves_global(result: Result) -> tuple[bool, dict]:
    return bool(result["global_untouched"]), {"global_untouched": result["global_untouched"]}


@check("re-seeding the generator repeats the order although a model was built in between")
def generator_order_repeats(result: Result) -> tuple[bool, dict]:
    return bool(result["order_repeats"]), {"order_repeats": result["order_repeats"]}


@check("without a generator, building a model before the epoch changes the shuffle order")
def global_order_shifted(result: Result) -> tuple[bool, dict]:
    return bool(result["global_order_shifted"]), {"global_order_shifted": result["global_order_shifted"]}


@check("worker k's torch seed is base seed + k, and get_worker_info().seed is that same number")
def workers_distinct_torch_seeds(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    bases = {row["torch_seed"] - row["worker"] for row in rows}
    holds = (result["workers"] > 1 and len(bases) == 1 and all(row["torch_seed"] == row["info_seed"] for row in rows))
    return holds, {"workers": result["workers"]}


@check("in every worker, Python's random gives what random.Random(get_worker_info().seed) gives")
def workers_random_seeded(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    return all(row["random"] == row["random_from_info_seed"] for row in rows) and len(rows) > 1, \
        {"workers": len(rows)}


@check("NumPy's global draws differ between workers, and differ from what numpy.random.seed(torch.initial_seed() "
       "% 2**32) gives")
def workers_numpy_not_seed_worker(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    distinct = len({row["numpy"] for row in rows}) == len(rows) > 1
    not_recipe = all(row["numpy"] != row["numpy_seed_worker"] for row in rows)
    return distinct and not_recipe, {"distinct": distinct, "not_recipe": not_recipe}


@check("a NumPy Generator created by the dataset in the main process gives every worker the same first draw")
def workers_own_generator_copied(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    return len(rows) > 1 and len({row["own_generator"] for row in rows}) == 1, {"workers": len(rows)}


@check("re-seeded from get_worker_info().seed in worker_init_fn, the dataset's generator differs between workers "
       "and repeats with the loader's seeded generator")
def workers_init_fn_reseeds(result: Result) -> tuple[bool, dict]:
    rows = result["fixed_rows"]
    distinct = len({row["own_generator"] for row in rows}) == len(rows) > 1
    return distinct and bool(result["fixed_repeatable"] and result["repeatable"]), \
        {"distinct": distinct, "repeatable": result["fixed_repeatable"]}


@check("at a fixed thread count, every computation of the thread table repeats bitwise")
def threads_repeatable(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    repeatable = sum(bool(row["repeatable"]) for row in rows)
    return repeatable == len(rows) > 0, {"repeatable": repeatable, "total": len(rows),
                                         "threads": " and ".join(map(str, result["thread_counts"]))}


@check("at least one computation of the thread table changes bitwise between the two thread counts")
def threads_change_results(result: Result) -> tuple[bool, dict]:
    lo, hi = result["thread_counts"][0], result["thread_counts"][-1]
    changed = [row["operation"] for row in result["rows"] if not row["equal"]]
    # "equal" and the difference are measured separately; a row may count as changed only if both say so
    consistent = all(row["equal"] == (row["max_abs_diff"] == 0) for row in result["rows"])
    return lo < hi and consistent and len(changed) > 0, \
        {"changed": len(changed), "total": len(result["rows"]), "lo": lo, "hi": hi, "names": "; ".join(changed)}


_DEVICE = {"cuda": "CUDA", "cpu": "the CPU"}


def _device(result: Result) -> str:
    return _DEVICE.get(result["device"], result["device"])


@check("on the page's device, the question's training gives bitwise-equal losses with and without "
       "use_deterministic_algorithms(True)")
def deterministic_identical(result: Result) -> tuple[bool, dict]:
    return bool(result["identical"]), {"device": _device(result), "identical": result["identical"]}


@check("the installed torch's docstring of use_deterministic_algorithms lists CPU operations the flag changes, "
       "among them every operation measured here")
def docstring_lists_cpu_operations(result: Result) -> tuple[bool, dict]:
    listed = result["documented_cpu"]
    covered = all(any(f"`{row['documented_as']}`" in entry for entry in listed) for row in result["rows"])
    return len(listed) > 0 and covered, {"count": len(listed), "entries": "; ".join(listed)}


@check("with the flag on, every measured listed operation gives the same bits in every run (or raises)")
def deterministic_listed_repeat(result: Result) -> tuple[bool, dict]:
    rows = result["rows"]
    repeat = all(row["raises_on"] or row["distinct_on"] == 1 for row in rows)
    return result["runs"] >= 2 and len(rows) > 0 and repeat, \
        {"runs": result["runs"], "total": len(rows), "device": _device(result), "threads": result["threads"]}


@check("an operation without a deterministic implementation raises under the flag, and with warn_only=True warns "
       "and runs")
def deterministic_warn_only(result: Result) -> tuple[bool, dict]:
    holds = bool(result["strict_raises"] and result["warn_only_runs"] and result["warn_only_warned"])
    return holds, {"strict_raises": result["strict_raises"], "warn_only_runs": result["warn_only_runs"],
                   "warn_only_warned": result["warn_only_warned"]}


@check("with the flag on and fill_uninitialized_memory at its default (True), torch.empty returns NaN "
       "(floats) and the largest value (integers)")
def deterministic_fills_empty(result: Result) -> tuple[bool, dict]:
    holds = bool(result["fill_uninitialized_memory"] and result["empty_all_nan"] and result["empty_int_all_max"])
    return holds, {"fill_uninitialized_memory": result["fill_uninitialized_memory"],
                   "empty_all_nan": result["empty_all_nan"]}


@check("on CUDA, deterministic mode raises for a cuBLAS product without CUBLAS_WORKSPACE_CONFIG exactly when the "
       "installed torch's docstring says it needs the variable")
def cublas_config_as_documented(result: Result) -> tuple[bool, dict]:
    measured = result["raises_without"]
    return result["device"] == "cuda" and measured is not None and bool(measured) == bool(result["documented"]), \
        {"torch": result["torch"], "documented": result["documented"], "raises_without": measured,
         "outcome": "raises a `RuntimeError`" if measured else "runs"}


@check("when every rank runs the same seeded script, every rank's workers make the same augmentation draws (on "
       "different samples); with the loader's generator seeded seed + rank, no two ranks draw the same")
def ddp_workers_share_streams(result: Result) -> tuple[bool, dict]:
    holds = (bool(result["alike_draws_equal"]) and bool(result["alike_indices_differ"])
             and not result["per_rank_draws_equal"])
    return holds, {"world_size": result["world_size"], "num_workers": result["num_workers"],
                   "alike_equal": result["alike_draws_equal"], "per_rank_equal": result["per_rank_draws_equal"]}


@check("DistributedSampler with one seed on every rank deals every sample to exactly one rank; with a seed per "
       "rank, some samples reach two ranks and others none")
def ddp_sampler_seed_shared(result: Result) -> tuple[bool, dict]:
    one, per_rank = result["one_seed"], result["seed_per_rank"]
    holds = (one["on_two_or_more_ranks"] == 0 and one["on_no_rank"] == 0
             and per_rank["on_two_or_more_ranks"] > 0 and per_rank["on_no_rank"] > 0)
    return holds, {"n": result["n_samples"], "world_size": result["world_size"],
                   "twice": per_rank["on_two_or_more_ranks"], "none": per_rank["on_no_rank"]}


@check("a resumed run repeats the uninterrupted one bit for bit when its checkpoint holds torch's RNG state, the "
       "loader's generator and Python's random state (or the recipe's rng_states), and differs whenever one of "
       "the three is missing")
def resume_needs_every_state(result: Result) -> tuple[bool, dict]:
    by_restored = {tuple(v["restored"]): v for v in result["variants"]}
    every = tuple(result["states"])
    whole = [by_restored.get(every), by_restored.get(("recipe",))]
    partial = [v for key, v in by_restored.items() if key not in (every, ("recipe",))]
    holds = (all(v is not None and v["equal"] for v in whole) and len(partial) == 2 ** len(every) - 1
             and not any(v["equal"] for v in partial))
    return holds, {"combinations": len(partial), "epochs": result["epochs"],
                   "stopped_after": result["stopped_after"],
                   "smallest_difference": min((v["max_abs_diff"] for v in partial), default=0.0)}


@check("after set_epoch(E) a DistributedSampler gives another order than after set_epoch(0)")
def resume_sampler_epoch(result: Result) -> tuple[bool, dict]:
    return bool(result["sampler_epoch_order_differs"]), {"epoch": result["stopped_after"]}


@check("after the same seed, a dropout compiled by Inductor gives another mask than eager and leaves the global "
       "generator in another state; with fallback_random = True both are the same as eager")
def compiled_dropout_differs(result: Result) -> tuple[bool, dict]:
    if not result["available"]:
        return False, {"error": result["error"]}
    default, fallback = result["default"], result["fallback_random"]
    holds = (not default["same_mask"] and not default["same_state"]
             and fallback["same_mask"] and fallback["same_state"])
    return holds, {"n": result["n"], "same_mask": default["same_mask"], "same_state": default["same_state"],
                   "fallback_same": fallback["same_mask"] and fallback["same_state"]}
