"""Recorded machines: results measured on other machines, kept in the repository and shown beside this one's.

A *recording* is a folder ``results/<label>/`` written by ``make record MACHINE=<label>`` (``record`` below)::

    results/<label>/manifest.json                     label, environment fingerprint, date, git commit, and
                                                      each experiment's source digest
    results/<label>/<experiment>/<params>.json        one result: experiment, parameters, source digest, value
    results/<label>/notebooks/<name>.ipynb            each notebook as executed there

JSON with sorted keys and one key per line (diff-friendly), no absolute paths. Every build shows this machine's
results and, beside them, each recorded machine's (``compare`` for timing tables and figures, ``elsewhere`` for
checked claims); a machine whose fingerprint is this machine's is not shown twice. A recording made with an
older version of an experiment (its source digest differs) is *stale*: a normal build leaves it out of that
comparison and says so, naming the commit it came from — an old result drawn by today's code could be drawn
wrongly, and a wrong figure is worse than none. ``FROZEN=1`` builds the site from the recordings alone: it runs
no experiment and executes no notebook; the machine it leads with is named in ``results/primary``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from . import cache, environment, i18n, recording_schema
from .i18n import t
from .recording_schema import params_key

FORMAT = 1
LABEL = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_TRUE = {"1", "true", "yes", "on"}


class ArchiveError(RuntimeError):
    """A recording cannot be used: missing, corrupt, of another format, stale where a frozen build needs it."""


def results_dir() -> Path:
    return Path(os.environ.get("PITFALLS_RESULTS_DIR") or cache.PROJECT_ROOT / "results")


def _show(path: Path) -> str:
    try:
        return path.resolve().relative_to(cache.PROJECT_ROOT).as_posix()
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Recording:
    label: str
    path: Path
    manifest: dict

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
        exp = cache.find_experiment(experiment)
        try:
            entry = recording_schema.check_entry(
                recording_schema.read_json(path, _show(path)), _show(path), experiment,
                recording_schema.accepted_parameters(exp.func) if exp is not None else None)
        except recording_schema.RecordingRefused as error:
            raise ArchiveError(str(error)) from None
        if entry["params"] != json.loads(json.dumps(params)):
            raise ArchiveError(f"{_show(path)}: holds {entry['experiment']}({entry['params']}), not "
                               f"{experiment}({params})")
        return entry

    def notebook(self, stem: str) -> Path | None:
        path = self.path / "notebooks" / f"{stem}.ipynb"
        return path if path.exists() else None


def load(path: Path) -> Recording:
    """The recording in folder ``path``, every file of it checked (``recording_schema``): an ``ArchiveError``
    naming the file and field that is not as this project records it."""
    try:
        manifest = recording_schema.check_folder(path, cache.find_experiment)
    except recording_schema.RecordingRefused as error:
        raise ArchiveError(str(error)) from None
    except OSError as error:
        raise ArchiveError(f"results/{path.name}: cannot be read ({error.strerror or error})") from None
    return Recording(path.name, path, manifest)


@functools.cache
def _recordings(folder: str) -> tuple[tuple[Recording, ...], tuple[tuple[str, str], ...]]:
    """The usable recordings under ``folder``, and the refused ones: (folder name, why)."""
    root = Path(folder)
    if not root.is_dir():
        return (), ()
    found, refused = [], []
    for path in sorted(root.iterdir()):
        if path.name.startswith(".") or not (path.is_dir() or path.is_symlink()) or path.name == "primary":
            continue
        try:
            found.append(load(path))
        except ArchiveError as error:
            refused.append((path.name, str(error)))
    for name, why in refused:  # once per process and folder: outside mkdocs' logger, not a failure by itself
        print(f"WARNING -  recorded machine results/{name}/ left out: {why}", file=sys.stderr, flush=True)
    return tuple(found), tuple(refused)


def recordings() -> tuple[Recording, ...]:
    """Every usable recording under ``results/``, by label. A frozen build stops at a refused one."""
    found, refused = _recordings(str(results_dir()))
    if refused and frozen():
        raise ArchiveError("FROZEN=1: " + "; ".join(f"results/{name}/ is refused ({why})" for name, why in refused))
    return found


def refused() -> tuple[tuple[str, str], ...]:
    """The folders under ``results/`` that were left out, and why."""
    return _recordings(str(results_dir()))[1]


def frozen() -> bool:
    return os.environ.get("FROZEN", "").strip().lower() in _TRUE


def primary() -> Recording:
    """The recording a frozen build leads with: the label in ``results/primary``, or the only recording."""
    found = {rec.label: rec for rec in recordings()}
    named = results_dir() / "primary"
    if named.exists():
        label = named.read_text(encoding="utf-8").strip()
        if label not in found:
            raise ArchiveError(f"{_show(named)} names {label!r}, which is not a recording under {_show(results_dir())}/ "
                               f"(recorded: {', '.join(found) or 'none'})")
        return found[label]
    if len(found) == 1:
        return next(iter(found.values()))
    raise ArchiveError(f"FROZEN=1 needs one machine to lead with: write its label into {_show(named)} "
                       f"(recorded: {', '.join(found) or 'none — run make record MACHINE=<label> first'})")


def others() -> list[Recording]:
    """The recorded machines to show beside this one: never this machine (same fingerprint) twice."""
    if frozen():
        lead = primary()
        return [rec for rec in recordings() if rec.label != lead.label]
    fp = environment.fingerprint()
    return [rec for rec in recordings() if rec.fingerprint != fp]


def lookup(rec: Recording, exp: cache.Experiment, params: dict) -> tuple[cache.Result | None, str]:
    """``exp(**params)`` as ``rec`` recorded it, or None and why not ("not recorded", "stale: …")."""
    entry = rec.entry(exp.name, params)
    if entry is None:
        return None, t("not recorded on {label}", label=rec.label)
    if entry["source"] != cache.source_digest(exp.func):
        return None, t("recorded on {label} with an older version of this experiment (commit {commit}, {date}); "
                       "re-record it with make record MACHINE={label}", label=rec.label, commit=rec.commit[:12],
                       date=rec.manifest["recorded_at"][:10])
    return cache.Result(entry["value"], exp.name, entry["params"], rec.fingerprint, entry["computed_at"],
                        entry["elapsed_s"], exp.timing, cached=True, exp=exp), ""


def frozen_result(exp: cache.Experiment, params: dict) -> cache.Result:
    """What ``run`` returns in a frozen build: the leading machine's recording, never a computation."""
    lead = primary()
    result, why = lookup(lead, exp, params)
    if result is None:
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        page = f"page docs/{cache.current_page}: " if cache.current_page else ""
        raise cache.ExperimentError(f"FROZEN=1: {page}experiment {exp.name}({shown}) is {why}; a frozen build "
                                    f"runs nothing")
    return result


# ---- recording, inside the build that ``make record`` runs ---------------------------------------------------

def recording_into() -> Path | None:
    folder = os.environ.get("PITFALLS_RECORD")
    return Path(folder) if folder else None


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def keep(result: cache.Result) -> None:
    """Write ``result`` into the recording being made (``PITFALLS_RECORD``), if one is."""
    folder = recording_into()
    if folder is None or result.exp is None:
        return
    entry = {"format": FORMAT, "experiment": result.experiment, "params": result.params,
             "source": cache.source_digest(result.exp.func), "computed_at": result.computed_at,
             "elapsed_s": round(result.elapsed_s, 3), "value": result.value}
    cache.store_text(folder / result.experiment / f"{params_key(result.params)}.json", _dump(entry))


def notebook_digest(source: Path) -> str:
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()


def keep_notebook(source: Path, executed: Path) -> None:
    """Keep the executed copy of notebook ``source`` in the recording being made, with its source's digest."""
    folder = recording_into()
    if folder is not None:
        target = folder / "notebooks" / f"{source.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(executed, target)
        cache.store_text(folder / "notebooks" / f"{source.stem}.source-digest", notebook_digest(source) + "\n")


def frozen_notebook(source: Path) -> Path:
    """The leading machine's executed copy of notebook ``source``; an error naming it if missing or stale.

    What is rendered is the source notebook as it is here (its Markdown, code and metadata), with the outputs of
    the recorded copy matched cell by cell — outputs that ``recording_schema`` allows (printed text, PNG figures):
    nothing else of a recorded notebook reaches the page."""
    import jupytext
    import nbformat

    lead = primary()
    path = lead.notebook(source.stem)
    if path is None:
        raise ArchiveError(f"FROZEN=1: notebook {source.name} was not recorded on {lead.label} "
                           f"(results/{lead.label}/notebooks/); record it with make record MACHINE={lead.label}")
    recorded = lead.manifest.get("notebooks", {}).get(source.stem)
    if recorded != notebook_digest(source):
        raise ArchiveError(f"FROZEN=1: notebook {source.name} changed since {lead.label} recorded it (commit "
                           f"{lead.commit[:12]}); re-record with make record MACHINE={lead.label}")
    executed = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    ran = [cell for cell in executed.cells if cell.cell_type == "code"]
    notebook = jupytext.read(source)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if [cell.source for cell in code] != [cell.source for cell in ran]:
        raise ArchiveError(f"FROZEN=1: results/{lead.label}/notebooks/{path.name}: its code cells are not those "
                           f"of {source.name}; re-record with make record MACHINE={lead.label}")
    for mine, theirs in zip(code, ran):
        mine.outputs, mine.execution_count = theirs.outputs, theirs.execution_count
    for number, cell in enumerate(notebook.cells):  # the same page from the same inputs: ids as recorded
        recorded_id = executed.cells[number].get("id") if len(executed.cells) == len(notebook.cells) else None
        cell["id"] = recorded_id if isinstance(recorded_id, str) and re.fullmatch(r"[\w-]{1,64}", recorded_id) \
            else f"cell-{number}"
    notebook.metadata.update({key: value for key, value in executed.metadata.items() if key == "language_info"})
    digest = hashlib.sha256(path.read_bytes() + source.read_bytes()).hexdigest()[:16]
    target = cache.cache_dir().parent / "notebooks" / "frozen" / lead.label / f"{source.stem}-{digest}.ipynb"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        cache.store_text(target, nbformat.writes(notebook))
    return target


# ---- showing the recordings ------------------------------------------------------------------------------------

_EXTENSIONS: list = ["tables", "admonition", "attr_list", "md_in_html"]
_EXTENSION_CONFIGS: dict = {}
_tab_sets = 0


def use_markdown(extensions: list, configs: dict) -> None:
    """The site's Markdown extensions (set by the MkDocs hook), to draw recorded machines' tables and warnings."""
    global _EXTENSIONS, _EXTENSION_CONFIGS
    _EXTENSIONS, _EXTENSION_CONFIGS = list(extensions), dict(configs)


def _html(text: str) -> str:
    import markdown

    return markdown.Markdown(extensions=_EXTENSIONS, extension_configs=_EXTENSION_CONFIGS).convert(text)


def tabs(named: list[tuple[str, str]]) -> str:
    """Material's content tabs (pymdownx.tabbed, alternate style) as HTML: one tab per (label, HTML)."""
    global _tab_sets
    _tab_sets += 1
    group = f"__machines_{_tab_sets}"
    inputs = "".join(f'<input{" checked" if i == 0 else ""} id="{group}_{i + 1}" name="{group}" type="radio">'
                     for i in range(len(named)))
    labels = "".join(f'<label for="{group}_{i + 1}">{html.escape(label)}</label>' for i, (label, _) in enumerate(named))
    blocks = "".join(f'<div class="tabbed-block">\n{body}\n</div>' for _, body in named)
    return (f'<div class="tabbed-set tabbed-alternate pitfalls-machines__tabs" data-tabs="{_tab_sets}:{len(named)}">'
            f'{inputs}<div class="tabbed-labels">{labels}</div>\n<div class="tabbed-content">\n{blocks}\n</div></div>')


def compare(result: cache.Result, renderers: Iterable[Callable[[cache.Result], str]]) -> str:
    """The same tables and figures drawn from each recorded machine's result, in tabs; stale or missing
    recordings named. Empty when no other machine is recorded, or for results that do not depend on time."""
    renderers = list(renderers)
    if result.exp is None or not result.timing or not renderers:
        return ""
    shown, missing = [], []
    for rec in others():
        recorded, why = lookup(rec, result.exp, result.params)
        if recorded is None:
            missing.append(why)
            continue
        try:
            body = "\n".join(_html(renderer(recorded)) for renderer in renderers)
        except Exception as error:  # a recording the drawing code cannot read: said, never a broken build
            missing.append(t("{label}: its recording cannot be drawn ({error})", label=rec.label,
                             error=f"{type(error).__name__}: {error}"))
            continue
        shown.append((f"{rec.label}", '<p class="pitfalls-stamp">'
                      + t("Recorded on {label}: {stamp} · commit {commit}", label=html.escape(rec.label),
                          stamp=html.escape(i18n.stamp(rec.stamp)), commit=html.escape(rec.commit[:12]))
                      + f"</p>\n{body}"))
    if not shown and not missing:
        return ""
    parts = [tabs(shown)] if shown else []
    if missing:
        parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in missing) + "</ul>")
    labels = ", ".join(label for label, _ in shown) or t("none usable")
    from .provenance import _deferrable

    return ('\n<details class="abstract pitfalls-machines"><summary>'
            + t("The same measured on other machines: {labels}", labels=html.escape(labels))
            + f"</summary>\n{_deferrable(chr(10).join(parts))}\n</details>\n")


def elsewhere(outcome) -> list[tuple[str, Any]]:
    """The check behind ``outcome`` evaluated on each recorded machine's results: [(label, Check or reason)]."""
    if outcome.rerun is None:
        return []
    args, kwargs = outcome.args
    results = [a for a in list(args) + list(kwargs.values()) if isinstance(a, cache.Result) and a.exp is not None]
    if not results:
        return []
    out = []
    for rec in others():
        swapped: dict[int, cache.Result] = {}
        why = ""
        for original in results:
            recorded, why = lookup(rec, original.exp, original.params)
            if recorded is None:
                break
            swapped[id(original)] = recorded
        if len(swapped) != len(results):
            out.append((rec.label, why))
            continue
        new_args = [swapped.get(id(a), a) for a in args]
        new_kwargs = {k: swapped.get(id(v), v) for k, v in kwargs.items()}
        try:
            out.append((rec.label, outcome.rerun(*new_args, **new_kwargs)))
        except Exception as error:
            out.append((rec.label, t("its recording cannot be checked ({error})",
                                     error=f"{type(error).__name__}: {error}")))
    return out


def overview() -> str:
    """The Environment page's table of recorded machines: what each is, when and from which commit it was
    recorded, and how many of its results this build could use (the rest are stale: recorded with older code)."""
    from . import render

    found = recordings()
    left_out = "".join("\n" + t("Left out: {folder} ({why})", folder=_plain(f"results/{name}/"), why=_plain(why))
                       + "\n" for name, why in refused())
    if not found:
        return t("No machine is recorded in `results/` yet: this build shows this machine only. "
                 "`make record MACHINE=<label>` records yours.") + "\n" + left_out
    lead = primary().label if frozen() else None
    fp = None if frozen() else environment.fingerprint()
    rows = []
    for rec in found:
        current = stale = 0
        for name, sources in rec.manifest["experiments"].items():
            exp = cache.find_experiment(name)
            digest = cache.source_digest(exp.func) if exp is not None else None
            recorded = sources if isinstance(sources, list) else [sources]
            if digest is not None and digest in recorded:
                current += 1
            else:
                stale += 1
        role = ("this build's results" if rec.label == lead or rec.fingerprint == fp else "shown beside them")
        rows.append([f"`{rec.label}`", _plain(rec.fingerprint["device_name"]), rec.fingerprint["threads"],
                     _plain(rec.fingerprint["torch"]), _plain(rec.manifest["recorded_at"][:10]),
                     f"`{rec.commit[:12]}`",
                     t("{current} current, {stale} stale", current=current, stale=stale), role])
    text = render.table(["machine", "device", "threads", "torch", "recorded", "commit", "experiments", "shown as"],
                        rows, align="llrlllll") + "\n"
    return text + left_out


def _plain(text: str) -> str:
    """A recorded string as text in Markdown: HTML-escaped, and Markdown's own marks escaped."""
    return re.sub(r"([\\`*_{}\[\]|~])", r"\\\1", html.escape(str(text), quote=False))


# ---- make record ----------------------------------------------------------------------------------------------

def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cache.PROJECT_ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        # A recording just made (of another machine, under results/) does not change the code that measures.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"],
                               cwd=cache.PROJECT_ROOT, capture_output=True, text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def record(label: str, *, replace: bool = False, build: Callable[[Path, dict], None] | None = None) -> Path:
    """Run every experiment and notebook afresh and write ``results/<label>/``; all of it or nothing."""
    if not LABEL.match(label or ""):
        raise ArchiveError(f"MACHINE={label!r} is not a usable label: lower-case letters, digits, '.', '_' and '-', "
                           f"starting with a letter or digit (for example MACHINE=laptop-m2 or MACHINE=a100-80gb)")
    root = results_dir()
    target = root / label
    fp = environment.fingerprint()
    if (target / "manifest.json").exists():
        old = load(target)
        if old.fingerprint != fp and not replace:
            differ = ", ".join(f"{k}: {old.fingerprint.get(k)!r} there, {fp.get(k)!r} here"
                               for k in sorted(set(fp) | set(old.fingerprint)) if old.fingerprint.get(k) != fp.get(k))
            raise ArchiveError(f"results/{label}/ was recorded on another machine ({differ}); choose another "
                               f"MACHINE=… or replace it with make record MACHINE={label} REPLACE=1")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{label}-", dir=root))
    try:
        env = {**os.environ, "PITFALLS_RECORD": str(staging), "REFRESH": "1"}
        env.pop("FROZEN", None)
        (build or _build)(staging, env)
        experiments: dict[str, dict] = {}
        for path in sorted(staging.glob("*/*.json")):
            entry = json.loads(path.read_text(encoding="utf-8"))
            experiments.setdefault(entry["experiment"], {})[path.stem] = entry["source"]
        if not experiments:
            raise ArchiveError("the build ran no experiment: nothing to record")
        manifest = {"format": FORMAT, "label": label, "fingerprint": fp,
                    "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": _commit(),
                    "python": sys.version.split()[0],
                    "experiments": {name: sorted(set(sources.values()))[0] if len(set(sources.values())) == 1
                                    else sorted(set(sources.values())) for name, sources in experiments.items()},
                    "notebooks": {p.name.removesuffix(".source-digest"): p.read_text(encoding="utf-8").strip()
                                  for p in sorted((staging / "notebooks").glob("*.source-digest"))}}
        for digest_file in (staging / "notebooks").glob("*.source-digest"):
            digest_file.unlink()
        cache.store_text(staging / "manifest.json", _dump(manifest))
        # Swap in whole: the old recording moves aside, the new one takes its name, the old one goes.
        old = root / f".old-{label}-{os.getpid()}"
        if target.exists():
            target.rename(old)
        staging.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _recordings.cache_clear()
    return target


def _build(staging: Path, env: dict) -> None:
    with tempfile.TemporaryDirectory(prefix="pitfalls-record-site-") as site:
        process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", site],
                                 cwd=cache.PROJECT_ROOT, env=env)
    if process.returncode != 0:
        raise ArchiveError("the site did not build, so nothing was recorded (the build's errors are above)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make record", description="Record this machine's results into results/<label>/.")
    parser.add_argument("label", help="the machine's label, e.g. laptop-m2 (MACHINE=…)")
    parser.add_argument("--replace", action="store_true", help="replace a recording made on another machine")
    args = parser.parse_args(argv)
    try:
        target = record(args.label, replace=args.replace)
    except ArchiveError as error:
        print(f"make record: {error}", file=sys.stderr)
        return 2
    files = sum(1 for p in target.rglob("*") if p.is_file())
    print(f"Recorded {_show(target)}/: {files} files, {_size(target) / 1024:.0f} KiB. Commit it to share it.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
