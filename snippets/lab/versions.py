"""Torch releases side by side: every claim of the site checked on each release recorded on this machine.

A *release* of a machine is a recording that differs from this build's fingerprint in its software only
(``machines.SOFTWARE``: torch, Python, start method), made with ``make record-release TORCH=X MACHINE=<label>``.
Each claim a page says is checked here and, with the recording's results in place of this build's, on every
release (``machines.across_releases``); ``claims.say`` keeps what it found in the build (``Build.said``), and the
Versions page shows it whole: a matrix of claims by release (``matrix``), the releases themselves (``table``), and
the first recorded release where a verdict, or a measured fact, changed (``first_change``).

The matrix is drawn after every page of the build has said its claims: the Versions page prints ``MARKER``, and the
MkDocs plugin puts the matrix in its place once the pages are rendered (``filled``).
"""

from __future__ import annotations

import html
from pathlib import PurePosixPath
from typing import Any, Callable

from . import cache, context, i18n, machines
from .claims import Check, release_verdict
from .i18n import t

MARKER = '<div class="pitfalls-version-matrix" data-pending="1"></div>'


def placeholder() -> str:
    """Where the Versions page wants the matrix (``filled`` replaces it when every page has been rendered)."""
    return MARKER


def names() -> dict[str | None, str]:
    """Each release's name, by recording label (None: this build): its torch release (``2.13.0``), and its Python
    too (``2.15.0 · Python 3.13``) where two releases share a torch release."""
    found = {rec.label: rec.fingerprint for rec in machines.releases()}
    found[None] = machines._lead_fingerprint()
    torch_of = {label: machines.short_release(fp["torch"]) for label, fp in found.items()}
    shared = {version for version in torch_of.values() if list(torch_of.values()).count(version) > 1}
    return {label: f"{version} · Python {found[label].get('python', '?')}" if version in shared else version
            for label, version in torch_of.items()}


def _order(label: str | None) -> tuple:
    fp = machines._lead_fingerprint() if label is None else \
        next(rec.fingerprint for rec in machines.releases() if rec.label == label)
    return machines.release(fp["torch"]), str(fp.get("python", ""))


def by_release(result: cache.Result) -> list[tuple[str, str | None, cache.Result | str]]:
    """``result`` as each release of this machine measured it, oldest first, this build's among them:
    [(release's name, label or None for this build, Result or why it is missing)]."""
    named = names()
    rows: list[tuple[tuple, str, str | None, cache.Result | str]] = []
    if result.exp is not None:
        for rec in machines.releases():
            recorded, why = cache.from_recording(rec, result.exp, result.params)
            rows.append((_order(rec.label), named[rec.label], rec.label, recorded if recorded is not None else why))
    rows.append((_order(None), named[None], None, result))
    return [(version, label, found) for _, version, label, found in sorted(rows, key=lambda row: row[0])]


def changes_of(values: list[tuple[str, Any]]) -> list[tuple[str, Any, str, Any]]:
    """Every place, in release order, where a value differs from the one before it:
    ``(release before, its value, first release with the new value, the new value)``."""
    return [(before, old, after, new) for (before, old), (after, new) in zip(values, values[1:]) if old != new]


def first_change(values: list[tuple[str, Any]]) -> tuple[str, Any, str, Any] | None:
    """The first of ``changes_of(values)``; None if all agree."""
    return next(iter(changes_of(values)), None)


def facts_by_release(result: cache.Result, fact: Callable[[cache.Result], Any]) -> list[tuple[str, Any]]:
    """``fact`` of ``result`` on each release that measured it (releases without it are left out)."""
    return [(version, fact(found)) for version, _, found in by_release(result) if isinstance(found, cache.Result)]


def facts_table(facts: list[tuple[str, cache.Result, Callable[[cache.Result], Any]]]) -> str:
    """A table of measured facts by release: for each ``(label, result, fact)``, ``fact`` of ``result`` on every
    release of this machine (— where a release did not measure it), and the first recorded release with a new
    value. Markdown."""
    from .render import table as markdown_table

    named = names()
    columns = sorted(named, key=_order)  # recording labels, None for this build
    found: list[tuple[str, dict[str | None, Any]]] = []
    for label, result, fact in facts:
        values = {recording: fact(recorded) for _, recording, recorded in by_release(result)
                  if isinstance(recorded, cache.Result)}
        found.append((label, values))
    rows = []
    for label, values in found:
        # a release that could not measure it (None) is no change
        change = first_change([(named[v], values[v]) for v in columns if values.get(v) is not None])
        rows.append([label, *[_fact(values[v]) if v in values else "—" for v in columns],
                     change[2] if change else "—"])
    return markdown_table(["measured", *[named[v] for v in columns], "first release with a new value"], rows,
                          align="l" + "c" * len(columns) + "l")


def results_of(facts: list[tuple[str, cache.Result, Callable[[cache.Result], Any]]]) -> list[cache.Result]:
    """Each result ``facts`` are read from, once, in their order: the code panels below the facts table."""
    shown: list[cache.Result] = []
    for _, result, _ in facts:
        if all(result is not other for other in shown):
            shown.append(result)
    return shown


def _fact(value: Any) -> Any:
    """A measured fact as a table cell: a truth value as yes or no (the table translates it), a
    string as code (a start method, a name), a number with its separators, nothing as —."""
    from .claims import show_value

    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"  # the table says it in the page's language
    if isinstance(value, str):
        return f"`{machines._plain(value)}`"
    return show_value(value)


def table() -> str:
    """The releases of this machine: torch, Python, start method, label, date, commit and how many of each
    recording's results this build could use."""
    lead = machines._lead_fingerprint()
    rows = [(machines.this_release(), [machines._plain(lead.get("python", "")),
                                       machines._plain(lead.get("start_method", "")), "this build", "", "", ""])]
    for rec in machines.releases():
        current, stale = machines.freshness(rec)
        fp = rec.fingerprint
        rows.append((machines.short_release(fp["torch"]), [
            machines._plain(fp.get("python", "")), machines._plain(fp.get("start_method", "")), f"`{rec.label}`",
            machines._plain(rec.manifest["recorded_at"][:10]), f"`{rec.commit[:12]}`", f"{current} current, {stale} stale"]))
    rows.sort(key=lambda row: machines.release(row[0]))
    from .render import table as markdown_table

    return markdown_table(["torch", "Python", "start method", "recording", "recorded", "commit", "experiments"],
                          [[f"`{machines._plain(torch)}`", *cells] for torch, cells in rows], align="lllllll")


def _rows(said: list[dict]) -> list[dict]:
    """The claims said in this build, each once (a claim said on two pages with the same values is one row)."""
    rows: dict[tuple, dict] = {}
    for entry in said:
        here: Check = entry["here"]
        key = (entry["check"], here.measured(),
               tuple((rec.label, release_verdict(verdict)) for rec, verdict in entry["releases"]))
        if key not in rows:
            rows[key] = {**entry, "pages": [entry["page"]]}
        elif entry["page"] not in rows[key]["pages"]:
            rows[key]["pages"].append(entry["page"])
    return list(rows.values())


def _status(outcome: Any) -> str:
    return outcome.status if isinstance(outcome, Check) else "unknown"


def changes(row: dict) -> list[tuple[str, str, str, str]]:
    """Where a claim's verdict changes between recorded releases, in release order, releases that decided nothing
    skipped: [(release before, its status, first release with the new status, the new status)]."""
    verdicts = [(machines.short_release(rec.fingerprint["torch"]), _status(verdict)) for rec, verdict in row["releases"]]
    verdicts.append((machines.this_release(), _status(row["here"])))
    return changes_of([(version, status) for version, status in sorted(verdicts, key=lambda v: machines.release(v[0]))
                       if status in ("holds", "fails")])


def _page_link(page: str | None) -> str:
    """A link from the Versions page (``versions/`` or ``zh/versions/``) to ``page`` (``zh/seeding-order.md``)."""
    if not page:
        return ""
    name = PurePosixPath(page).stem
    return f"../{'' if name == 'index' else name + '/'}"


def matrix(said: list[dict]) -> str:
    """Every claim said in this build, by release: ✓ holds, ✗ fails (with what was measured), ? undecided,
    — not checked there (the reason in the cell's title); and, last, where the verdict changed. HTML."""
    rows = _rows(said)
    if not rows:
        return "<p>" + html.escape(t("No claim was said in this build.")) + "</p>"
    named = names()
    columns = [(None, label, named[label]) for label in sorted(named, key=_order)]
    head = "".join(f'<th scope="col">{html.escape(version)}'
                   + (f'<br><span class="pitfalls-version-matrix__here">{html.escape(t("this build"))}</span>'
                      if label is None else "") + "</th>" for _, label, version in columns)
    body = []
    changed = 0
    for row in rows:
        verdict_of = {rec.label: verdict for rec, verdict in row["releases"]}
        cells = []
        for _, label, version in columns:
            verdict = row["here"] if label is None else verdict_of.get(label, t("not recorded"))
            shown = release_verdict(verdict)
            why = verdict if isinstance(verdict, str) else verdict.measured()
            status = _status(verdict)
            cells.append(f'<td class="pitfalls-version-matrix__{status}" title="{html.escape(str(why))}">'
                         f"{html.escape(shown)}</td>")
        moved = changes(row)
        changed += bool(moved)
        change = i18n.joined([t("{new} from {after} ({old} on {before})", new=t(new), after=after, old=t(old),
                                before=before) for before, old, after, new in moved], clauses=True) or "—"
        pages = " ".join(f'<a href="{_page_link(page)}">{html.escape(_page_title(page))}</a>' for page in row["pages"])
        body.append(f'<tr data-check="{html.escape(row["check"])}"><th scope="row">{html.escape(t(row["condition"]))}<br>'
                    f'<span class="pitfalls-version-matrix__pages">{pages}</span></th>{"".join(cells)}'
                    f"<td>{html.escape(change)}</td></tr>")
    summary = t("{changed} of {total} claims change between the recorded releases.", changed=f"{changed:,}",
                total=f"{len(rows):,}")
    legend = t("✓ holds, ✗ fails (with what was measured), ? undecided (the interval, widened where the machine "
               "was busy, reaches both sides of its bound), — not checked on that release (not recorded, or "
               "recorded with older code: the cell's tip says which).")
    return (f'<p>{html.escape(summary)} {html.escape(legend)}</p>\n'
            f'<div class="pitfalls-version-matrix">'
            f'<table><thead><tr><th scope="col">{html.escape(t("claim"))}</th>{head}'
            f'<th scope="col">{html.escape(t("changed"))}</th></tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _page_title(page: str | None) -> str:
    """The page's title as this build's navigation gives it, in the page's language (its file name outside one)."""
    return (context.current().titles.get(page) or PurePosixPath(page).stem) if page else ""


def filled(output: str) -> str:
    """A rendered page with the matrix in place of ``MARKER`` (every page of the build has said its claims)."""
    if MARKER not in output:
        return output
    return output.replace(MARKER, matrix(context.current().said))
