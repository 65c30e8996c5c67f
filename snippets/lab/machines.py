"""Recorded machines: results measured on other machines, kept in the repository and shown beside this one's.

A *recording* is a folder ``results/<label>/`` written by ``make record MACHINE=<label>`` (``record`` below)::

    results/<label>/manifest.json                     label, environment fingerprint, date, git commit, and
                                                      each experiment's code digest
    results/<label>/<experiment>/<params>.json        one result: experiment, parameters, code digest, value
    results/<label>/notebooks/<name>.ipynb            each notebook as executed there

JSON with sorted keys and one key per line (diff-friendly), no absolute paths. Every build shows this machine's
results and, beside them, each recorded machine's (``compare`` for timing tables and figures, ``elsewhere`` for
checked claims); a machine whose fingerprint is this machine's is not shown twice. A result recorded with an
older version of its experiment (the digest of the code it reaches, ``code.reach``, differs) is *stale*: editing
one experiment stales that experiment's results only. A normal build leaves a stale result out of that
comparison and says so, naming the commit it came from — an old result drawn by today's code could be drawn
wrongly, and a wrong figure is worse than none. ``FROZEN=1`` builds the site from the recordings alone: it runs
no experiment and executes no notebook; the machine it leads with is named in ``results/primary``.

``make record`` measures only what a recording lacks or holds stale (``REFRESH=1``: everything), from a clean
commit (``ALLOW_DIRTY=1`` records anyway and names the changes' digest), in a staging folder under ``.cache/``
that replaces the recording only when complete.
"""

from __future__ import annotations

import argparse
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

from . import cache, context, environment, i18n, recording_schema, render, store
from .i18n import t
# A recorded machine, as the store reads it; named here too, where the lab shows recordings.
from .store import ArchiveError, Recording, frozen, results_dir  # noqa: F401

LABEL = recording_schema.pattern("label")  # a recording's label, as its manifest must give it
FORMAT = store.FORMAT


def load(path: Path) -> Recording:
    """The recording in folder ``path``, every file of it checked (``store.load``)."""
    return store.load(path, cache.find_experiment)


def recordings() -> tuple[Recording, ...]:
    """Every usable recording under ``results/``, by label. A frozen build stops at a refused one."""
    return store.recordings(cache.find_experiment)


def refused() -> tuple[tuple[str, str], ...]:
    return store.refused(cache.find_experiment)


def primary() -> Recording:
    return store.primary(cache.find_experiment)


# The fingerprint's fields that name the software, not the machine: recordings that differ in these alone are
# *releases* of one machine (``make record-release``), shown on the Versions page, not as machines of their own.
# The thread count experiments run with is the project's setting (``environment.EXPERIMENT_THREADS``), not the
# machine's.
SOFTWARE = ("torch", "python", "start_method", "threads")


def hardware(fingerprint: dict) -> tuple:
    """What makes ``fingerprint`` another machine: every field but the software's (``SOFTWARE``)."""
    return tuple(sorted((key, str(value)) for key, value in fingerprint.items() if key not in SOFTWARE))


def release(version: str) -> tuple[int, ...]:
    """A torch version's release numbers, to sort by: ``"2.13.0+cpu"`` → ``(2, 13, 0)``."""
    numbers = re.match(r"\d+(?:\.\d+)*", str(version))
    return tuple(int(part) for part in numbers.group(0).split(".")) if numbers else ()


def short_release(version: str) -> str:
    """``"2.13.0+cpu"`` → ``"2.13.0"``."""
    return ".".join(map(str, release(version))) or str(version)


def _lead_fingerprint() -> dict:
    return primary().fingerprint if frozen() else environment.fingerprint()


def this_release() -> str:
    """This build's torch release, short (``2.13.0``)."""
    return short_release(_lead_fingerprint()["torch"])


def _not_this_build(rec: Recording, fp: dict) -> bool:
    return rec.label != primary().label if frozen() else rec.fingerprint != fp


def others() -> list[Recording]:
    """The recorded machines to show beside this one: one per machine other than this build's (another CPU,
    device or thread count; never this machine twice). Of a machine recorded with several releases, the one
    ``results/primary`` names, else the one with this build's torch, else the newest (the Versions page shows
    every release)."""
    fp = _lead_fingerprint()
    mine = hardware(fp)
    groups: dict[tuple, list[Recording]] = {}
    for rec in recordings():
        if _not_this_build(rec, fp) and hardware(rec.fingerprint) != mine:
            groups.setdefault(hardware(rec.fingerprint), []).append(rec)
    lead = store.primary_label()

    def preferred(rec: Recording) -> tuple:
        return (rec.label == lead, rec.fingerprint.get("torch") == fp.get("torch"),
                release(rec.fingerprint["torch"]), rec.label)

    return sorted((max(group, key=preferred) for group in groups.values()), key=lambda rec: rec.label)


def releases() -> list[Recording]:
    """This machine's other releases: the recordings of this build's machine (``hardware``) made with another
    torch or Python, oldest torch first; never the one this build reads or one of this build's fingerprint."""
    fp = _lead_fingerprint()
    mine = hardware(fp)
    found = [rec for rec in recordings() if _not_this_build(rec, fp) and rec.fingerprint != fp
             and hardware(rec.fingerprint) == mine]
    return sorted(found, key=lambda rec: (release(rec.fingerprint["torch"]), rec.label))


def same_kind() -> list[Recording]:
    """Recorded machines of the kind that measured this build's results (the same fingerprint: another host, or
    another day, that reports itself the same way), never the one this build reads (``FROZEN=1``)."""
    if frozen():
        lead = primary()
        return [rec for rec in recordings() if rec.label != lead.label and rec.fingerprint == lead.fingerprint]
    fp = environment.fingerprint()
    return [rec for rec in recordings() if rec.fingerprint == fp]


def disagreeing(result: cache.Result, intervals_of: Callable[[cache.Result], dict[Any, dict]]
                ) -> dict[Any, list[tuple[str, str, dict]]]:
    """Where a recorded machine of this result's kind (``same_kind``) measured something else: for each key of
    ``intervals_of(result)`` whose interval does not overlap the same interval from that machine's recording of
    the same experiment, ``[(label, date, its interval)]``. Empty for results that do not depend on time."""
    if result.exp is None or not result.timing:
        return {}
    mine = intervals_of(result)
    out: dict[Any, list[tuple[str, str, dict]]] = {}
    for rec in same_kind():
        recorded, _ = cache.from_recording(rec, result.exp, result.params)
        if recorded is None:
            continue
        try:
            theirs = intervals_of(recorded)
        except Exception:  # noqa: BLE001 - a recording the drawing code cannot read is named in its own tab
            continue
        for key, interval in mine.items():
            other = theirs.get(key)
            if other is None or None in (interval.get("low"), interval.get("high"), other.get("low"), other.get("high")):
                continue
            if other["high"] < interval["low"] or other["low"] > interval["high"]:
                out.setdefault(key, []).append((rec.label, rec.manifest["recorded_at"][:10], other))
    return out


# ---- a recorded notebook, in a frozen build ------------------------------------------------------------------

def frozen_notebook(source: Path) -> Path:
    """The leading machine's executed copy of notebook ``source`` (``recorded_notebook``)."""
    return recorded_notebook(source, primary())


class CodeCellsDiffer(ValueError):
    """A notebook's code cells are not those of the executed copy it takes its outputs from."""


def with_outputs_of(source: Path | str, executed):  # noqa: ANN001, ANN201 - nbformat's notebooks
    """Percent-format notebook ``source`` as it is here (its Markdown, code and metadata) with the outputs of
    ``executed`` matched code cell by code cell; ``CodeCellsDiffer`` naming the first code cell that differs."""
    import jupytext

    ran = [cell for cell in executed.cells if cell.cell_type == "code"]
    notebook = jupytext.read(source)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if [cell.source for cell in code] != [cell.source for cell in ran]:
        differing = next((n for n, (a, b) in enumerate(zip(code, ran), 1) if a.source != b.source),
                         min(len(code), len(ran)) + 1)
        raise CodeCellsDiffer(f"code cell {differing} differs; {len(code)} code cells here, {len(ran)} there")
    for mine, theirs in zip(code, ran):
        mine.outputs, mine.execution_count = theirs.outputs, theirs.execution_count
    return notebook


def recorded_notebook(source: Path, lead: Recording) -> Path:
    """Recorded machine ``lead``'s executed copy of notebook ``source``; an error naming it if missing or stale.

    What is rendered is the source notebook as it is here (its Markdown, code and metadata), with the outputs of
    the recorded copy matched cell by cell — outputs that ``recording_schema`` allows (printed text, PNG figures):
    nothing else of a recorded notebook reaches the page."""
    import nbformat

    path = lead.notebook(source.stem)
    if path is None:
        raise ArchiveError(f"FROZEN=1: notebook {source.name} was not recorded on {lead.label} "
                           f"(results/{lead.label}/notebooks/); record it with make record MACHINE={lead.label}")
    recorded = lead.manifest.get("notebooks", {}).get(source.stem)
    if recorded != store.notebook_digest(source):
        raise ArchiveError(f"FROZEN=1: notebook {source.name} changed since {lead.label} recorded it (commit "
                           f"{lead.commit[:12]}); re-record with make record MACHINE={lead.label}")
    executed = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    try:
        notebook = with_outputs_of(source, executed)
    except CodeCellsDiffer as error:
        raise ArchiveError(f"FROZEN=1: results/{lead.label}/notebooks/{path.name}: its code cells are not those "
                           f"of {source.name} ({error}); re-record with make record MACHINE={lead.label}") from None
    for number, cell in enumerate(notebook.cells):  # the same page from the same inputs: ids as recorded
        recorded_id = executed.cells[number].get("id") if len(executed.cells) == len(notebook.cells) else None
        cell["id"] = recorded_id if isinstance(recorded_id, str) and re.fullmatch(r"[\w-]{1,64}", recorded_id) \
            else f"cell-{number}"
    notebook.metadata.update({key: value for key, value in executed.metadata.items() if key == "language_info"})
    digest = hashlib.sha256(path.read_bytes() + source.read_bytes()).hexdigest()[:16]
    target = store.cache_dir().parent / "notebooks" / "frozen" / lead.label / f"{source.stem}-{digest}.ipynb"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        store.store_text(target, nbformat.writes(notebook))
    return target


# ---- showing the recordings ------------------------------------------------------------------------------------

def _html(text: str) -> str:
    """Markdown drawn with the site's extensions (``context.Build.markdown``, set by the site's MkDocs plugin)."""
    import markdown

    extensions, configs = context.current().markdown
    return markdown.Markdown(extensions=list(extensions), extension_configs=dict(configs)).convert(text)


def tabs(named: list[tuple[str, str]]) -> str:
    """Material's content tabs (pymdownx.tabbed, alternate style) as HTML: one tab per (label, HTML)."""
    build = context.current()
    build.tab_sets += 1
    number = build.tab_sets
    group = f"__machines_{number}"
    inputs = "".join(f'<input{" checked" if i == 0 else ""} id="{group}_{i + 1}" name="{group}" type="radio">'
                     for i in range(len(named)))
    labels = "".join(f'<label for="{group}_{i + 1}">{html.escape(label)}</label>' for i, (label, _) in enumerate(named))
    blocks = "".join(f'<div class="tabbed-block">\n{body}\n</div>' for _, body in named)
    return (f'<div class="tabbed-set tabbed-alternate pitfalls-machines__tabs" data-tabs="{number}:{len(named)}">'
            f'{inputs}<div class="tabbed-labels">{labels}</div>\n<div class="tabbed-content">\n{blocks}\n</div></div>')


def _draws_from_result_alone(renderer: Callable) -> bool:
    """Whether ``renderer`` can be called with a result and nothing else."""
    import inspect

    try:
        inspect.signature(renderer).bind(object())
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature: tried, and a failure is said
        return True
    return True


def _draws(renderer: Callable, result: cache.Result) -> bool:
    """Whether ``renderer`` draws text from this build's ``result``: a panel may list drawing code the page ran on
    another result (``training_target`` beside the batch-size sweep), which no recording of this one can feed."""
    try:
        return isinstance(renderer(result), str)
    except Exception:
        return False


def compare(result: cache.Result, renderers: Iterable[Callable[[cache.Result], str]]) -> str:
    """The same tables and figures drawn from each recorded machine's result, in tabs; stale or missing
    recordings named. Empty when no other machine is recorded, or for results that do not depend on time. Shown
    inside the result's code panel."""
    # a panel's drawing code also lists derivations (they return numbers, not Markdown) and drawers that need more
    # than the result (curves(result, order)): only a drawer that takes the result alone and draws text is redrawn
    renderers = [r for r in renderers if _draws_from_result_alone(r)]
    if result.exp is None or not result.timing or not renderers:
        return ""
    renderers = [r for r in renderers if _draws(r, result)]  # a drawer listed for a panel that draws another result
    shown, missing = [], []
    for rec in others():
        recorded, why = cache.from_recording(rec, result.exp, result.params)
        if recorded is None:
            missing.append(why)
            continue
        try:
            drawn = [renderer(recorded) for renderer in renderers]
            body = "\n".join(_html(text) for text in drawn if isinstance(text, str))
            if not body.strip():
                continue  # every drawer here derives numbers: the panel lists its code, nothing to redraw
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
    # inside the result's code panel (provenance.code_panel), whose sources load when it opens: provenance is one
    # click away, never a box in the page's prose
    return ('\n<details class="abstract pitfalls-machines"><summary>'
            + t("The same measured on other machines: {labels}", labels=html.escape(labels))
            + f"</summary>\n{chr(10).join(parts)}\n</details>\n")


def elsewhere(outcome) -> list[tuple[str, Any]]:
    """The check behind ``outcome`` evaluated on each recorded machine's results: [(label, Check or reason)]."""
    return rechecked(outcome, others())


def across_releases(outcome) -> list[tuple[Recording, Any]]:
    """The check behind ``outcome`` evaluated on each of this machine's other releases (``releases``):
    [(recording, Check or reason)], oldest torch first."""
    found = {rec.label: rec for rec in releases()}
    return [(found[label], verdict) for label, verdict in rechecked(outcome, list(found.values()))]


def rechecked(outcome, recorded: list[Recording]) -> list[tuple[str, Any]]:
    """The check behind ``outcome`` evaluated on each recording of ``recorded`` in place of this build's
    results: [(label, Check or reason)]."""
    if outcome.rerun is None:
        return []
    args, kwargs = outcome.args
    results = [a for a in list(args) + list(kwargs.values()) if isinstance(a, cache.Result) and a.exp is not None]
    if not results:
        return []
    out = []
    for rec in recorded:
        swapped: dict[int, cache.Result] = {}
        for original in results:  # at least one: why is set before it is read
            recorded, why = cache.from_recording(rec, original.exp, original.params)
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


def freshness(rec: Recording) -> tuple[int, int]:
    """How many of ``rec``'s experiments this build can use (recorded from today's code) and how many are stale."""
    current = sum(1 for name, sources in rec.manifest["experiments"].items()
                  if (exp := cache.find_experiment(name)) is not None
                  and cache.source_digest(exp.func) in (sources if isinstance(sources, list) else [sources]))
    return current, len(rec.manifest["experiments"]) - current


def overview() -> str:
    """The Environment page's table of recorded machines: what each is, when and from which commit it was
    recorded, and how many of its results this build could use (the rest are stale: recorded with older code)."""
    found = recordings()
    left_out = "".join("\n" + t("Left out: {folder} ({why})", folder=_plain(f"results/{name}/"), why=_plain(why))
                       + "\n" for name, why in refused())
    if not found:
        return t("No machine is recorded in `results/` yet: this build shows this machine only. "
                 "`make record MACHINE=<label>` records yours.") + "\n" + left_out
    lead = primary().label if frozen() else None
    fp = None if frozen() else environment.fingerprint()
    tabs = {rec.label for rec in others()}
    versions = {rec.label for rec in releases()}
    rows = []
    for rec in found:
        current, stale = freshness(rec)
        role = ("this build's results" if rec.label == lead or rec.fingerprint == fp else
                "shown beside them" if rec.label in tabs else
                "another torch release of this machine (Torch versions page)" if rec.label in versions else
                "another release of a machine shown beside them")
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

def _git(*args: str) -> str:
    # git's own words in an error, whatever the locale: the rest of the message is English
    return subprocess.run(["git", *args], cwd=store.PROJECT_ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "LC_ALL": "C"}).stdout


def tree_state() -> tuple[str, list[str]]:
    """The commit the working tree is at, and what differs from it outside ``results/`` (changed, staged and
    untracked files git does not ignore). An ``ArchiveError`` when the tree is not a git checkout: nothing is
    recorded from a tree nobody could check out again."""
    try:
        head = _git("rev-parse", "--verify", "HEAD").strip()
        changed = [line[3:] for line in _git("status", "--porcelain", "--untracked-files=all", "--", ".",
                                             ":(exclude)results").splitlines() if line.strip()]
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)  # git's words, else the command's status
        raise ArchiveError(f"cannot find the commit this tree is at ({detail.strip()}): a recording "
                           f"names the commit it was measured at, so it must be made in a git checkout") from None
    return head, changed


def diff_digest(changed: list[str]) -> str:
    """16 hex digits naming the working tree's changes from its commit: the diff of tracked files and the content
    of untracked ones."""
    digest = hashlib.sha256(_git("diff", "HEAD", "--binary", "--", ".", ":(exclude)results").encode())
    for name in sorted(changed):
        path = store.PROJECT_ROOT / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "manifest.json"}


@dataclass(frozen=True)
class Recorded:
    """What ``record`` did: the folder, how many results it measured and carried over, and whether anything
    changed."""

    target: Path
    measured: int
    carried: int
    changed: bool


def record(label: str, *, replace: bool = False, refresh: bool = False, allow_dirty: bool = False,
           build: Callable[[Path, dict], None] | None = None) -> Recorded:
    """Bring ``results/<label>/`` up to date with today's code: every result and notebook the site uses that the
    recording lacks, or holds from other code, is measured; the rest is carried over unchanged (``refresh``:
    everything is measured again). Made in a staging folder outside ``results/`` and swapped in whole, or not at
    all: an interrupted recording leaves the previous one as it was. (``build``: the site build, replaceable for
    tests.)"""
    if not LABEL.match(label or ""):
        raise ArchiveError(f"MACHINE={label!r} is not a usable label: use lower-case letters, digits, '.', '_' and "
                           f"'-', starting with a letter or digit, at most 63 characters (for example "
                           f"MACHINE=laptop-m2 or MACHINE=a100-80gb)")
    head, changed = tree_state()
    if changed and not allow_dirty:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise ArchiveError(f"the working tree has uncommitted changes or untracked files since commit {head[:12]} "
                           f"({shown}): a recording must come from a commit anyone can check out. Commit first, or "
                           f"record anyway with make record MACHINE={label} ALLOW_DIRTY=1 (the manifest then names "
                           f"the digest of the changes)")
    commit = f"{head}-dirty-{diff_digest(changed)}" if changed else head
    root = results_dir()
    target = root / label
    fp = environment.fingerprint()
    previous = None
    if target.exists():
        old = load(target)
        if old.fingerprint != fp and not replace:
            differ = ", ".join(f"{k}: {old.fingerprint.get(k)!r} there, {fp.get(k)!r} here"
                               for k in sorted(set(fp) | set(old.fingerprint)) if old.fingerprint.get(k) != fp.get(k))
            raise ArchiveError(f"results/{label}/ was recorded in another environment ({differ}); choose another "
                               f"MACHINE=… or replace it with make record MACHINE={label} REPLACE=1")
        previous = old if old.fingerprint == fp and not refresh else None
    staging_root = store.cache_dir().parent / "recording"  # beside the result cache, outside results/
    staging_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=staging_root))
    try:
        env = {**os.environ, "PITFALLS_RECORD": str(staging),
               "PITFALLS_RECORD_PREVIOUS": str(target) if previous is not None else ""}
        env.pop("FROZEN", None)
        env.pop("REFRESH", None)
        if refresh:
            env["REFRESH"] = "1"
        (build or _build)(staging, env)
        experiments: dict[str, dict] = {}
        for path in sorted(staging.glob("*/*.json")):
            entry = json.loads(path.read_text(encoding="utf-8"))
            experiments.setdefault(entry["experiment"], {})[path.stem] = entry["source"]
        if not experiments:
            raise ArchiveError("the build ran no experiment: nothing to record")
        notebooks = {p.name.removesuffix(".source-digest"): p.read_text(encoding="utf-8").strip()
                     for p in sorted((staging / "notebooks").glob("*.source-digest"))}
        for digest_file in (staging / "notebooks").glob("*.source-digest"):
            digest_file.unlink()
        digests = {name: sorted(set(sources.values()))[0] if len(set(sources.values())) == 1
                   else sorted(set(sources.values())) for name, sources in experiments.items()}
        new_files = _files(staging)
        old_files = _files(target) if previous is not None else {}
        results = [name for name in new_files if not name.startswith("notebooks/")]
        carried = sum(1 for name in results if old_files.get(name) == new_files[name])
        if previous is not None and new_files == old_files and previous.manifest["experiments"] == digests \
                and previous.manifest.get("notebooks", {}) == notebooks:
            return Recorded(target, 0, carried, False)  # nothing new: the recording is left as it is
        manifest = {"format": FORMAT, "label": label, "fingerprint": fp,
                    "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit,
                    "python": sys.version.split()[0], "experiments": digests, "notebooks": notebooks}
        store.store_text(staging / "manifest.json", store.dump(manifest))
        _swap(staging, target, staging_root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        store.forget()
    return Recorded(target, len(results) - carried, carried, True)


def _swap(staging: Path, target: Path, aside: Path) -> None:
    """``staging`` becomes ``target`` in whole: the old recording moves aside first, comes back if the new one
    cannot take its name, and goes once it has."""
    target.parent.mkdir(parents=True, exist_ok=True)
    old = aside / f"old-{target.name}-{os.getpid()}"
    if target.exists():
        shutil.move(target, old)
    try:
        shutil.move(staging, target)
    except BaseException:
        if old.exists() and not target.exists():
            shutil.move(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _build(staging: Path, env: dict) -> None:
    with tempfile.TemporaryDirectory(prefix="pitfalls-record-site-") as site:
        process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", site],
                                 cwd=store.PROJECT_ROOT, env=env)
    if process.returncode != 0:
        raise ArchiveError("the site did not build, so nothing was recorded (the build's errors are above)")


def _results(count: int) -> str:
    return f"{count} result{'' if count == 1 else 's'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make record", description="Record this machine's results into results/<label>/: what is missing or "
                                        "was measured by other code is measured, the rest is kept as it is.")
    parser.add_argument("label", help="the machine's label, e.g. laptop-m2 (MACHINE=…)")
    parser.add_argument("--replace", action="store_true", help="replace a recording made on another machine")
    parser.add_argument("--refresh", action="store_true", help="measure everything again (REFRESH=1)")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="record from a tree with uncommitted changes (ALLOW_DIRTY=1); the manifest names "
                             "their digest")
    args = parser.parse_args(argv)
    try:
        done = record(args.label, replace=args.replace, refresh=args.refresh, allow_dirty=args.allow_dirty)
    except ArchiveError as error:
        print(f"make record: {error}", file=sys.stderr)
        return 2
    shown = store.shown_path(done.target)
    if not done.changed:
        print(f"{shown}/ is up to date: nothing measured; its {_results(done.carried)} kept as recorded.")
        return 0
    files = sum(1 for p in done.target.rglob("*") if p.is_file())
    print(f"Recorded {shown}/: {_results(done.measured)} measured, {done.carried} carried over; {files} files, "
          f"{_size(done.target) / 1024:.0f} KiB. Commit the folder to share it (git add {shown}).")
    return 0
