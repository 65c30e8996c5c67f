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
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from . import code, environment

log = logging.getLogger("mkdocs.plugins.pitfalls")

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FORMAT_VERSION = 1

# The page being rendered, set by the MkDocs hook, so errors can name it.
current_page: str | None = None
# Keys computed in this process: REFRESH re-runs each experiment once per build, not once per block.
_refreshed: set[str] = set()
# Experiments each page ran in this build ({page: {name}}): the hook checks that each one's code is shown.
ran_on_page: dict[str, set[str]] = {}


class ExperimentError(RuntimeError):
    """An experiment could not produce its result: bad parameters, or it raised."""


@dataclass(frozen=True)
class Experiment:
    func: Callable[..., dict]
    name: str
    timing: bool

    def __call__(self, **params: Any) -> dict:
        return self.func(**params)


def experiment(*, timing: bool = False) -> Callable[[Callable[..., dict]], Experiment]:
    """Mark a function as an experiment. ``timing=True`` marks results that depend on wall-clock time."""

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
    # The experiment that produced it (not stored): the code panel shows its source.
    exp: Experiment | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, key: str) -> Any:
        return self.value[key]

    @property
    def stamp(self) -> str:
        return environment.stamp(self.fingerprint, self.computed_at)


def cache_dir() -> Path:
    return Path(os.environ.get("PITFALLS_CACHE_DIR") or PROJECT_ROOT / ".cache" / "results")


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
    return f"[page {current_page}] " if current_page else ""


def cache_key(exp: Experiment, params: dict, fp: dict) -> str:
    material = json.dumps(
        {
            "format": FORMAT_VERSION,
            "experiment": exp.name,
            "source": source_digest(exp.func),
            "params": params,
            "fingerprint": fp,
        },
        sort_keys=True,
        default=repr,
    )
    return hashlib.sha256(material.encode()).hexdigest()


def _entry_path(exp: Experiment, key: str) -> Path:
    return cache_dir() / exp.name / f"{key[:24]}.json"


_REFRESH_WORDS = {"": "none", "0": "none", "no": "none", "false": "none", "off": "none",
                  "1": "all", "all": "all", "yes": "all", "true": "all", "on": "all",
                  "nontiming": "nontiming", "timing": "timing"}


def refresh_mode() -> str:
    """``REFRESH`` read once for the whole build: ``"none"``, ``"all"``, ``"nontiming"`` or ``"timing"``.

    The result cache and the notebook cache (in the MkDocs hook) both use it, so they never disagree.
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


def _load(path: Path, key: str) -> dict | None:
    if not path.exists():
        return None
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry["key"] != key or not isinstance(entry["value"], dict):
            raise ValueError("key or value does not match")
        return entry
    except (OSError, ValueError, KeyError, TypeError) as error:
        log.warning("Cache entry %s is corrupt (%s); recomputing", path, error)
        return None


def store_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _store(path: Path, entry: dict) -> None:
    store_text(path, json.dumps(entry, sort_keys=True))


def run(exp: Experiment, /, **params: Any) -> Result:
    """Return ``exp(**params)`` from the cache, computing and storing it on a miss."""
    if not isinstance(exp, Experiment):
        raise ExperimentError(f"{_where()}{exp!r} is not an experiment (decorate it with @experiment())")
    params = _bind(exp, params)
    from . import machines

    if current_page:
        ran_on_page.setdefault(current_page, set()).add(exp.name)
    if machines.frozen():  # FROZEN=1: the recorded machines' results, never a computation
        return machines.frozen_result(exp, params)
    fp = environment.fingerprint()
    key = cache_key(exp, params, fp)
    path = _entry_path(exp, key)
    refresh = _wants_refresh(exp) and key not in _refreshed
    entry = None if refresh else _load(path, key)
    if entry is not None:
        result = Result(entry["value"], exp.name, params, fp, entry["computed_at"], entry["elapsed_s"],
                        exp.timing, cached=True, exp=exp)
        machines.keep(result)
        return result

    shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
    log.info("pitfalls: running %s(%s)", exp.name, shown)
    start = time.perf_counter()
    try:
        value = exp.func(**params)
    except Exception as error:
        raise ExperimentError(
            f"{_where()}experiment {exp.name}({shown}) raised {type(error).__name__}: {error}"
        ) from error
    elapsed = time.perf_counter() - start
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
    _store(path, entry)
    if refresh:
        _refreshed.add(key)
    log.info("pitfalls: %s done in %.1f s", exp.name, elapsed)
    result = Result(value, exp.name, params, fp, computed_at, elapsed, exp.timing, cached=False, exp=exp)
    machines.keep(result)  # into the recording being made by make record, if one is
    return result
