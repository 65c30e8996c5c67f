"""The on-disk result cache and ``run``, the one way pages call an experiment.

A result is keyed by the code of the experiment and of every function, class and value of the project it reaches
(``code.reach``: exactly what its code panel shows), by its parameters, and by the environment fingerprint. A hit
returns the stored JSON; a miss runs the experiment and stores the result atomically. ``REFRESH=1``
re-runs every experiment (once per process), ``REFRESH=nontiming`` only those not marked ``timing=True``.
A corrupt entry is recomputed with a warning.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from . import code, context, environment, replicas, store
from .i18n import t

log = logging.getLogger("mkdocs.plugins.pitfalls")

FORMAT_VERSION = 1


class ExperimentError(RuntimeError):
    """An experiment could not produce its result: bad parameters, or it raised."""


@dataclass(frozen=True)
class Experiment:
    func: Callable[..., dict]
    name: str
    # Depends on wall-clock time: measured in several fresh processes (``replicas``), alone on the machine, its
    # intervals from the spread between them.
    timing: bool

    def __call__(self, **params: Any) -> dict:
        return self.func(**params)


def experiment(*, timing: bool = False) -> Callable[[Callable[..., dict]], Experiment]:
    """Mark a function as an experiment. ``timing=True`` marks results that depend on wall-clock time; those are
    measured in several fresh processes (``replicas``), alone on the machine."""

    def wrap(func: Callable[..., dict]) -> Experiment:
        code.remember_source(func.__module__)
        return Experiment(func=func, name=experiment_name(func), timing=timing)

    return wrap


def experiment_name(func: Callable) -> str:
    """``<page>.<function>``: ``snippets.experiments.loader.measure.question_timing`` is ``loader.question_timing``."""
    parts = [part for part in func.__module__.removeprefix("snippets.experiments.").split(".") if part != "measure"]
    return ".".join([*parts, func.__name__])


@dataclass
class Result:
    """What ``run`` returns: the experiment's JSON value and where it came from."""

    value: dict
    experiment: str
    params: dict
    fingerprint: dict
    computed_at: str
    elapsed_s: float
    timing: bool
    cached: bool = field(default=False)
    # The recorded machine it comes from, when make serve shows a recording until this machine has measured it
    recorded_on: str | None = field(default=None)
    # The experiment that produced it (not stored): the code panel shows its source.
    exp: Experiment | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, key: str) -> Any:
        return self.value[key]

    @property
    def stamp(self) -> str:
        return environment.stamp(self.fingerprint, self.computed_at)

    @property
    def here(self) -> bool:
        """Measured by this machine (not a recording shown while make serve measures it)."""
        return self.recorded_on is None


def source_digest(func: Callable) -> str:
    """What keys ``func``'s results: the digest of its code and of everything of the project it reaches
    (``code.reach``), exactly what its code panel shows."""
    return code.reach(func).digest


def find_experiment(name: str) -> Experiment | None:
    """The experiment called ``name`` (``loader.question_timing``), imported from its page package; None if there
    is no such experiment any more."""
    import importlib

    page, _, function = name.rpartition(".")
    try:
        module = importlib.import_module(f"snippets.experiments.{page}.measure")
    except ImportError:
        return None
    found = getattr(module, function, None)
    return found if isinstance(found, Experiment) else None


def _bind(exp: Experiment, params: dict) -> dict:
    signature = inspect.signature(exp.func)
    unknown = sorted(set(params) - set(signature.parameters))
    if unknown:
        accepted = ", ".join(signature.parameters) or "none"
        raise ExperimentError(
            f"{_where()}experiment {exp.name!r} got unknown parameter(s) {', '.join(unknown)}; "
            f"it accepts: {accepted}"
        )
    bound = signature.bind(**params)
    bound.apply_defaults()
    return dict(bound.arguments)


def _where() -> str:
    page = context.current().page
    return f"[page {page}] " if page else ""


def cache_key(exp: Experiment, params: dict, fp: dict) -> str:
    material = json.dumps(
        {
            "format": FORMAT_VERSION,
            "experiment": exp.name,
            "source": source_digest(exp.func),
            "params": params,
            "fingerprint": fp,
            # how many fresh processes measured it: a result of one process is not one of five
            **({"processes": replicas.processes()} if exp.timing else {}),
        },
        sort_keys=True,
        default=repr,
    )
    return hashlib.sha256(material.encode()).hexdigest()


_REFRESH_WORDS = {"": "none", "0": "none", "no": "none", "false": "none", "off": "none",
                  "1": "all", "all": "all", "yes": "all", "true": "all", "on": "all",
                  "nontiming": "nontiming", "timing": "timing"}


def refresh_mode() -> str:
    """``REFRESH`` read once for the whole build: ``"none"``, ``"all"``, ``"nontiming"`` or ``"timing"``.

    The result cache and the notebook cache (in the site's MkDocs plugin) both use it, so they never disagree.
    """
    raw = os.environ.get("REFRESH", "")
    try:
        return _REFRESH_WORDS[raw.strip().lower()]
    except KeyError:
        raise ExperimentError(
            f"REFRESH={raw!r} is not understood; use REFRESH=1 (re-run every experiment and notebook), "
            f"REFRESH=timing (only experiments that measure time), REFRESH=nontiming (only those that do not) "
            f"or leave it unset"
        ) from None


def _wants_refresh(exp: Experiment) -> bool:
    mode = refresh_mode()
    if mode == "nontiming":
        return not exp.timing
    if mode == "timing":
        return exp.timing
    return mode == "all"


def from_recording(rec: store.Recording, exp: Experiment, params: dict) -> tuple[Result | None, str]:
    """``exp(**params)`` as recorded machine ``rec`` measured it with today's code, or None and why not ("not
    recorded", "stale: …")."""
    entry = rec.entry(exp.name, params)
    if entry is None:
        return None, t("not recorded on {label}", label=rec.label)
    if entry["source"] != source_digest(exp.func):
        return None, t("recorded on {label} with an older version of this experiment (commit {commit}, {date}); "
                       "re-record it with make record MACHINE={label}", label=rec.label, commit=rec.commit[:12],
                       date=rec.manifest["recorded_at"][:10])
    return Result(entry["value"], exp.name, entry["params"], rec.fingerprint, entry["computed_at"],
                  entry["elapsed_s"], exp.timing, cached=True, exp=exp), ""


def _frozen_result(exp: Experiment, params: dict) -> Result:
    """What ``run`` returns in a frozen build: the leading machine's recording, never a computation."""
    result, why = from_recording(store.primary(find_experiment), exp, params)
    if result is None:
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        page = context.current().page
        where = f"page docs/{page}: " if page else ""
        raise ExperimentError(f"FROZEN=1: {where}experiment {exp.name}({shown}) is {why}; a frozen build "
                              f"runs nothing")
    return result


def _recorded_instead(exp: Experiment, params: dict) -> Result | None:
    """While ``make serve`` measures this machine (``store.deferred``): the leading recorded machine's result of
    ``exp(**params)``, marked as recorded there, and noted as pending in the build; None when no recording holds
    it for today's code (it is then measured here, now)."""
    try:
        lead = store.primary(find_experiment)
    except store.ArchiveError:
        return None
    result, _ = from_recording(lead, exp, params)
    if result is None:
        return None
    result.recorded_on = lead.label
    build = context.current()
    build.pending.setdefault(build.page, {})[exp.name] = result.elapsed_s
    return result


def run(exp: Experiment, /, **params: Any) -> Result:
    """Return ``exp(**params)`` from the store, computing and storing it on a miss.

    In a normal build the store is this machine's cache; with ``FROZEN=1`` it is the leading recorded machine,
    and nothing is computed. While ``make record`` runs, a result the recording being replaced holds for
    today's code is carried over, and anything else is measured afresh."""
    if not isinstance(exp, Experiment):
        raise ExperimentError(f"{_where()}{exp!r} is not an experiment (decorate it with @experiment())")
    params = _bind(exp, params)
    build = context.current()
    build.ran_on(exp.name)
    if store.frozen():  # FROZEN=1: the recorded machines' results, never a computation
        return _frozen_result(exp, params)
    fp = environment.fingerprint()
    key = cache_key(exp, params, fp)
    recording = store.writer(find_experiment)
    entry, fresh, refresh = _known(exp, params, key, recording)
    if entry is not None:
        return Result(entry["value"], exp.name, params, fp, entry["computed_at"], entry["elapsed_s"],
                      exp.timing, cached=not fresh, exp=exp)
    if store.deferred() and not refresh and recording is None:
        shown_instead = _recorded_instead(exp, params)
        if shown_instead is not None:
            return shown_instead

    shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
    log.info("pitfalls: running %s(%s)", exp.name, shown)
    start = time.perf_counter()
    try:
        if exp.timing:
            value = replicas.measure(exp, params, source_digest(exp.func), fp)
        else:
            with environment.experiment_threads():
                value = exp.func(**params)
    except Exception as error:
        raise ExperimentError(
            f"{_where()}experiment {exp.name}({shown}) raised {type(error).__name__}: {error}"
        ) from error
    elapsed = time.perf_counter() - start
    value, computed_at = _stored(exp, params, fp, key, value, elapsed, refresh=refresh, recording=recording)
    log.info("pitfalls: %s done in %.1f s", exp.name, elapsed)
    return Result(value, exp.name, params, fp, computed_at, elapsed, exp.timing, cached=False, exp=exp)


def _known(exp: Experiment, params: dict, key: str, recording: store.Writer | None) -> tuple[dict | None, bool, bool]:
    """What this build already has for ``exp(**params)`` (keyed ``key``): the entry, or None when it must be
    measured; whether this build measured it (``prefetch``, before its pages); and whether a measurement refreshes
    it (``REFRESH``, or a recording being made)."""
    build = context.current()
    if recording is not None and refresh_mode() != "all":
        entry = recording.reuse(exp.name, source_digest(exp.func), params)
        if entry is not None:  # recorded by today's code: carried over, not measured again
            return entry, False, False
    # a recording measures what it records now, once per process
    refresh = (_wants_refresh(exp) or recording is not None) and key not in build.refreshed
    entry = None if refresh else store.local().get(exp.name, key)
    # from the cache, or measured by prefetch() in this build before its pages
    return entry, entry is not None and key in build.measured_before_pages, refresh


def _stored(exp: Experiment, params: dict, fp: dict, key: str, value: Any, elapsed: float, *, refresh: bool,
            recording: store.Writer | None) -> tuple[dict, str]:
    """A fresh value checked (a JSON dict), stored in this machine's cache and in the recording being made; returns
    it as a later cache hit reads it, and when it was computed."""
    if not isinstance(value, dict):
        raise ExperimentError(f"{_where()}experiment {exp.name} returned {type(value).__name__}, not a dict")
    try:
        # What a later cache hit returns (tuples become lists, keys strings), so a page renders the same either way.
        value = json.loads(json.dumps(value))
    except (TypeError, ValueError) as error:
        raise ExperimentError(f"{_where()}experiment {exp.name} returned a value that is not JSON: {error}") from None
    computed_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    entry = {"key": key, "experiment": exp.name, "params": params, "fingerprint": fp,
             "computed_at": computed_at, "elapsed_s": elapsed, "value": value}
    store.local().put(exp.name, key, entry)
    if refresh:
        context.current().refreshed.add(key)
    if recording is not None:  # into the recording being made by make record
        recording.keep({"experiment": exp.name, "params": params, "source": source_digest(exp.func),
                        "computed_at": computed_at, "elapsed_s": round(elapsed, 3), "value": value})
    return value, computed_at


def topics() -> list[str]:
    """The topics: the packages under ``snippets/experiments/``, found there (the lab names none of them)."""
    import pkgutil

    from snippets import experiments

    return sorted(info.name for info in pkgutil.iter_modules(experiments.__path__) if info.ispkg)


def topic_modules(module: str) -> dict[str, Any]:
    """Each topic's ``module`` (``measure``, ``checks``), by topic, for the topics that have one."""
    import importlib

    found = {}
    for topic in topics():
        try:
            found[topic] = importlib.import_module(f"snippets.experiments.{topic}.{module}")
        except ModuleNotFoundError as error:
            if error.name != f"snippets.experiments.{topic}.{module}":
                raise
    return found


def page_experiments() -> list[Experiment]:
    """Every experiment of every page package (``snippets/experiments/<page>/measure.py``), in file order."""
    return [value for module in topic_modules("measure").values() for value in vars(module).values()
            if isinstance(value, Experiment)]


def prefetch(names: set[str] | None = None, beside: list[tuple[str, Callable[[], None]]] = ()) -> list[str]:
    """Measure, before any page asks, every experiment of the pages' (of those called ``names``, when given: those
    of the topics the build's pages name in their front matter) that this build would measure with its default
    parameters (not in the cache, or
    refreshed; not carried over by ``make record``). First the timing experiments, alone on the machine, in one
    pass in which their processes take turns (``replicas.measure_many``): each experiment's processes are then
    spread over the whole pass instead of running back to back. Then the others, side by side, one per core
    (``replicas.side_by_side``), with the jobs of ``beside`` (the build's notebook executions) taking cores beside
    them. A page's ``run`` then finds each result in the cache, marked as measured by this
    build. An experiment that fails here is left to its page, which reports it. Returns the names measured.
    Nothing happens in a frozen build or while ``make serve`` shows recordings; with one process, the timing
    experiments are left to their pages."""
    if store.frozen() or store.deferred():
        return []
    build = context.current()
    fp = environment.fingerprint()
    recording = store.writer(find_experiment)
    timed, others = [], []
    for exp in page_experiments():
        if names is not None and exp.name not in names:
            continue
        params = _bind(exp, {})
        key = cache_key(exp, params, fp)
        entry, _, refresh = _known(exp, params, key, recording)
        if entry is None and not (exp.timing and replicas.processes() == 1):
            (timed if exp.timing else others).append((exp, params, key, refresh))
    measured = []
    if timed:
        log.info("pitfalls: measuring %d timing experiments, the processes taking turns", len(timed))
        measured += zip(timed, replicas.measure_many([(exp, params, source_digest(exp.func))
                                                      for exp, params, _, _ in timed], fp))
    if others or beside:
        expected = _expected_seconds([(exp, params) for exp, params, _, _ in others])
        measured += zip(others, replicas.side_by_side([(exp, params, source_digest(exp.func))
                                                       for exp, params, _, _ in others], fp, expected, list(beside)))
    done = []
    for (exp, params, key, refresh), (value, elapsed) in measured:
        if isinstance(value, Exception):
            log.info("pitfalls: %s could not be measured before the pages (%s); its page measures it", exp.name, value)
            continue
        _stored(exp, params, fp, key, value, elapsed, refresh=refresh, recording=recording)
        build.refreshed.add(key)
        build.measured_before_pages.add(key)
        done.append(exp.name)
    return done


def _expected_seconds(wanted: list[tuple[Experiment, dict]]) -> list[float]:
    """How long each experiment took on the leading recorded machine (0 where it is not recorded): the longest are
    started first, so that the cores finish together."""
    try:
        lead = store.primary(find_experiment)
    except store.ArchiveError:
        return [0.0] * len(wanted)
    return [float((lead.entry(exp.name, params) or {}).get("elapsed_s", 0.0)) for exp, params in wanted]
