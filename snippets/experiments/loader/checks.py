"""DataLoader overhead, the checks: named conditions on measured results, each the basis of a claim on the page.

Each returns ``(holds, values)``; the page writes the sentence and injects the values (``snippets.lab.say``).
Checks on timings take their thresholds from the page's wording; the tests feed each one synthetic results.
"""

from __future__ import annotations

from snippets.lab import check

from .derive import Value, bandwidth_rows, breakdown_shares, loader_share, per_sample_costs, question_ratios, \
    series, worker_rows

# ---------------------------------------------------------------------------------------------------------
# The question's timing


@check("all four loaders give bitwise-identical losses at every compared epoch and bitwise-identical weights")
def question_runs_identical(result: Value) -> tuple[bool, dict]:
    same = result["same"]
    differ = sorted(name for name, v in same.items() if not (v["losses_identical"] and v["weights_identical"]))
    return bool(same) and not differ, {"compared_epochs": result["compared_epochs"], "runs": len(same),
                                       "differ": differ}


@check("the DataLoader run takes more than 3× as long per epoch as training on the tensors directly")
def dataloader_slower(result: Value) -> tuple[bool, dict]:
    ratio = question_ratios(result)["DataLoader"]
    return ratio > 3, {"ratio": ratio}


# ---------------------------------------------------------------------------------------------------------
# Where the time goes


@check("with automatic batching, one epoch calls dataset[i] once per sample")
def getitem_per_sample(result: Value) -> tuple[bool, dict]:
    calls = result["calls"]["getitem_per_epoch"]
    return calls == result["n"], {"calls": calls, "n": result["n"]}


@check("default_collate receives one list of all N samples per epoch")
def collate_one_list(result: Value) -> tuple[bool, dict]:
    sizes = result["calls"]["collate_sizes"]
    return sizes == [result["n"]], {"n": result["n"], "collate_sizes": sizes}


@check("with a BatchSampler as sampler and batch_size=None, the dataset is indexed once per epoch")
def batch_sampler_indexes_once(result: Value) -> tuple[bool, dict]:
    calls = result["calls"]["batch_sampler_getitem_per_epoch"]
    return calls == 1, {"calls": calls}


@check("DataLoader's full batch is contiguous, equal to the data, and does not share its memory")
def batch_is_fresh_copy(result: Value) -> tuple[bool, dict]:
    layout = result["layout"]
    return bool(layout["batch_contiguous"] and layout["batch_equal"] and not layout["batch_shares_memory"]), \
        {key: layout[key] for key in ("batch_contiguous", "batch_equal", "batch_shares_memory")}


@check("x is contiguous and has the same strides as DataLoader's batch")
def source_already_contiguous(result: Value) -> tuple[bool, dict]:
    layout = result["layout"]
    return bool(layout["x_contiguous"]) and layout["x_stride"] == layout["batch_stride"], \
        {"x_stride": layout["x_stride"], "batch_stride": layout["batch_stride"]}


@check("creating the iterator takes less than 5% of the epoch")
def iterator_negligible(result: Value) -> tuple[bool, dict]:
    share = breakdown_shares(result)["iterator"]
    return share < 0.05, {"share": share}


@check("clone() of the batch's bytes takes less than 5% of the epoch")
def copy_negligible(result: Value) -> tuple[bool, dict]:
    share = breakdown_shares(result)["copy"]
    return share < 0.05, {"share": share}


@check("the dataset[i] calls and default_collate together take more than half of the epoch")
def per_sample_dominates(result: Value) -> tuple[bool, dict]:
    shares = breakdown_shares(result)
    share = shares["indexing"] + shares["collate"]
    return share > 0.5, {"share": share}


# ---------------------------------------------------------------------------------------------------------
# Scaling


@check("at every batch size, shuffled or not, DataLoader takes more than 2× as long per epoch as TensorLoader")
def dataloader_slower_at_every_batch_size(result: Value) -> tuple[bool, dict]:
    ratio, size, shuffle = min(
        (dl / tl, size, shuffle)
        for shuffle in (False, True)
        for size, dl, tl in zip(result["batch_sizes"], series(result["points"], "DataLoader", shuffle)[1],
                                series(result["points"], "TensorLoader", shuffle)[1])
    )
    return ratio > 2, {"smallest_ratio": ratio, "batch_size": size, "shuffle": shuffle}


@check("at the largest N each ran, DataLoader's time per sample is more than 100× TensorLoader's")
def per_sample_cost_ratio(result: Value) -> tuple[bool, dict]:
    costs = per_sample_costs(result)
    dataloader, tensorloader = costs["DataLoader"], costs["TensorLoader"]
    ratio = dataloader["per_sample"] / tensorloader["per_sample"]
    return ratio > 100, {"ratio": ratio, "dataloader_per_sample": dataloader["per_sample"],
                         "dataloader_n": dataloader["n"], "tensorloader_per_sample": tensorloader["per_sample"],
                         "tensorloader_n": tensorloader["n"]}


# ---------------------------------------------------------------------------------------------------------
# When it matters


@check("for the question's MLP, DataLoader's share of a training step is more than 5× TensorLoader's")
def small_model_dataloader_share(result: Value) -> tuple[bool, dict]:
    tiny = result["rows"][0]
    dataloader, tensorloader = loader_share(tiny, "DataLoader"), loader_share(tiny, "TensorLoader")
    return dataloader > 5 * tensorloader, {"dataloader_share": dataloader, "tensorloader_share": tensorloader}


@check("DataLoader's share of a training step is smaller for the larger MLP than for the question's")
def larger_model_smaller_share(result: Value) -> tuple[bool, dict]:
    tiny, wide = result["rows"]
    small, large = loader_share(tiny, "DataLoader"), loader_share(wide, "DataLoader")
    return large < small, {"larger_model_share": large, "question_model_share": small}


@check("for the question's MLP, TensorLoader's share of a training step is below 10%")
def tensorloader_share_small(result: Value) -> tuple[bool, dict]:
    tiny = result["rows"][0]
    share = loader_share(tiny, "TensorLoader")
    return share < 0.10, {"share": share}


@check("at full batch, DataLoader with fresh workers (1 or 2) takes more than 2× as long as num_workers=0")
def fresh_workers_slower(result: Value) -> tuple[bool, dict]:
    n = result["settings"][0][0]
    full = worker_rows(result, n)
    fresh = min(full[label]["median"] for label in ("num_workers=1", "num_workers=2"))
    ratio = fresh / full["num_workers=0"]["median"]
    return ratio > 2, {"n": n, "ratio": ratio}


@check("in every setting, the fastest DataLoader configuration takes more than 5× as long as TensorLoader")
def tensorloader_beats_workers(result: Value) -> tuple[bool, dict]:
    ratios = []
    for n, _ in result["settings"]:
        rows = worker_rows(result, n)
        fastest = min(row["median"] for label, row in rows.items() if label != "TensorLoader")
        ratios.append(fastest / rows["TensorLoader"]["median"])
    return min(ratios) > 5, {"smallest_ratio": min(ratios), "ratios": ratios}


# ---------------------------------------------------------------------------------------------------------
# The limit: memory bandwidth


def _throughput_shares(result: Value) -> tuple[int, int, dict[int, float]]:
    """The narrowest and widest rows DataLoader ran with, and its GB/s as a share of TensorLoader's."""
    dataloader = {w: r for w, r in bandwidth_rows(result, "DataLoader, shuffle").items() if r["median"]}
    ours = bandwidth_rows(result, "TensorLoader")
    narrow, wide = min(dataloader), max(dataloader)
    return narrow, wide, {w: dataloader[w]["gbps"] / ours[w]["gbps"] for w in (narrow, wide)}


@check("with the narrowest rows, DataLoader's shuffled full batch reaches less than half of TensorLoader's GB/s")
def dataloader_narrow_rows_slow(result: Value) -> tuple[bool, dict]:
    narrow, _, share = _throughput_shares(result)
    return share[narrow] < 0.5, {"row_bytes": 4 * narrow, "share": share[narrow]}


@check("with the widest rows DataLoader ran, its share of TensorLoader's GB/s is larger than with the narrowest")
def dataloader_wide_rows_closer(result: Value) -> tuple[bool, dict]:
    narrow, wide, share = _throughput_shares(result)
    return share[wide] > share[narrow], {"row_bytes": 4 * wide, "share": share[wide],
                                         "narrow_share": share[narrow]}


# ---------------------------------------------------------------------------------------------------------
# The recipe's contract


@check("over every combination tried, TensorLoader yields DataLoader's batches and leaves the global RNG and "
       "the generator in DataLoader's state after every epoch")
def tensorloader_matches_dataloader(result: Value) -> tuple[bool, dict]:
    return not result["failures"] and result["combinations"] > 0, \
        {"combinations": result["combinations"], "epochs": result["epochs"], "batches": result["batches"],
         "failures": result["failures"]}


@check("TensorLoader's sequential batch shares the input's memory")
def sequential_batch_is_view(result: Value) -> tuple[bool, dict]:
    is_view = result["memory"]["sequential_is_view"]
    return bool(is_view), {"sequential_is_view": is_view}


@check("TensorLoader's shuffled batch and DataLoader's batch are copies")
def shuffled_batch_is_copy(result: Value) -> tuple[bool, dict]:
    memory = result["memory"]
    return bool(memory["shuffled_is_copy"] and memory["dataloader_is_copy"]), \
        {"shuffled_is_copy": memory["shuffled_is_copy"], "dataloader_is_copy": memory["dataloader_is_copy"]}
