"""The one timing helper: ``torch.utils.benchmark`` with CUDA synchronised and the garbage collector on; median,
mean and spread reported; drift caught by a reference workload; intervals from the spread between fresh processes."""

from __future__ import annotations

import gc
import hashlib
import json
import math
import statistics
import time
from typing import Any, Callable

import psutil
import torch
import torch.utils.benchmark as benchmark


# The clock: work on one thread of the CPU (every experiment runs with one intra-op thread) is timed by that thread's
# CPU clock, which stops while another program holds its core: a busy machine then lengthens no time, where on the
# wall clock it lengthens whatever it interrupts. Work that runs elsewhere (a GPU, DataLoader worker processes) is
# timed by the wall clock (``kind="wall"``), and so is everything where the thread's clock is coarser than 1 µs.
def clock(device: torch.device | None = None, kind: str = "cpu") -> Callable[[], float]:
    """The timer for work on ``device``: the calling thread's CPU time for ``kind="cpu"`` on the CPU where that
    clock is fine-grained, else the wall clock (``time.perf_counter``)."""
    if kind not in ("cpu", "wall"):
        raise ValueError(f"clock must be 'cpu' or 'wall', got {kind!r}")
    if kind == "wall" or getattr(device, "type", "cpu") != "cpu" or \
            time.get_clock_info("thread_time").resolution > 1e-6:
        return time.perf_counter
    return time.thread_time


def measure(fn: Callable[[], Any], *, repeats: int = 7, min_run_time: float = 0.2,
            block_time: float = 0.02, device: torch.device | None = None, number: int | None = None,
            kind: str = "cpu") -> dict:
    """Time ``fn()`` and return seconds per call.

    After a warm-up call, ``fn`` runs in blocks of ``number`` calls (enough for ``block_time`` seconds); at
    least ``repeats`` blocks and ``min_run_time`` seconds in all. Given ``number`` (``fn`` is already warm and
    its block size known, as in the later rounds of ``interleaved``), there is no warm-up call. The garbage
    collector is on, as in a training loop. Returns ``median``, ``mean`` (what a total is computed from), ``iqr``,
    ``min``, ``max`` over the blocks, ``blocks`` and ``runs``, and ``samples`` (the blocks' times, at most ``MAX_SAMPLES`` of
    them, for bootstrap intervals), and ``contention``: the share of the cores it needed that other programs took
    meanwhile (``contention``; None where it cannot be read, or does not enter the time: a thread's CPU clock,
    ``clock``). On CUDA every call is followed by ``torch.cuda.synchronize``.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if number is not None and number < 1:
        raise ValueError(f"number must be >= 1, got {number}")
    if device is not None and device.type == "cuda":
        def call() -> None:
            fn()
            torch.cuda.synchronize(device)
    else:
        call = fn  # type: ignore[assignment]
    # timeit (under Timer) turns the garbage collector off while it times; a training loop runs with it on, and the
    # DataLoader path makes thousands of objects per epoch, exactly what triggers collections: ``setup`` turns it
    # back on inside the timed region (the idiom the timeit documentation gives).
    timer_fn = clock(device, kind)
    timer = benchmark.Timer(stmt="call()", setup="gc.enable()", globals={"call": call, "gc": gc},
                            num_threads=torch.get_num_threads(), timer=timer_fn)
    # Timer.timeit() warms up with two extra calls per measurement, which triples the cost of a
    # multi-second training loop; its inner ``_timeit`` runs exactly ``number`` calls (torch >= 1.8).
    if number is None:
        first = timer._timeit(1)  # warm-up, and an estimate of one call
        number = max(1, int(block_time / max(first, 1e-9)))
    times: list[float] = []
    before = cpu_snapshot(timer_fn)
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < min_run_time:
        times.append(timer._timeit(number) / number)
        if len(times) >= 10_000:
            break
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    times = [significant(value) for value in times]
    return {
        "median": significant(statistics.median(times)),
        "mean": significant(statistics.fmean(times)),
        "iqr": significant(quartiles[2] - quartiles[0]),
        "min": min(times),
        "max": max(times),
        "blocks": len(times),
        "runs": len(times) * number,
        "number": number,
        "samples": _thin(times),
        "contention": contention(before, cpu_snapshot(timer_fn)),
    }


# ---------------------------------------------------------------------------------------------------------
# Contention: how much of the CPU the timed work needed other programs took while it was timed. A busy machine does
# not only add noise: work split over several cores waits for any core another program holds, so a busy measurement
# can be tight and still wrong. Work on one core (every experiment runs with one intra-op thread) loses only what
# other programs take of *its* core: on two cores, one busy program takes nothing from it. Contended rounds are
# left out when quiet ones can be had, and what is left contended is said to be.

# A measurement is *contended* when other programs took more than this share of the cores it needed.
CONTENTION_LIMIT = 0.10
# Windows shorter than this are too short for the kernel's CPU accounting (10 ms ticks on Linux) to tell.
MIN_WINDOW_S = 0.25


def cpu_snapshot(timer: Callable[[], float] = time.perf_counter) -> tuple[float, float, float, float] | None:
    """(wall time, the machine's busy CPU seconds, its total CPU seconds, the CPU seconds of this process and of its
    children, running or ended) from psutil, for work timed on ``timer``. None for a timer that other programs
    cannot lengthen (a thread's CPU clock: ``clock``), and where the machine's accounting cannot be read."""
    if timer is not time.perf_counter:
        return None
    try:
        machine = psutil.cpu_times()
        # guest time is already inside user time (Linux); steal time, on a virtual machine, is time others held
        fields = [getattr(machine, name, 0.0) for name in
                  ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")]
        me = psutil.Process()
        own = sum(me.cpu_times()[:4])  # user, system, and those of the children it waited for
        for child in me.children(recursive=True):  # running ones: DataLoader's worker processes
            try:
                own += sum(child.cpu_times()[:2])
            except psutil.Error:  # it ended meanwhile: its time is in ours once waited for
                continue
    except (psutil.Error, OSError):
        return None
    return time.perf_counter(), sum(fields) - fields[3] - fields[4], sum(fields), own


def contention(before: tuple | None, after: tuple | None) -> float | None:
    """The share of the cores the timed work needed that other programs took, between two ``cpu_snapshot()``s.

    On a machine of n cores (its total CPU seconds over the window), work that kept k cores busy (its own CPU time in
    cores, rounded up once past a quarter, at least 1, at most n) leaves n − k to other programs; what they used
    beyond that came out of its cores, and that over k is returned: on two cores, one busy program beside one-thread
    work gives 0, two give about 1/3. Steal time, on a virtual machine, counts as used by others. None when the
    snapshots are missing (a timer other programs cannot lengthen, ``cpu_snapshot``) or the window is shorter than
    ``MIN_WINDOW_S``.
    """
    if before is None or after is None or after[0] - before[0] < MIN_WINDOW_S:
        return None
    total = after[2] - before[2]
    if total <= 0:
        return None
    span = after[0] - before[0]  # one core's CPU seconds over the window
    own = max(0, after[3] - before[3])
    others = max(0, (after[1] - before[1]) - own)
    cores = max(1, round(total / span))
    needed = min(cores, max(1, math.ceil(own / span - 0.25)))  # a core used less than a quarter of the time is not kept
    taken = max(0.0, others / span - (cores - needed))
    return min(1.0, taken / needed)


def contended(value: float | None) -> bool:
    return value is not None and value > CONTENTION_LIMIT


# ---------------------------------------------------------------------------------------------------------
# Uncertainty: every ratio and share the site prints comes with a 95 % interval that a rebuild on the same machine
# lands inside (between fresh processes; within one process only where one was timed); noisy ones are said to be.

MAX_SAMPLES = 64
# Seconds are kept to 6 significant figures: a timer read on a shared machine moves in the third, and 17 digits of
# noise would make a recording twice the size it needs (a recording stays under 1 MB).
SIGNIFICANT = 6


def significant(seconds: float, digits: int = SIGNIFICANT) -> float:
    """``seconds`` rounded to ``digits`` significant figures (0, inf and nan unchanged)."""
    return float(f"{seconds:.{digits}g}") if math.isfinite(seconds) and seconds else seconds


def drawn_only(values: list[float]) -> list[float]:
    """Values a figure draws and no check reads, to ``SIGNIFICANT`` figures (a recording stays small)."""
    return [significant(value) for value in values]


# A ratio is *wide* when its 95 % interval is wider than ±NOISE_TOLERANCE of its value (see index.md).
NOISE_TOLERANCE = 0.25
BOOTSTRAP_RESAMPLES = 2000


def _thin(values: list[float], limit: int = MAX_SAMPLES) -> list[float]:
    """At most ``limit`` values, evenly spaced through the list (a result stays small enough to store)."""
    if len(values) <= limit:
        return list(values)
    step = len(values) / limit
    return [values[int(i * step)] for i in range(limit)]


def t_quantile(df: int, confidence: float = 0.95) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of freedom (2.776 for 95%, 4)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    from scipy.stats import t

    return float(t.ppf((1 + confidence) / 2, df))


def _bootstrap(samples: tuple[list[float], ...], statistic: Callable[..., Any], *, paired: bool, confidence: float,
               resamples: int) -> tuple[float, float]:
    """The percentile bootstrap interval of ``statistic`` (vectorised over its ``axis``) over ``samples``, resampled
    together when ``paired``: ``scipy.stats.bootstrap``, seeded, so a rebuild of the same result gives the same."""
    import numpy
    from scipy.stats import bootstrap

    if resamples < 2:
        raise ValueError(f"a bootstrap interval needs at least 2 resamples, got {resamples}")
    with numpy.errstate(divide="ignore", invalid="ignore"):  # a resample that divides by 0 is said below
        found = bootstrap(samples, statistic, paired=paired, vectorized=True, n_resamples=resamples,
                          confidence_level=confidence, method="percentile", rng=numpy.random.default_rng(0))
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"a resampled ratio came out {low} … {high}: a round or block was timed at 0 s")
    return low, high


def ratio(numerator: dict, denominator: dict, *, confidence: float = 0.95,
          resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """``numerator / denominator`` of two timings, with a 95% interval.

    Timings measured in several fresh processes (``pooled``: both carry ``processes``) give one ratio per process
    (paired round by round inside it); the value is their geometric mean and the interval a 95% *prediction*
    interval for the value a rebuild with as many new processes gets: on the log scale, mean ± t · s · √(2/k) for
    k processes with standard deviation s: the range a rebuild's value should fall in if the machine behaves as
    it did while these processes ran, which is what a reader takes an interval to mean; it is √2 wider than a
    confidence interval for the mean. s is never less than what the scatter of each process's own rounds gives
    its value (``_process_spread``): a few processes can agree by chance.

    Within one process only (no ``processes``): timings from ``interleaved`` give the median of the per-round
    ratios, bootstrapped over rounds (paired); otherwise the blocks of each timing are resampled independently.
    That interval covers the variation inside one process only, and says so (``processes`` is 1).
    Returns ``{"value", "low", "high", "paired", "n", "processes", "contention", "drifted"}``; ``low``/``high``
    are None with too few rounds, blocks or processes for an interval, which counts as noisy.
    """
    shares = [t.get("contention") for t in (numerator, denominator) if t.get("contention") is not None]
    a_processes, b_processes = numerator.get("processes"), denominator.get("processes")
    if a_processes and b_processes and len(a_processes) == len(b_processes) and len(a_processes) > 1:
        pairs = list(zip(a_processes, b_processes))
        steady = [(a, b) for a, b in pairs if not (a.get("drifted") or b.get("drifted"))]
        # a process whose machine drifted is left out while three steady ones remain; otherwise all are kept, and
        # the ratio is marked drifted
        used = steady if len(steady) >= min(3, len(pairs)) else pairs
        out = _between_processes([a for a, _ in used], [b for _, b in used], confidence=confidence,
                                 resamples=resamples)
        out["drifted"] = used is pairs and len(steady) < len(pairs)
        out["drifted_processes_left_out"] = len(pairs) - len(used)
        used_shares = [row.get("contention") for pair in used for row in pair if row.get("contention") is not None]
        out["contention"] = max(used_shares) if used_shares else None
        return widened(out)
    out = _ratio(numerator, denominator, confidence=confidence, resamples=resamples)
    out["processes"] = 1
    out["contention"] = max(shares) if shares else None
    out["drifted"] = bool(numerator.get("drifted") or denominator.get("drifted"))
    return widened(out)


def disturbance(interval: dict) -> float:
    """How far a busy or drifting machine could have moved a ratio or share, as a factor ≥ 1: other programs holding
    a share c of the CPU slow one side by up to 1/(1 − c) (the other side perhaps not at all), and a drifted
    machine's speed moved by more than ``DRIFT_LIMIT`` (up to twice that is allowed for). 1 on a quiet machine."""
    factor = 1.0
    if contended(interval.get("contention")):
        factor /= 1 - min(interval["contention"], 0.9)
    if interval.get("drifted"):
        factor *= 1 + 2 * DRIFT_LIMIT
    return factor


def widened(interval: dict, *, odds: bool = False) -> dict:
    """``interval`` (a ratio's or a share's) widened by its ``disturbance`` on both sides, on the log scale: what a
    busy or drifting machine did to the measurement widens the interval a claim is decided on; it never withholds
    the decision (``decide``). The interval before widening is kept as ``low_quiet``/``high_quiet``.

    ``odds``: a share strictly between 0 and 1, whose *odds* a part slowed by a factor f (and the rest not) multiply
    by f, so it is widened on the logit scale and stays between 0 and 1."""
    factor = disturbance(interval)
    low, high = interval.get("low"), interval.get("high")
    if factor == 1.0 or low is None or high is None:
        return interval
    if odds and 0 < low and high < 1:
        shift = math.log(factor)
        return {**interval, "low_quiet": low, "high_quiet": high,
                "low": _expit(_logit(low) - shift), "high": _expit(_logit(high) + shift)}
    return {**interval, "low_quiet": low, "high_quiet": high,
            "low": low / factor if low > 0 else low * factor,
            "high": high * factor if high > 0 else high / factor}


def _between_processes(a: list[dict], b: list[dict], *, confidence: float, resamples: int) -> dict:
    logs = [math.log(_ratio(x, y, confidence=confidence, resamples=0)["value"]) for x, y in zip(a, b)]
    k = len(logs)
    centre = statistics.fmean(logs)
    rounds = [[math.log(p / q) for p, q in zip(x["rounds"], y["rounds"])] if _same_rounds(x, y) else []
              for x, y in zip(a, b)]
    half = t_quantile(k - 1, confidence) * _process_spread(logs, rounds) * math.sqrt(2 / k)
    return {"value": math.exp(centre), "low": math.exp(centre - half), "high": math.exp(centre + half),
            "paired": all(x.get("rounds") and y.get("rounds") for x, y in zip(a, b)), "n": k, "processes": k,
            "per_process": [math.exp(v) for v in logs]}


def _same_rounds(*timings: dict) -> bool:
    lengths = {len(t.get("rounds") or ()) for t in timings}
    return len(lengths) == 1 and lengths.pop() > 0


def round_scatter(rounds: list[float]) -> float:
    """The standard deviation a value taken from these per-round values has from their scatter alone: a median of
    n rounds with a robust spread σ (1.4826 × the median absolute deviation, which a stray round does not move)
    varies by σ · √(π / 2n). 0 with fewer than 3 rounds."""
    if len(rounds) < 3:
        return 0.0
    middle = statistics.median(rounds)
    sigma = 1.4826 * statistics.median(abs(v - middle) for v in rounds)
    return sigma * math.sqrt(math.pi / (2 * len(rounds)))


def _process_spread(per_process: list[float], rounds: list[list[float]]) -> float:
    """The spread the interval uses: the standard deviation between the processes' values, or, where it is
    larger, the spread each process's value has from the scatter of its own rounds (root mean square over the
    processes). A process's value varies at least by its rounds' scatter, so a few processes that agree
    more closely than their rounds allow agreed by chance, and the rounds' figure is the honest one."""
    between = statistics.stdev(per_process)
    within = [round_scatter(r) for r in rounds if len(r) >= 3]
    floor = math.sqrt(statistics.fmean(w * w for w in within)) if within else 0.0
    return max(between, floor)


# The intervals computed so far in this process, by their inputs: every language of a build, and every rebuild
# under mkdocs serve, prints the same intervals without resampling them (resampling was a fifth of a warm build)
_RATIOS: dict[str, dict] = {}


def _ratio(numerator: dict, denominator: dict, *, confidence: float, resamples: int) -> dict:
    """Within one process: the paired (rounds) or unpaired (blocks) ratio and its bootstrap interval (none with
    ``resamples`` 0), computed once per input (a pure function: the bootstrap is seeded)."""
    key = hashlib.sha256(json.dumps([numerator, denominator, confidence, resamples], sort_keys=True,
                                    default=repr).encode()).hexdigest()
    if key not in _RATIOS:
        _RATIOS[key] = _resampled_ratio(numerator, denominator, confidence=confidence, resamples=resamples)
    return dict(_RATIOS[key])


def _resampled_ratio(numerator: dict, denominator: dict, *, confidence: float, resamples: int) -> dict:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    import numpy

    a_rounds, b_rounds = numerator.get("rounds"), denominator.get("rounds")
    if a_rounds and b_rounds and len(a_rounds) == len(b_rounds):
        per_round = [a / b for a, b in zip(a_rounds, b_rounds)]
        out = {"value": statistics.median(per_round), "low": None, "high": None, "paired": True, "n": len(per_round)}
        if len(per_round) >= 3 and resamples:
            out["low"], out["high"] = _bootstrap((per_round,), numpy.median, paired=True, confidence=confidence,
                                                 resamples=resamples)
        return out
    a, b = numerator.get("samples") or [], denominator.get("samples") or []
    out = {"value": numerator["median"] / denominator["median"], "low": None, "high": None, "paired": False,
           "n": min(len(a), len(b))}
    if len(a) >= 3 and len(b) >= 3 and resamples:
        out["low"], out["high"] = _bootstrap(
            (a, b), lambda x, y, axis: numpy.median(x, axis=axis) / numpy.median(y, axis=axis), paired=False,
            confidence=confidence, resamples=resamples)
    return out


def share(parts: list[tuple[dict, dict]], *, resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """A share of a whole: Σ part ÷ whole over the ``(part, whole)`` pairs, each pair two timings made in the same
    rounds (a stage and the epoch it was timed inside). Additive, unlike ``ratio``: in each process a pair's
    share is its part's total time over its whole's, and a share is the mean of the processes' shares, so the
    shares of the stages of one epoch add up to its whole, remainder included. The interval is the same 95%
    prediction interval as ``ratio``'s, on the logit scale for a share between 0 and 1 (so it cannot reach 0% or
    100%), on the share itself for one that is not (a remainder can be negative). Within one process only:
    bootstrapped over rounds.
    Returns ``{"value", "low", "high", "n", "processes", "contention", "drifted"}``."""
    if not parts:
        raise ValueError("a share needs at least one (part, whole) pair")
    counts = {len(row.get("processes") or ()) for pair in parts for row in pair}
    shares = [row.get("contention") for pair in parts for row in pair if row.get("contention") is not None]
    flags = {"contention": max(shares) if shares else None,
             "drifted": any(row.get("drifted") for pair in parts for row in pair)}
    if len(counts) == 1 and (total := counts.pop()) > 1:
        steady = [p for p in range(total)
                  if not any(row["processes"][p].get("drifted") for pair in parts for row in pair)]
        used = steady if len(steady) >= min(3, total) else list(range(total))
        per_process = [sum(sum(part["processes"][p]["rounds"]) / sum(whole["processes"][p]["rounds"])
                           for part, whole in parts) for p in used]
        k = len(per_process)
        centre = statistics.fmean(per_process)
        rounds = [[sum(part["processes"][p]["rounds"][i] / whole["processes"][p]["rounds"][i] for part, whole in parts)
                   for i in range(len(parts[0][1]["processes"][p]["rounds"]))]
                  if _same_rounds(*(row["processes"][p] for pair in parts for row in pair)) else [] for p in used]
        if all(0 < value < 1 for value in per_process + [v for r in rounds for v in r]):
            # a share strictly between 0 and 1: its interval on the logit scale, which cannot reach 0% or 100%
            # (a linear one can, by arithmetic alone, with a few processes)
            half = t_quantile(k - 1) * _process_spread(_logits(per_process), [_logits(r) for r in rounds])
            half *= math.sqrt(2 / k)
            low, high = (_expit(_logit(centre) + sign * half) for sign in (-1, 1))
        else:  # a remainder can come out below 0: the linear interval, said as it is
            half = t_quantile(k - 1) * _process_spread(per_process, rounds) * math.sqrt(2 / k)
            low, high = centre - half, centre + half
        return widened({"value": centre, "low": low, "high": high, "n": k, "processes": k,
                        "per_process": per_process, **flags, "drifted": len(steady) < min(3, total),
                        "drifted_processes_left_out": total - k}, odds=True)
    lengths = {len(row.get("rounds") or ()) for pair in parts for row in pair}
    if len(lengths) != 1 or (n := lengths.pop()) == 0:
        raise ValueError("a share's parts and wholes must be timed in the same rounds")

    value = sum(sum(part["rounds"]) / sum(whole["rounds"]) for part, whole in parts)
    if n < 3:
        return {"value": value, "low": None, "high": None, "n": n, "processes": 1, **flags}

    def of(*rounds, axis):  # the parts' and wholes' rounds, resampled together
        return sum(part.sum(axis=axis) / whole.sum(axis=axis) for part, whole in zip(rounds[::2], rounds[1::2]))

    low, high = _bootstrap(tuple(row["rounds"] for pair in parts for row in pair), of, paired=True,
                           confidence=0.95, resamples=resamples)
    return widened({"value": value, "low": low, "high": high, "n": n, "processes": 1, **flags}, odds=True)


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _logits(values: list[float]) -> list[float]:
    return [_logit(v) for v in values]


def _expit(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def relative_spread(interval: dict) -> float:
    """Half the interval's width relative to its value (inf when there is no interval)."""
    if interval.get("low") is None or interval.get("high") is None or not interval["value"]:
        return math.inf
    return (interval["high"] - interval["low"]) / (2 * abs(interval["value"]))


def is_wide(interval: dict, tolerance: float = NOISE_TOLERANCE) -> bool:
    """An interval wider than ±``tolerance`` of its value (or none at all): the value is a rough one, printed
    ``(low–high, wide)`` and read as its range; a bound its whole interval clears is still decided (``decide``)."""
    return relative_spread(interval) > tolerance


def is_disturbed(interval: dict) -> bool:
    """Measured while other programs held more than ``CONTENTION_LIMIT`` of the machine, or while its speed
    drifted (``drifted``): the value itself may be off, not only spread, and its interval is widened for it
    (``widened``). Printed ``(low–high, noisy)``; a claim is still decided on its widened interval (``decide``)."""
    return contended(interval.get("contention")) or bool(interval.get("drifted"))


def is_noisy(interval: dict, tolerance: float = NOISE_TOLERANCE) -> bool:
    """Too uncertain to print without a word: wide (``is_wide``) or disturbed (``is_disturbed``)."""
    return is_wide(interval, tolerance) or is_disturbed(interval)


def decide(interval: dict, relation: str, threshold: float) -> bool | None:
    """Does ``value <relation> threshold`` hold for the whole interval? True, False, or None (undecided).

    True only when the whole interval is on the right side, False only when all of it is on the wrong side:
    noise never decides a claim, and a measurement with no interval decides nothing. A busy or drifting machine
    widens the interval (``widened``, where ratios and shares are made), so it can leave a claim undecided but
    never vetoes one whose interval, widened, lies past its bound.
    """
    if relation not in (">", "<"):
        raise ValueError(f"relation must be '>' or '<', got {relation!r}")
    low, high = interval.get("low"), interval.get("high")
    if low is None or high is None:
        return None
    if relation == ">":
        return True if low > threshold else False if high <= threshold else None
    return True if high < threshold else False if low >= threshold else None


# ---------------------------------------------------------------------------------------------------------
# Drift: a fixed reference workload timed at the start and the end of every round. A machine whose speed shifts
# (another tenant, a frequency change, memory pressure) shows it there, whatever the functions being timed do.

# A round *drifted* when its reference took more than this much longer or shorter than the median reference of
# the whole measurement, or its two references (start and end of the round) differ by more than it.
DRIFT_LIMIT = 0.15
_REFERENCE_ROWS = 256


def reference_workload() -> Callable[[], Any]:
    """The same small piece of work every time: Python calls, small tensors and a copy, like a loader's epoch."""
    rows = [torch.full((4,), float(i)) for i in range(_REFERENCE_ROWS)]

    def work() -> None:
        torch.stack([row * 2 for row in rows]).sum()

    return work


def time_reference(work: Callable[[], Any], number: int | None = None, blocks: int = 5,
                   timer: Callable[[], float] | None = None) -> tuple[float, int]:
    """Seconds per call of the reference ``work``: the fastest of ``blocks`` blocks of ``number`` calls, with the
    garbage collector held off (the reference probes the machine's speed, not the collector), and the block size,
    to reuse. On first use the block is sized to about 2 ms from three calls after a warm-up one. The fastest block
    is robust to one interruption and still moves when the whole machine slows down."""
    timer = timer or time.perf_counter
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if number is None:
            work()
            calls = []
            for _ in range(3):
                start = timer()
                work()
                calls.append(timer() - start)
            number = max(1, int(0.002 / max(statistics.median(calls), 1e-9)))
        times = []
        for _ in range(blocks):
            start = timer()
            for _ in range(number):
                work()
            times.append((timer() - start) / number)
    finally:
        if was_enabled:
            gc.enable()
    return significant(min(times)), number


def drifted(references: list[tuple[float, float]], limit: float = DRIFT_LIMIT) -> list[bool]:
    """For each round's (start, end) reference times: did the machine's speed move more than ``limit``?"""
    if not references:
        return []
    typical = statistics.median(value for pair in references for value in pair)
    bound = math.log1p(limit)

    def off(a: float, b: float) -> bool:
        return a <= 0 or b <= 0 or abs(math.log(a / b)) > bound

    return [off(start, typical) or off(end, typical) or off(start, end) for start, end in references]


def interleaved(functions: dict[str, Callable[[], Any]], *, rounds: int, min_run_time: float,
                block_time: float = 0.02, repeats: int = 3, device: torch.device | None = None,
                kind: str = "cpu") -> dict[str, dict]:
    """Time several functions in alternation, so that a slow moment on a shared machine hits them all.

    Each round runs ``measure`` on every function in turn, the order rotated by one each round (warmed up in the
    first round only; later rounds keep its block size), between two timings of a fixed reference workload (``reference_workload``). A function's
    ``median`` is the median of its rounds' medians, its ``mean`` the mean of its rounds' means, its ``iqr`` the
    median of its rounds' IQRs, and ``rounds`` keeps the medians of the rounds, from which ``ratio`` computes
    paired intervals. The number of rounds is fixed in advance: it never depends on what was measured.

    A round is left out when its reference drifted (``drifted``: ``drift_rounds_left_out``) or other programs held
    more than ``CONTENTION_LIMIT`` of the machine meanwhile (``busy_rounds_left_out``), as long as three rounds
    (or all, if fewer were asked for) remain; otherwise every round is kept and the timing is marked ``drifted``
    or contended, which ``is_noisy`` reads. ``reference`` keeps each round's (start, end) reference times and
    ``contention`` is the share during the rounds kept.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    timings: dict[str, list[dict]] = {name: [] for name in functions}
    shares: list[float | None] = []  # other programs' share of the machine during each round
    references: list[tuple[float, float]] = []
    reference = reference_workload()
    reference_number: int | None = None

    timer_fn = clock(device, kind)

    def timed_reference() -> float:
        nonlocal reference_number
        seconds, reference_number = time_reference(reference, reference_number, timer=timer_fn)
        return seconds

    whole = cpu_snapshot(timer_fn)
    for _ in range(rounds):
        before = cpu_snapshot(timer_fn)
        start = timed_reference()
        names = list(functions)
        shift = len(timings[names[0]]) % len(names)  # each round starts with another function: no function always
        for name in names[shift:] + names[:shift]:  # follows the same one (and pays for the garbage it left)
            fn = functions[name]
            known = timings[name][0].get("number") if timings[name] else None
            timings[name].append(measure(fn, repeats=repeats, min_run_time=min_run_time / rounds,
                                         block_time=block_time, device=device, number=known, kind=kind))
        references.append((start, timed_reference()))
        shares.append(contention(before, cpu_snapshot(timer_fn)))

    enough = min(rounds, 3)
    moved = drifted(references)
    steady = [i for i in range(rounds) if not moved[i]]
    drift = len(steady) < enough
    used = list(range(rounds)) if drift else steady
    quiet = [i for i in used if not contended(shares[i])]
    if len(quiet) >= enough:
        busy_left_out, used = len(used) - len(quiet), quiet
    else:
        busy_left_out = 0
    known = [shares[i] for i in used if shares[i] is not None]
    # Rounds too short to judge one by one are judged together (their whole time).
    share = statistics.fmean(known) if known else contention(whole, cpu_snapshot(timer_fn))
    out = {}
    for name, all_rows in timings.items():
        rows = [all_rows[i] for i in used]
        out[name] = {"median": significant(statistics.median(t["median"] for t in rows)),
                     "mean": significant(statistics.fmean(t.get("mean", t["median"]) for t in rows)),
                     "iqr": significant(statistics.median(t["iqr"] for t in rows)),
                     "min": min(t["min"] for t in rows), "max": max(t["max"] for t in rows),
                     "blocks": sum(t["blocks"] for t in rows), "runs": sum(t["runs"] for t in rows),
                     "rounds": [t["median"] for t in rows], "contention": share,
                     "busy_rounds_left_out": busy_left_out,
                     "drift_rounds_left_out": 0 if drift else rounds - len(steady), "drifted": drift,
                     "reference": [list(pair) for pair in references]}
    return out


# ---------------------------------------------------------------------------------------------------------
# Fresh processes: a process differs from the next (address-space layout, hash seed, allocator state, where its
# memory lands), so the spread inside one understates the spread between rebuilds. A timing experiment runs in
# several fresh processes (the runner does that: ``snippets.lab.replicas``); ``pooled`` joins their results, and
# ``ratio`` computes its interval from the spread between them.

TIMING_FIELDS = ("median", "mean", "iqr", "min", "max", "blocks", "runs", "rounds", "samples", "number",
                 "contention", "busy_rounds_left_out", "drift_rounds_left_out", "drifted", "reference")


def is_timing(node: Any) -> bool:
    """A timing as ``measure`` or ``interleaved`` returns it (with the fields a result keeps of it)."""
    return (isinstance(node, dict) and isinstance(node.get("median"), (int, float))
            and isinstance(node.get("rounds", node.get("samples")), list) and "processes" not in node)


class PoolError(ValueError):
    """The fresh processes' results of one experiment do not have the same shape."""


def pooled(values: list[Any], where: str = "result") -> Any:
    """One result from the same experiment's results in several fresh processes.

    Every timing (``is_timing``) becomes one timing with ``processes``: each process's own timing, from which
    ``ratio`` computes between-process intervals; its ``median`` is the median of the processes' medians, its
    ``mean`` the mean of their means, its ``rounds`` all their rounds. Any other number is the median over the
    processes; text, flags and structure must agree (a list whose items differ in anything but numbers is taken
    whole from the first process, so its numbers stay together). Raises ``PoolError`` naming the first place
    where the results differ in shape.
    """
    first = values[0]
    if len(values) == 1:
        return first
    if all(is_timing(v) for v in values):
        return _pooled_timing(values)
    if isinstance(first, bool) or first is None or isinstance(first, str):
        if any(v != first for v in values):
            if isinstance(first, str) and all(isinstance(v, str) for v in values):
                return first  # e.g. an error message with an address in it: the first process's words
            raise PoolError(f"{where}: the processes measured {values[0]!r} and {next(v for v in values if v != first)!r}")
        return first
    if isinstance(first, (int, float)):
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise PoolError(f"{where}: a number in one process, {type(values[1]).__name__} in another")
        middle = statistics.median(values)
        return middle if isinstance(first, float) or middle != int(middle) else int(middle)
    if isinstance(first, dict):
        keys = list(first)
        if any(not isinstance(v, dict) or list(v) != keys for v in values):
            raise PoolError(f"{where}: the processes' results have different keys")
        return {key: pooled([v[key] for v in values], f"{where}[{key!r}]") for key in keys}
    if isinstance(first, list):
        if any(not isinstance(v, list) or len(v) != len(first) for v in values):
            return first if all(isinstance(v, list) for v in values) else _shape_error(where)
        if all(_same_but_numbers(first, v) for v in values[1:]):
            return [pooled([v[i] for v in values], f"{where}[{i}]") for i in range(len(first))]
        return first
    raise PoolError(f"{where}: cannot join values of type {type(first).__name__}")


def _shape_error(where: str) -> Any:
    raise PoolError(f"{where}: a list in one process, something else in another")


def _same_but_numbers(a: Any, b: Any) -> bool:
    if is_timing(a) and is_timing(b):  # two processes' timings of the same thing: their labels must agree
        return _same_but_numbers({k: v for k, v in a.items() if k not in TIMING_FIELDS},
                                 {k: v for k, v in b.items() if k not in TIMING_FIELDS})
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same_but_numbers(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same_but_numbers(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return isinstance(b, (int, float)) and not isinstance(b, bool)
    return type(a) is type(b) and a == b


def _pooled_timing(rows: list[dict]) -> dict:
    first = rows[0]
    out = {key: value for key, value in first.items() if key not in TIMING_FIELDS}
    for key in [k for k in first if k not in TIMING_FIELDS]:
        out[key] = pooled([row.get(key) for row in rows], key)
    shares = [row["contention"] for row in rows if row.get("contention") is not None]
    out.update({
        "median": significant(statistics.median(row["median"] for row in rows)),
        "mean": significant(statistics.fmean(row.get("mean", row["median"]) for row in rows)),
        "min": min(row.get("min", row["median"]) for row in rows),
        "max": max(row.get("max", row["median"]) for row in rows),
        "blocks": sum(row.get("blocks", 0) for row in rows), "runs": sum(row.get("runs", 0) for row in rows),
        "contention": max(shares) if shares else None,
        # too few steady processes for an interval without them (``ratio`` leaves drifted ones out)
        "drifted": sum(not row.get("drifted", False) for row in rows) < min(3, len(rows)),
        "busy_rounds_left_out": sum(row.get("busy_rounds_left_out", 0) for row in rows),
        "drift_rounds_left_out": sum(row.get("drift_rounds_left_out", 0) for row in rows),
        "processes": [{key: row[key] for key in TIMING_FIELDS if key in row} for row in rows],
    })
    if all(row.get("rounds") for row in rows):
        out["rounds"] = [value for row in rows for value in row["rounds"]]
    if "iqr" in first:
        out["iqr"] = significant(statistics.median(row["iqr"] for row in rows))
    return out
