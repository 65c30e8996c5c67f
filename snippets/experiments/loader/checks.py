"""DataLoader overhead, the checks: named conditions on measured results, each the basis of a claim on the page.

Each returns ``(holds, values)``; the page writes the sentence and injects the values (``snippets.lab.say``).
Checks on timings take their thresholds from the page's wording and decide from the 95% interval of each ratio
(``timing=True``): a claim holds when the whole interval is on the right side of its threshold, fails when all of
it is on the wrong side, and is *undecided on this machine* (``holds=None``) otherwise. Their values include
``low`` and ``high``, the interval. The tests feed each one synthetic results.
"""

from __future__ import annotations

from snippets.lab import check
from snippets.lab.timing import decide

from .derive import (Value, bandwidth_rows, batch_size_ratios, breakdown_shares, decide_all, equal_n_ratio, judged,
                     fresh_memory_ratios, loader_share, per_sample_costs, pin_memory_ratio, question_ratios, quotient,
                     stack_to_clone, throughput_share, worker_ratios)

# ---------------------------------------------------------------------------------------------------------
# The question's timing


@check("all five loaders give bitwise-identical losses at every compared epoch and bitwise-identical weights")
def question_runs_identical(result: Value) -> tuple[bool, dict]:
    same = result["same"]
    differ = sorted(name for name, v in same.items() if not (v["losses_identical"] and v["weights_identical"]))
    return bool(same) and not differ, {"compared_epochs": result["compared_epochs"], "runs": len(same),
                                       "differ": differ}


@check("the DataLoader run takes more than 3× as long per epoch as training on the tensors directly", timing=True)
def dataloader_slower(result: Value) -> tuple[bool | None, dict]:
    return judged(question_ratios(result)["DataLoader"], ">", 3)


@check("DataLoader over a TensorDataset takes more than 5× as long per epoch as DataLoader over a "
       "BatchedTensorDataset (same arguments, the question's full batch)", timing=True)
def batched_dataset_faster(result: Value) -> tuple[bool | None, dict]:
    return judged(question_ratios(result, baseline="DataLoader + BatchedTensorDataset")["DataLoader"], ">", 5)


# ---------------------------------------------------------------------------------------------------------
# Where the time goes


@check("the installed torch's TensorDataset has no __getitems__, so the fetcher indexes it once per sample")
def tensor_dataset_has_no_getitems(result: Value) -> tuple[bool, dict]:
    has = result["tensor_dataset_getitems"]
    return not has, {"torch": result["torch"], "has_getitems": has}


@check("with automatic batching, one epoch calls dataset[i] once per sample")
def getitem_per_sample(result: Value) -> tuple[bool, dict]:
    calls = result["calls"]["getitem_per_epoch"]
    return calls == result["n"], {"calls": calls, "n": result["n"]}


def _counted(result: Value) -> dict[str, dict]:
    return {row["label"]: row for row in result["rows"]}


@check("with automatic batching, DataLoader indexes each of x and y once per sample and hands torch.stack every "
       "row it indexed: 2 × N indexings and 2 × N rows stacked for a batch of N")
def dataloader_counts_per_sample(result: Value) -> tuple[bool, dict]:
    row = _counted(result)["DataLoader"]
    wanted = 2 * result["n"] * row["batches"]
    return row["indexing"] == wanted and row["stacked"] == wanted, {
        "indexing": row["indexing"], "stacked": row["stacked"], "n": result["n"], "batches": row["batches"]}


@check("BatchSampler, BatchedTensorDataset and TensorLoader index each of x and y at most once per batch and "
       "call torch.stack on no rows")
def others_count_per_batch(result: Value) -> tuple[bool, dict]:
    rows = [row for label, row in _counted(result).items() if label not in ("direct", "DataLoader")]
    most = max(row["indexing"] / row["batches"] for row in rows)
    stacked = sum(row["stacked"] for row in rows)
    return bool(rows) and most <= 2 and stacked == 0, {"loaders": len(rows), "most_indexings_per_batch": most,
                                                       "stacked": stacked}


@check("DataLoader's loader-only epochs set off at least one garbage collection each; BatchSampler's, "
       "BatchedTensorDataset's and TensorLoader's none in as many epochs")
def only_per_sample_loader_collects(result: Value) -> tuple[bool, dict]:
    counted = _counted(result)
    per_epoch = sum(counted["DataLoader"]["collections"]) / result["epochs"]
    others = sum(sum(row["collections"]) for label, row in counted.items() if label not in ("direct", "DataLoader"))
    return per_epoch >= 1 and others == 0, {"per_epoch": per_epoch, "others": others, "epochs": result["epochs"],
                                            "threshold": result["gc_threshold"][0]}


@check("from a strided source, DataLoader's batch is a contiguous copy, equal to it; TensorLoader's is a view "
       "with the source's strides")
def strided_source_made_contiguous(result: Value) -> tuple[bool, dict]:
    layout = result["layout"]
    holds = (not layout["column_contiguous"] and layout["column_equals_x"] and layout["batch_contiguous"]
             and layout["batch_equal"] and not layout["batch_shares_memory"] and layout["tensorloader_shares_memory"]
             and layout["tensorloader_stride"] == layout["column_stride"])
    return bool(holds), {key: layout[key] for key in ("column_stride", "column_equals_x", "batch_stride",
                                                      "batch_contiguous", "batch_shares_memory",
                                                      "tensorloader_stride")}


@check("a training step runs the same operators, as often, on the strided column as on DataLoader's contiguous "
       "batch: no copy to make the input contiguous")
def strided_step_runs_the_same_operators(result: Value) -> tuple[bool, dict]:
    column, batch = result["operators"]["column"], result["operators"]["batch"]
    differing = sorted(name for name in set(column) | set(batch) if column.get(name) != batch.get(name))
    return bool(column) and not differing, {"operator_calls": sum(column.values()),
                                            "differing": differing or "none"}


@check("creating the iterator takes less than 5% of the epoch", timing=True)
def iterator_negligible(result: Value) -> tuple[bool | None, dict]:
    return judged(breakdown_shares(result)["iterator"], "<", 0.05, "share")


@check("clone() of the batch's bytes takes less than 5% of the epoch", timing=True)
def copy_negligible(result: Value) -> tuple[bool | None, dict]:
    return judged(breakdown_shares(result)["copy"], "<", 0.05, "share")


@check("torch.stack of the N one-row tensors takes more than 5× as long as clone() of the same bytes", timing=True)
def stack_copy_costly(result: Value) -> tuple[bool | None, dict]:
    holds, values = judged(stack_to_clone(result), ">", 5)
    return holds, {**values, "n": result["n"]}


@check("the dataset[i] calls and default_collate together take more than half of the epoch", timing=True)
def per_sample_dominates(result: Value) -> tuple[bool | None, dict]:
    return judged(breakdown_shares(result)["per_sample"], ">", 0.5, "share")


# ---------------------------------------------------------------------------------------------------------
# Scaling


@check("at every batch size, shuffled or not, DataLoader takes more than 2× as long per epoch as TensorLoader",
       timing=True)
def dataloader_slower_at_every_batch_size(result: Value) -> tuple[bool | None, dict]:
    ratios = batch_size_ratios(result, "DataLoader", "TensorLoader")
    holds, (shuffle, size) = decide_all(ratios, ">", 2)
    return holds, {**judged(ratios[(shuffle, size)], ">", 2, "smallest_ratio")[1], "batch_size": size,
                   "shuffle": shuffle}


@check("at the same N (the largest DataLoader ran), shuffled, DataLoader's full-batch epoch takes more than 20× "
       "as long as TensorLoader's", timing=True)
def per_sample_cost_ratio(result: Value) -> tuple[bool | None, dict]:
    costs = per_sample_costs(result, shuffle=True)
    holds, values = judged(equal_n_ratio(result, shuffle=True), ">", 20)
    return holds, {**values, "n": costs["DataLoader"]["n"],
                                    "dataloader_per_sample": costs["DataLoader"]["per_sample"],
                                    "tensorloader_per_sample": costs["TensorLoader"]["per_sample"]}


# ---------------------------------------------------------------------------------------------------------
# When it matters


@check("for the question's MLP, DataLoader's share of a training step is more than 5× TensorLoader's "
       "(the lower bound of one's interval above 5× the upper bound of the other's)", timing=True)
def small_model_dataloader_share(result: Value) -> tuple[bool | None, dict]:
    tiny = result["rows"][0]
    dataloader, tensorloader = loader_share(result, tiny, "DataLoader"), loader_share(result, tiny, "TensorLoader")
    holds, values = judged(quotient(dataloader, tensorloader), ">", 5)
    return holds, {"dataloader_share": dataloader["value"], "tensorloader_share": tensorloader["value"], **values}


@check("DataLoader's share of a training step is smaller for the larger MLP than for the question's "
       "(the whole intervals apart)", timing=True)
def larger_model_smaller_share(result: Value) -> tuple[bool | None, dict]:
    tiny, wide = result["rows"]
    small, large = loader_share(result, tiny, "DataLoader"), loader_share(result, wide, "DataLoader")
    holds, values = judged(quotient(large, small), "<", 1)
    return holds, {"larger_model_share": large["value"], "question_model_share": small["value"], **values}


@check("for the question's MLP, TensorLoader's share of a training step is below 10%", timing=True)
def tensorloader_share_small(result: Value) -> tuple[bool | None, dict]:
    tiny = result["rows"][0]
    return judged(loader_share(result, tiny, "TensorLoader"), "<", 0.10, "share")


def _compile_setting(result: Value, label: str) -> dict:
    return next(setting for setting in result["settings"] if setting["label"] == label)


@check("with drop_last=False and a short last batch, torch.compile compiles twice in the first epoch — the second "
       "time with a dynamic batch size — and never again")
def short_last_batch_recompiles(result: Value) -> tuple[bool, dict]:
    setting = _compile_setting(result, "drop_last=False")
    compiles, dynamic = setting["compiles_per_epoch"], setting["dynamic"]
    holds = result["epochs"] > 1 and compiles == [2] + [0] * (result["epochs"] - 1) and dynamic == [False, True]
    return holds, {"compiles_per_epoch": compiles, "dynamic": dynamic, "n": result["n"],
                   "batch_size": result["batch_size"], "last_batch": result["n"] % result["batch_size"]}


@check("with drop_last=True, or with the batch dimension marked dynamic before the first call, torch.compile "
       "compiles once in all")
def one_compile_with_drop_last_or_mark_dynamic(result: Value) -> tuple[bool, dict]:
    totals = {setting["label"]: sum(setting["compiles_per_epoch"]) for setting in result["settings"]
              if setting["label"].startswith(("drop_last=True", "drop_last=False, mark_dynamic"))}
    return len(totals) == 2 and set(totals.values()) == {1}, {"compiles": totals}


@check("at full batch, DataLoader with fresh workers (1 or 2) takes more than 2× as long as num_workers=0",
       timing=True)
def fresh_workers_slower(result: Value) -> tuple[bool | None, dict]:
    n = result["settings"][0][0]
    ratios = worker_ratios(result, n, "num_workers=0")
    holds, label = decide_all({label: ratios[label] for label in ("num_workers=1", "num_workers=2")}, ">", 2)
    return holds, {"n": n, **judged(ratios[label], ">", 2)[1], "workers": label}


@check("in every setting, the fastest DataLoader configuration takes more than 5× as long as TensorLoader "
       "(every DataLoader configuration's interval above 5×)", timing=True)
def tensorloader_beats_workers(result: Value) -> tuple[bool | None, dict]:
    ratios = {(n, label): interval for n, _ in result["settings"]
              for label, interval in worker_ratios(result, n, "TensorLoader").items()}
    holds, key = decide_all(ratios, ">", 5)
    return holds, {**judged(ratios[key], ">", 5, "smallest_ratio")[1], "n": key[0], "configuration": key[1]}


@check("copying the next batch from pinned memory on a side stream makes the steps faster than copying each batch "
       "on the compute stream (the copy overlaps the compute)", timing=True)
def pinned_copy_overlaps(result: Value) -> tuple[bool | None, dict]:
    ratio = pin_memory_ratio(result, "pinned, next batch copied on a side stream",
                             baseline="pinned, .to(device, non_blocking=True), then compute")
    holds, values = judged(ratio, "<", 1)
    return holds, {**values, "device": result["device"]}


# ---------------------------------------------------------------------------------------------------------
# The limit: memory bandwidth


def _throughput_shares(result: Value) -> tuple[int, int, dict[int, dict]]:
    """The narrowest and widest rows DataLoader ran with, and its GB/s as a share of TensorLoader's."""
    dataloader = {w: r for w, r in bandwidth_rows(result, "DataLoader, shuffle").items() if r["median"]}
    narrow, wide = min(dataloader), max(dataloader)
    return narrow, wide, {w: throughput_share(result, w) for w in (narrow, wide)}


@check("with the narrowest rows, DataLoader's shuffled full batch reaches less than half of TensorLoader's GB/s",
       timing=True)
def dataloader_narrow_rows_slow(result: Value) -> tuple[bool | None, dict]:
    narrow, _, share = _throughput_shares(result)
    holds, values = judged(share[narrow], "<", 0.5, "share")
    return holds, {"row_bytes": 4 * narrow, **values}


@check("with the widest rows DataLoader ran, its share of TensorLoader's GB/s is larger than with the narrowest "
       "(the whole intervals apart)", timing=True)
def dataloader_wide_rows_closer(result: Value) -> tuple[bool | None, dict]:
    narrow, wide, share = _throughput_shares(result)
    holds, values = judged(quotient(share[wide], share[narrow]), ">", 1)
    return holds, {"row_bytes": 4 * wide, "share": share[wide]["value"], "narrow_share": share[narrow]["value"],
                   **values}


@check("clone() takes longer than copy_() of the same bytes into an existing tensor, at every row width (every "
       "interval above 1×)", timing=True)
def fresh_memory_slower(result: Value) -> tuple[bool | None, dict]:
    ratios = fresh_memory_ratios(result)
    holds, width = decide_all(ratios, ">", 1)
    return holds, {**judged(ratios[width], ">", 1)[1], "width": width, "device": result["device"]}


# ---------------------------------------------------------------------------------------------------------
# The recipe's contract


@check("over every combination tried, TensorLoader yields DataLoader's batches and leaves the global RNG and "
       "the generator in DataLoader's state after every epoch")
def tensorloader_matches_dataloader(result: Value) -> tuple[bool, dict]:
    return not result["failures"] and result["combinations"] > 0, \
        {"combinations": result["combinations"], "epochs": result["epochs"], "batches": result["batches"],
         "failures": result["failures"]}


@check("over every combination tried, DataLoader over a BatchedTensorDataset yields the batches of DataLoader over a "
       "TensorDataset with the same arguments and leaves the RNGs in the same state, without calling dataset[i]: "
       "with shuffle, drop_last and generator, with a DistributedSampler on every rank, with worker processes")
def batched_dataset_matches_dataloader(result: Value) -> tuple[bool, dict]:
    batched = result["batched"]
    return not batched["failures"] and batched["combinations"] > 0 and batched["distributed_shards"] > 0 \
        and batched["worker_settings"] > 0, {**batched, "epochs": result["epochs"]}


@check("with persistent_workers=True only the first iter(DataLoader) draws from the global RNG (sequential); "
       "without it every iter() draws, with or without workers, and so does every iter(TensorLoader)")
def persistent_workers_draw_once(result: Value) -> tuple[bool, dict]:
    advanced, epochs = result["rng"]["advanced"], result["rng"]["epochs"]
    persistent = advanced["num_workers=2, persistent_workers=True"]
    others = {label: moved for label, moved in advanced.items() if "persistent" not in label}
    holds = epochs > 1 and persistent == [True] + [False] * (epochs - 1) and all(all(m) for m in others.values())
    return holds, {"epochs": epochs, "persistent": persistent, "others": others}


@check("with worker processes, iter(DataLoader) of a shuffled loader already draws RandomSampler's seed (the workers "
       "prefetch); with num_workers=0, and in TensorLoader, iter() draws only the base seed")
def workers_draw_sampler_seed_at_iter(result: Value) -> tuple[bool, dict]:
    at_iter = result["rng"]["sampler_at_iter"]
    with_workers = [label for label in at_iter if label.startswith("num_workers=2")]
    holds = bool(with_workers) and all(at_iter[label] for label in with_workers) \
        and not at_iter["num_workers=0"] and not at_iter["TensorLoader"]
    return holds, dict(at_iter)


# ---------------------------------------------------------------------------------------------------------
# TensorLoader under distributed training


@check("in a gloo group of several ranks, every rank's TensorLoader(distributed=True) yields the batches of DataLoader "
       "with a DistributedSampler, for every setting tried, epoch after epoch with set_epoch")
def tensorloader_shards_like_distributed_sampler(result: Value) -> tuple[bool, dict]:
    world = result["world_size"]
    padded_n = next((n for n in result["sizes"] if n % world), None)  # a size that needs padding, if one was tried
    per_rank = sorted({samples[f"{padded_n}, shuffle=True"] for samples in result["samples_per_rank"]}) \
        if padded_n is not None else []
    holds = (world > 1 and result["cases"] > 0 and result["batches"] > 0 and not result["failures"]
             and len(per_rank) == 1 and per_rank[0] * world > padded_n)
    return holds, {"world_size": world, "cases": result["cases"], "epochs": result["epochs"],
                   "batches": result["batches"], "failures": len(result["failures"]), "n": padded_n,
                   "per_rank": per_rank[0] if len(per_rank) == 1 else per_rank,
                   "repeated": per_rank[0] * world - padded_n if len(per_rank) == 1 else None}


@check("in a group of several ranks, a TensorLoader not told to shard refuses to run on every rank, and "
       "distributed=False iterates over the whole dataset there")
def unsharded_tensorloader_refuses_in_a_group(result: Value) -> tuple[bool, dict]:
    refused = [bool(message) and "was not told to shard" in message for message in result["refused"]]
    whole = result["opted_out_samples"]
    holds = result["world_size"] > 1 and len(refused) == result["world_size"] and all(refused) \
        and len(set(whole)) == 1 and whole[0] > 0
    return holds, {"ranks_refused": sum(refused), "world_size": result["world_size"],
                   "opted_out_samples": whole[0] if len(set(whole)) == 1 else whole}
