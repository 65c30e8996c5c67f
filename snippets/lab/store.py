"""Where results are kept: one interface, "the result of this experiment with these parameters, measured by this
code", with two implementations.

* :class:`LocalStore` — this machine's result cache (``.cache/results/<experiment>/<key>.json``), keyed by the
  experiment's code, its parameters and the environment fingerprint (``cache.cache_key``).
* :class:`Recording` — a recorded machine (``results/<label>/``, written by ``make record``): its results by
  experiment and parameters, each carrying the digest of the code that measured it, so that a result measured
  by other code is *stale* and never shown as this code's.

Writing goes through :func:`store_text` (atomic: a reader sees the old file or the new one) and, while ``make
record`` runs, through a :class:`Writer` into a staging folder outside ``results/`` that the recording replaces
only when complete. A recording arrives by pull request: :func:`load` checks every file of it first
(``recording_schema``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import environment, recording_schema
from .recording_schema import params_key

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FORMAT = 1
_TRUE = {"1", "true", "yes", "on"}


class ArchiveError(RuntimeError):
    """A recording cannot be used: missing, corrupt, of another format, stale where a frozen build needs it."""


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


def dump(value: Any) -> str:
    """JSON as a recording keeps it, sorted keys, diff-friendly and small (a recording stays under 1 MB): an
    object that holds other objects has one key per line; an object of plain values (numbers, strings, lists of
    them: one timing, one row) is one line, and so is a list of plain values (a curve is one line, not a
    thousand)."""
    return _dump(value, 0) + "\n"


def _plain(value: Any) -> bool:
    """A number, string, boolean or null, or a list of them (at any depth): written on one line."""
    if isinstance(value, (list, tuple)):
        return all(_plain(item) for item in value)
    return not isinstance(value, dict)


def _dump(value: Any, depth: int) -> str:
    if _plain(value) or (isinstance(value, dict) and all(_plain(item) for item in value.values())):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    pad = " " * (depth + 1)
    if isinstance(value, dict):
        items = (f"{pad}{json.dumps(str(key), ensure_ascii=False)}: {_dump(value[key], depth + 1)}"
                 for key in sorted(value))
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    return "[\n" + ",\n".join(pad + _dump(item, depth + 1) for item in value) + "\n" + " " * depth + "]"


# ---- this machine's cache ----------------------------------------------------------------------------------------

def cache_dir() -> Path:
    return Path(os.environ.get("PITFALLS_CACHE_DIR") or PROJECT_ROOT / ".cache" / "results")


@dataclass(frozen=True)
class LocalStore:
    """This machine's result cache: ``<folder>/<experiment>/<key[:24]>.json``, each entry with its whole key."""

    folder: Path

    def path(self, experiment: str, key: str) -> Path:
        return self.folder / experiment / f"{key[:24]}.json"

    def get(self, experiment: str, key: str, params: dict | None = None) -> dict | None:
        """The entry stored under ``key``; None if there is none, or (with a warning) if it is corrupt."""
        path = self.path(experiment, key)
        if not path.exists():
            return None
        try:
            stat = path.stat()
            state = (str(path), stat.st_mtime_ns, stat.st_size)
            if state not in _READ:  # read once while the file is as it was (a rebuild reads every result again)
                _READ[state] = pickle.dumps(json.loads(path.read_text(encoding="utf-8")))
            entry = pickle.loads(_READ[state])  # a fresh copy for each caller
            if entry["key"] != key or not isinstance(entry["value"], dict):
                raise ValueError("key or value does not match")
            return entry
        except (OSError, ValueError, KeyError, TypeError) as error:
            import logging

            logging.getLogger("mkdocs.plugins.pitfalls").warning("Cache entry %s is corrupt (%s); recomputing",
                                                                 path, error)
            return None

    def put(self, experiment: str, key: str, entry: dict) -> None:
        store_text(self.path(experiment, key), json.dumps(entry, sort_keys=True))


def local() -> LocalStore:
    return LocalStore(cache_dir())


# ---- recorded machines ---------------------------------------------------------------------------------------------

def results_dir() -> Path:
    return Path(os.environ.get("PITFALLS_RESULTS_DIR") or PROJECT_ROOT / "results")


def shown_path(path: Path) -> str:
    """``path`` as a message names it: relative to the project where it is inside it."""
    try:
        return path.resolve().relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        return str(path)


Find = Callable[[str], Any]  # an experiment by name (``loader.question_timing``), or None


@dataclass(frozen=True)
class Recording:
    """A recorded machine, ``results/<label>/``, every file of it checked when it was loaded."""

    label: str
    path: Path
    manifest: dict
    find: Find | None = None

    @property
    def fingerprint(self) -> dict:
        return self.manifest["fingerprint"]

    @property
    def stamp(self) -> str:
        return environment.stamp(self.fingerprint, self.manifest["recorded_at"])

    @property
    def commit(self) -> str:
        return self.manifest.get("commit") or "unknown commit"

    def entry(self, experiment: str, params: dict) -> dict | None:
        """The recorded result of ``experiment(**params)``, or None if this machine never ran it."""
        path = self.path / experiment / f"{params_key(params)}.json"
        if not path.exists():
            return None
        # checked once per file as it is on disk: a build rechecks every claim on every recording, each a read
        key = _checked_key(path, experiment)
        if key not in _CHECKED:
            exp = self.find(experiment) if self.find is not None else None
            try:
                checked = recording_schema.check_entry(
                    recording_schema.read_json(path, shown_path(path)), shown_path(path), experiment,
                    recording_schema.accepted_parameters(exp.func) if exp is not None else None)
            except recording_schema.RecordingRefused as error:
                raise ArchiveError(str(error)) from None
            _CHECKED[key] = pickle.dumps(checked)
        entry = pickle.loads(_CHECKED[key])  # a fresh copy for each caller (our own bytes: pickle is 3× json here)
        if entry["params"] != json.loads(json.dumps(params)):
            raise ArchiveError(f"{shown_path(path)}: holds {entry['experiment']}({entry['params']}), not "
                               f"{experiment}({params})")
        return entry

    def get(self, experiment: str, key: str, params: dict) -> dict | None:
        """The recorded entry of ``experiment(**params)`` if the code that measured it is the code ``key`` (a code
        digest) names; None if it was never recorded or is stale."""
        entry = self.entry(experiment, params)
        return entry if entry is not None and entry["source"] == key else None

    def notebook(self, stem: str) -> Path | None:
        path = self.path / "notebooks" / f"{stem}.ipynb"
        return path if path.exists() else None


# {(folder, every file's name, mtime and size): (its manifest, its results' checked entries)}: a folder checked
# once stays checked while no file of it changes, across make serve's rebuilds (memo/adopt, as code.memo)
_FOLDERS: dict[tuple, tuple[dict, dict[tuple, str]]] = {}


def memo() -> tuple[dict, dict]:
    """The recordings this process checked and the results it read (for ``adopt``)."""
    return _FOLDERS, _READ


def adopt(found: tuple[dict, dict]) -> None:
    """Reuse what an earlier import of this module checked and read (``memo``): a file that changed is read anew."""
    global _FOLDERS, _READ
    _FOLDERS, _READ = found


def load(path: Path, find: Find | None = None) -> Recording:
    """The recording in folder ``path``, every file of it checked (``recording_schema``): an ``ArchiveError``
    naming the file and field that is not as this project records it."""
    checked: dict[tuple, bytes] = {}

    def keep(file: Path, entry: dict) -> None:  # each result is checked once per process: here, not again by entry
        checked[_checked_key(file, file.parent.name)] = pickle.dumps(entry)

    try:
        state = (str(path), tuple(sorted((str(f), stat.st_mtime_ns, stat.st_size)
                                         for f in path.rglob("*") for stat in (f.lstat(),))))
        if state not in _FOLDERS:
            _FOLDERS[state] = recording_schema.check_folder(path, find or (lambda name: None), keep), checked
        manifest, checked = _FOLDERS[state]
    except recording_schema.RecordingRefused as error:
        raise ArchiveError(str(error)) from None
    except OSError as error:
        raise ArchiveError(f"results/{path.name}: cannot be read ({error.strerror or error})") from None
    _CHECKED.update(checked)
    return Recording(path.name, path, manifest, find)


@functools.cache
def _recordings(folder: str, find: Find | None) -> tuple[tuple[Recording, ...], tuple[tuple[str, str], ...]]:
    """The usable recordings under ``folder``, and the refused ones: (folder name, why)."""
    root = Path(folder)
    if not root.is_dir():
        return (), ()
    found, refused = [], []
    for path in sorted(root.iterdir()):
        if path.name.startswith(".") or not (path.is_dir() or path.is_symlink()) or path.name == "primary":
            continue
        try:
            found.append(load(path, find))
        except ArchiveError as error:
            refused.append((path.name, str(error)))
    for name, why in refused:  # once per process and folder: outside mkdocs' logger, not a failure by itself
        print(f"WARNING -  recorded machine results/{name}/ left out: {why}", file=sys.stderr)
    return tuple(found), tuple(refused)


def frozen() -> bool:
    return os.environ.get("FROZEN", "").strip().lower() in _TRUE


def deferred() -> bool:
    """``make serve``'s first builds (``PITFALLS_DEFER=1``): a result this machine has not measured yet is the
    leading recorded machine's, marked as such, while a separate build measures this machine (``serve``)."""
    return os.environ.get("PITFALLS_DEFER", "").strip().lower() in _TRUE and not frozen()


def progress_path() -> Path:
    """What ``make serve``'s measuring build has done so far (``serve``), read by the pages it rebuilds: inside
    the result cache, which ``make serve`` watches, so that writing it reloads the pages."""
    return cache_dir() / "measuring.json"


def pending_path() -> Path:
    """What a deferred build showed from a recording (``deferred``): the experiments ``make serve`` measures."""
    return cache_dir().parent / "pending.json"


def recordings(find: Find | None = None) -> tuple[Recording, ...]:
    """Every usable recording under ``results/``, by label. A frozen build stops at a refused one."""
    found, refused_ = _recordings(str(results_dir()), find)
    if refused_ and frozen():
        raise ArchiveError("FROZEN=1: " + "; ".join(f"results/{name}/ is refused ({why})" for name, why in refused_))
    return found


def refused(find: Find | None = None) -> tuple[tuple[str, str], ...]:
    """The folders under ``results/`` that were left out, and why."""
    return _recordings(str(results_dir()), find)[1]


def primary_label() -> str | None:
    """The label ``results/primary`` names, if it names one."""
    named = results_dir() / "primary"
    return named.read_text(encoding="utf-8").strip() or None if named.is_file() else None


def primary(find: Find | None = None) -> Recording:
    """The recording a frozen build leads with: the label in ``results/primary``, or the only recording."""
    found = {rec.label: rec for rec in recordings(find)}
    named = results_dir() / "primary"
    if named.exists():
        label = named.read_text(encoding="utf-8").strip()
        if label not in found:
            raise ArchiveError(f"{shown_path(named)} names {label!r}, which is not a recording under "
                               f"{shown_path(results_dir())}/ (recorded: {', '.join(found) or 'none'})")
        return found[label]
    if len(found) == 1:
        return next(iter(found.values()))
    raise ArchiveError(f"FROZEN=1 needs one machine to lead with: write its label into {shown_path(named)} "
                       f"(recorded: {', '.join(found) or 'none — run make record MACHINE=<label> first'})")


# recorded results as checked against the schema, by (path, modification time, size, experiment), pickled
_CHECKED: dict[tuple, bytes] = {}
# this machine's cached results as read, by (path, modification time, size), pickled
_READ: dict[tuple, bytes] = {}


def _checked_key(path: Path, experiment: str) -> tuple:
    stat = path.stat()
    return str(path), stat.st_mtime_ns, stat.st_size, experiment


def forget() -> None:
    """Read the recordings again at the next call (after ``make record`` replaced one)."""
    _recordings.cache_clear()
    _CHECKED.clear()
    _READ.clear()
    _FOLDERS.clear()


# ---- writing a recording, inside the build that make record runs -------------------------------------------------

def notebook_digest(source: Path) -> str:
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()


@dataclass(frozen=True)
class Writer:
    """The recording being made (``PITFALLS_RECORD``, a staging folder), and the one it replaces
    (``PITFALLS_RECORD_PREVIOUS``): a result or notebook that one holds, measured by today's code, is carried
    over as it is instead of being measured again."""

    folder: Path
    previous: Recording | None

    def reuse(self, experiment: str, digest: str, params: dict) -> dict | None:
        """The previous recording's entry of ``experiment(**params)`` if today's code (``digest``) measured it,
        written into the new recording unchanged; None if it must be measured."""
        if self.previous is None:
            return None
        entry = self.previous.get(experiment, digest, params)
        if entry is not None:
            store_text(self.folder / experiment / f"{params_key(params)}.json", dump(entry))
        return entry

    def keep(self, entry: dict) -> None:
        """Write a freshly measured entry into the recording being made."""
        store_text(self.folder / entry["experiment"] / f"{params_key(entry['params'])}.json",
                   dump({"format": FORMAT, **entry}))

    def reuse_notebook(self, source: Path) -> Path | None:
        """The previous recording's executed copy of notebook ``source`` if it was executed from this source."""
        if self.previous is None or self.previous.manifest.get("notebooks", {}).get(source.stem) != \
                notebook_digest(source):
            return None
        return self.previous.notebook(source.stem)

    def keep_notebook(self, source: Path, executed: Path) -> None:
        """Keep the executed copy of notebook ``source`` in the recording being made, with its source's digest."""
        target = self.folder / "notebooks" / f"{source.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(executed, target)
        store_text(self.folder / "notebooks" / f"{source.stem}.source-digest", notebook_digest(source) + "\n")


@functools.cache
def _writer(folder: str, previous: str, find: Find | None) -> Writer:
    return Writer(Path(folder), load(Path(previous), find) if previous else None)


def writer(find: Find | None = None) -> Writer | None:
    """The recording this build is making, if ``make record`` runs it."""
    folder = os.environ.get("PITFALLS_RECORD")
    if not folder:
        return None
    return _writer(folder, os.environ.get("PITFALLS_RECORD_PREVIOUS", ""), find)
