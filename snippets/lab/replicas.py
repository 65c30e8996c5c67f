"""Timing experiments measured in several separate processes, as pyperf measures a benchmark in many.

One process differs from the next (address-space layout, hash seed, allocator state, where its memory lands),
so the spread inside the build's one process understates what a rebuild gets. A timing experiment therefore runs
once in each of ``processes()`` worker processes, started from this interpreter the first time one is needed
and reused, one after another, for every timing experiment of the build (pyperf, unlike this, starts a new
process for every run); the results are joined by
``timing.pooled``, and every ratio's interval is computed from the spread between the processes
(``timing.ratio``). While they time, the workers run nothing at the same time: one measures while the others
wait. Experiments that time nothing then run in the same workers side by side, one per core (``side_by_side``).

A worker refuses to run code other than the build's: it checks that the experiment it imported has the digest
the build computed (``code.reach``), and is restarted when it does not (the page being served was edited).

``PITFALLS_PROCESSES`` sets the number of processes (default ``DEFAULT_PROCESSES``); 1 times in the build's own
process, and the page then says that its intervals cover one process only.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import subprocess
import sys
from typing import Any, Callable

log = logging.getLogger("mkdocs.plugins.pitfalls")

PROCESSES_ENV = "PITFALLS_PROCESSES"
DEFAULT_PROCESSES = 3
MAX_PROCESSES = 32


class ReplicaError(RuntimeError):
    """A worker process could not measure an experiment."""


def processes() -> int:
    """How many fresh processes a timing experiment is measured in (``PITFALLS_PROCESSES``)."""
    raw = os.environ.get(PROCESSES_ENV, "").strip()
    if not raw:
        return DEFAULT_PROCESSES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_PROCESSES:
        raise ReplicaError(f"{PROCESSES_ENV}={raw!r}: give a whole number of processes from 1 to {MAX_PROCESSES} "
                           f"(1 times in the build's own process, {DEFAULT_PROCESSES} by default)")
    return value


class _Worker:
    """One fresh interpreter running ``serve``: a JSON line in, a JSON line out (started with ``-c``, so that
    this module is never loaded a second time as ``__main__``)."""

    def __init__(self) -> None:
        from .store import PROJECT_ROOT

        # the build's import path, so that the worker imports the same modules from the same files
        path = os.pathsep.join(entry or os.getcwd() for entry in sys.path)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
        env.pop("PYTHONHASHSEED", None)  # each process its own hash seed, as a fresh run gets
        self.process = subprocess.Popen([sys.executable, "-c", "from snippets.lab.replicas import serve; serve()"],
                                        cwd=PROJECT_ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, encoding="utf-8")

    def ask(self, request: dict) -> dict:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError) as error:
            raise ReplicaError(f"the worker process ended ({error})") from None
        if not line:
            code = self.process.wait(timeout=30)
            raise ReplicaError(f"the worker process ended with exit code {code} (its error is in the log above)")
        return json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()


_workers: list[_Worker] = []  # a resource of this interpreter, like an open file: not build state


@atexit.register
def close_all() -> None:
    """Stop every worker process (at exit, and when the dev server purges its modules)."""
    while _workers:
        _workers.pop().close()


def _worker(index: int) -> _Worker:
    while len(_workers) <= index:
        _workers.append(_Worker())
    if _workers[index].process.poll() is not None:  # it died: a fresh one
        _workers[index] = _Worker()
    return _workers[index]


def _request(exp: Any, params: dict, digest: str) -> dict:
    # the build's import path as it is now (a worker started earlier may have another): the same modules, same files
    return {"module": exp.func.__module__, "function": exp.func.__name__, "params": params, "digest": digest,
            "path": [entry or os.getcwd() for entry in sys.path]}


def _ask(index: int, count: int, request: dict, fingerprint: dict) -> Any:
    """The value worker ``index`` measured for ``request``: a worker holding older code is replaced once; an error,
    other code or another environment raise ``ReplicaError``."""
    reply = _worker(index).ask(request)
    if reply.get("stale"):  # the worker imported older code: a fresh process imports today's
        _workers[index].close()
        _workers[index] = _Worker()
        reply = _workers[index].ask(request)
    if "error" in reply:
        raise ReplicaError(f"in process {index + 1} of {count}: {reply['error']}")
    if reply.get("stale"):
        raise ReplicaError(f"process {index + 1} of {count} imports code other than this build's "
                           f"({reply['stale']}): is a file being edited while the build runs?")
    if reply["fingerprint"] != fingerprint:
        raise ReplicaError(f"process {index + 1} of {count} runs in another environment than this build "
                           f"({reply['fingerprint']} against {fingerprint})")
    return reply["value"]


def _joined(values: list[Any], count: int) -> dict:
    from . import timing

    try:
        value = timing.pooled(values)
    except timing.PoolError as error:
        raise ReplicaError(f"the {count} processes' results cannot be joined: {error}") from None
    value["processes"] = count
    return value


def measure(exp: Any, params: dict, digest: str, fingerprint: dict) -> dict:
    """``exp(**params)`` measured once in each of ``processes()`` worker processes, joined (``timing.pooled``); the
    result's ``processes`` says how many. ``digest`` and ``fingerprint`` are the build's: a worker whose code or
    environment differs is restarted once, then refused."""
    if processes() == 1:
        from .environment import experiment_threads

        with experiment_threads():
            value = exp.func(**params)
        if isinstance(value, dict):
            value = {**value, "processes": 1}
        return value
    [(value, _)] = measure_many([(exp, params, digest)], fingerprint)
    if isinstance(value, Exception):
        raise value
    return value


def measure_many(wanted: list[tuple[Any, dict, str]], fingerprint: dict) -> list[tuple[dict | Exception, float]]:
    """Several experiments ``(exp, params, digest)``, each measured in every worker process, the processes taking
    turns: process 1 measures each experiment, then process 2 each, and so on. One experiment's processes are then
    spread over the whole pass, minutes apart, instead of running back to back: the machine's state drifts over
    minutes (other tenants, frequency, where memory lands), and processes measured back to back share it, so their
    spread would understate what the next build sees. Returns, per experiment, its joined value (or the error that
    stopped it) and the seconds its measurements took."""
    import time

    count = processes()
    values: list[list[Any]] = [[] for _ in wanted]
    failed: list[Exception | None] = [None] * len(wanted)
    seconds = [0.0] * len(wanted)
    for index in range(count):
        for i, (exp, params, digest) in enumerate(wanted):
            if failed[i] is not None:
                continue
            log.info("pitfalls: timing, process %d of %d: %s", index + 1, count, exp.name)
            start = time.perf_counter()
            try:
                values[i].append(_ask(index, count, _request(exp, params, digest), fingerprint))
            except ReplicaError as error:
                failed[i] = error
            seconds[i] += time.perf_counter() - start
    out: list[tuple[dict | Exception, float]] = []
    for i in range(len(wanted)):
        if failed[i] is not None:
            out.append((failed[i], seconds[i]))
            continue
        try:
            out.append((_joined(values[i], count), seconds[i]))
        except ReplicaError as error:
            out.append((error, seconds[i]))
    return out


MAX_SIDE_BY_SIDE = 4  # each worker holds its own torch (and, on a GPU, its own CUDA context)
BUSY_WINDOW_S = 0.5  # how long the machine's load is read before the experiments that time nothing start


def _usable() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cores() -> int:
    """How many experiments that time nothing run at once on a quiet machine: one per core this process may use, at
    most ``MAX_SIDE_BY_SIDE``."""
    return max(1, min(_usable(), MAX_SIDE_BY_SIDE))


def others_busy(window: float = BUSY_WINDOW_S) -> float:
    """How many cores other programs kept busy over ``window`` seconds: the machine's busy CPU time less this
    process's and its children's, running or ended (``timing.cpu_snapshot``), so that the build's own work (a
    timing process ending, a kernel starting) never reads as another program's. 0 where psutil cannot read it."""
    import time

    from . import timing

    before = timing.cpu_snapshot()
    time.sleep(window)
    after = timing.cpu_snapshot()
    if before is None or after is None or after[0] <= before[0]:
        return 0.0
    return max(0.0, (after[1] - before[1]) - (after[3] - before[3])) / (after[0] - before[0])


def free_cores() -> tuple[int, float]:
    """How many experiments that time nothing run at once now, and how many cores other programs keep busy: one
    experiment per core (``cores()``) those programs leave free (``others_busy``), at least one. Beside programs
    that hold the cores, fewer at a time each get a larger share of a core, where all of them at once would each
    wait their turn for one: no experiment slows down by more than the machine's load."""
    busy = others_busy()
    # a core counts as taken once others use more than three quarters of one
    return max(1, min(cores(), _usable() - int(busy + 0.25))), busy


def side_by_side(wanted: list[tuple[Any, dict, str]], fingerprint: dict,
                 expected: list[float], beside: list[tuple[str, Callable[[], None]]] = ()
                 ) -> list[tuple[dict | Exception, float]]:
    """Experiments ``(exp, params, digest)`` that time nothing, each run once in a worker process, ``free_cores()`` of
    them at a time (each with one thread: ``environment.experiment_threads``), the longest ``expected`` first. Each
    job of ``beside`` (``(label, run)``: a notebook's execution, in a kernel of its own) takes a core the same way,
    started before the experiments; its error is logged, and its caller finds its work undone. Returns, in the
    order given, each experiment's value (or the error that stopped it) and the seconds it took."""
    import contextvars
    import time
    from concurrent.futures import ThreadPoolExecutor
    from queue import SimpleQueue

    count, busy = free_cores()
    quiet = cores()
    free: SimpleQueue[int] = SimpleQueue()
    for index in range(count):
        if wanted:  # notebooks alone need no worker
            _worker(index)  # started here, one by one, not by the threads at once
        free.put(index)
    log.info("pitfalls: running %d experiments%s side by side, %d at a time%s", len(wanted),
             f" and {len(beside)} notebooks" if beside else "", count,
             f" (other programs keep {busy:.1f} of {quiet} cores busy)" if count < quiet else "")

    def one(item: tuple[Any, dict, str]) -> tuple[dict | Exception, float]:
        exp, params, digest = item
        index = free.get()
        log.info("pitfalls: running %s(%s)", exp.name, ", ".join(f"{k}={v!r}" for k, v in params.items()))
        start = time.perf_counter()
        try:
            value: dict | Exception = _ask(index, count, _request(exp, params, digest), fingerprint)
        except ReplicaError as error:
            value = error
        finally:
            free.put(index)
        elapsed = time.perf_counter() - start
        log.info("pitfalls: %s done in %.1f s", exp.name, elapsed)
        return value, elapsed

    def job(label: str, run: Callable[[], None]) -> None:
        index = free.get()
        start = time.perf_counter()
        try:
            run()
            log.info("pitfalls: %s done in %.1f s", label, time.perf_counter() - start)
        except Exception as error:  # noqa: BLE001 - its page does the work again, and reports what fails
            log.info("pitfalls: %s failed beside the experiments (%s: %s); its page does it again", label,
                     type(error).__name__, error)
        finally:
            free.put(index)

    order = sorted(range(len(wanted)), key=lambda i: -expected[i])
    with ThreadPoolExecutor(max_workers=count) as pool:  # each job in a copy of this context: the build's
        for label, run in beside:
            pool.submit(contextvars.copy_context().run, job, label, run)
        futures = {i: pool.submit(contextvars.copy_context().run, one, wanted[i]) for i in order}
    return [futures[i].result() for i in range(len(wanted))]


def answer(request: dict) -> dict:
    """What a worker replies to one request: the experiment's value (with this process's environment fingerprint
    and id), ``stale`` when the code it imports is not the build's (its digest), or the error it raised."""
    import importlib

    from . import code, environment

    try:
        for entry in reversed(request.get("path", ())):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        importlib.invalidate_caches()
        exp = getattr(importlib.import_module(request["module"]), request["function"])
        digest = code.reach(exp.func).digest
        if digest != request["digest"]:
            return {"stale": f"digest {digest[:12]}, the build's {request['digest'][:12]}"}
        with environment.experiment_threads():
            value = json.loads(json.dumps(exp.func(**request["params"])))
        return {"value": value, "fingerprint": environment.fingerprint(), "pid": os.getpid()}
    except Exception as error:  # noqa: BLE001 - reported to the build, which names the experiment
        return {"error": f"{type(error).__name__}: {error}"}


def serve() -> None:
    """The worker's loop: one request per line on stdin, one reply (``answer``) per line on the real stdout
    (anything the experiment prints goes to stderr, the build's log)."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    for line in sys.stdin:
        replies.write(json.dumps(answer(json.loads(line))) + "\n")
