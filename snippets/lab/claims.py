"""Claims as code: a sentence on a page that states a measured fact, checked when the page is built.

A *check* is a named condition on a measured result, written in a page package's ``checks.py``::

    @check("the DataLoader epoch takes more than 3x as long as the direct one")
    def dataloader_slower(result):
        ratio = result["rows"]["DataLoader"]["median"] / result["rows"]["direct"]["median"]
        return ratio > 3, {"ratio": ratio}

Calling it returns a :class:`Check` (holds or not, the values it measured). The *sentence* a reader sees is the
page's, in the page's language, with the measured values injected::

    print(say(checks.dataloader_slower(result), "The DataLoader run takes {ratio:.1f}× as long."))

``say`` fails the build, naming the page, the check, its condition and the values, when the check does not
hold; otherwise it marks the sentence as checked, with the condition and the values in its hover/tap text.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from . import context, i18n, machines
from .cache import Result
from .i18n import t


class ClaimError(AssertionError):
    """A page states something the measurement contradicts."""


@dataclass(frozen=True)
class Check:
    """The outcome of one check on one result."""

    name: str
    condition: str
    holds: bool | None  # None: a timing check whose interval straddles its threshold (undecided)
    values: dict[str, Any] = field(default_factory=dict)
    # The check and what it was given: ``say`` re-runs it on recorded machines' results (snippets.lab.machines).
    rerun: Callable[..., "Check"] | None = field(default=None, compare=False, repr=False)
    args: tuple = field(default=((), {}), compare=False, repr=False)

    @property
    def status(self) -> str:
        return {True: "holds", False: "fails", None: "undecided"}[self.holds]

    def measured(self) -> str:
        """The values, readable: ``ratio = 7.73, epochs = 2,000``."""
        comma = "，" if i18n.language() == "zh" else ", "
        return comma.join(f"{key} = {show_value(value)}" for key, value in self.values.items()) or "—"


def check(condition: str, *, timing: bool = False) -> Callable[[Callable[..., tuple[bool, dict]]], Callable[..., Check]]:
    """Declare a check: the decorated function returns ``(holds, values)``; ``condition`` says what must hold.

    A ``timing=True`` check decides from an interval (``snippets.lab.timing.decide``) and may return
    ``holds=None``: its interval straddles the threshold, so noise cannot decide it. Its values should include
    ``low`` and ``high``, the interval shown to the reader.
    """
    if not condition or not isinstance(condition, str):
        raise TypeError("check() needs the condition in words, e.g. @check('ratio > 3')")

    def wrap(func: Callable[..., tuple[bool, dict]]) -> Callable[..., Check]:
        page = func.__module__.removeprefix("snippets.experiments.").removesuffix(".checks")
        name = f"{page}.{func.__name__}"

        @functools.wraps(func)
        def run_check(*args: Any, **kwargs: Any) -> Check:
            outcome = func(*args, **kwargs)
            if not (isinstance(outcome, tuple) and len(outcome) == 2 and isinstance(outcome[1], dict)):
                raise TypeError(f"check {name} must return (holds, values), got {outcome!r:.200}")
            holds, values = outcome
            if not isinstance(holds, bool) and not (timing and holds is None):
                raise TypeError(f"check {name}: holds must be a bool{' or None' if timing else ''}, "
                                f"got {type(holds).__name__}")
            return Check(name=name, condition=condition, holds=holds, values=dict(values), rerun=run_check,
                         args=(args, kwargs))

        run_check.check_name = name  # type: ignore[attr-defined]
        run_check.timing = timing  # type: ignore[attr-defined]
        run_check.condition = condition  # type: ignore[attr-defined]
        return run_check

    return wrap


def topic_checks() -> dict[str, Callable[..., Check]]:
    """Every check of every topic (``snippets/experiments/<topic>/checks.py``), by name: what the tests feed a
    contradicting result. Found in the topics' modules as they are, not kept in a registry that outlives them."""
    from .cache import topic_modules

    return {value.check_name: value for topic, module in topic_modules("checks").items()
            for value in vars(module).values()
            if isinstance(getattr(value, "check_name", None), str) and value.check_name.startswith(f"{topic}.")}


def _numbers_only(value: Any) -> bool:
    """Whether ``value`` is a number, or a list of numbers (lists of lists of numbers included)."""
    if isinstance(value, (list, tuple)):
        return all(_numbers_only(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def show_value(value: Any) -> str:
    """A measured value as a reader reads it: 4 significant figures, thousands separators, yes/no."""
    if value is None:  # a value that could not be computed: a bound with too few repeats for an interval
        return t("n/a")
    if isinstance(value, bool):
        return t("yes") if value else t("no")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        # 4 significant figures switch to an exponent from 10,000 up and below 0.0001 (nan and inf as such);
        # a value that rounds up to 1,000 gets its separator like 1,000.0 does.
        return f"{value:,.4g}"
    if isinstance(value, (list, tuple)):
        # numbers as code writes them, in either language: [2048, 1], never [2,048、1]; words in the page's
        # language, joined as it joins them: [yes, no], [是、否]
        numbers = _numbers_only(value)
        shown = [str(v) if isinstance(v, int) and not isinstance(v, bool) else show_value(v) for v in value[:6]]
        comma = "、" if i18n.language() == "zh" and not numbers else ", "
        return "[" + comma.join(shown) + (comma + "…" if len(value) > 6 else "") + "]"
    if isinstance(value, dict):
        comma, colon = ("，", "：") if i18n.language() == "zh" else (", ", ": ")
        return "{" + comma.join(f"{show_value(k)}{colon}{show_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str) and i18n.language() != i18n.DEFAULT and i18n.needs_translation(value):  # a label ("the CPU") in the page's
        found = i18n.translate(value, i18n.language(), context.current().used)  # language where it has one;
        return value if found is None else found  # other text measured (an operation's name) stays as it is
    return str(value)


def _where() -> str:
    page = context.current().page
    return f" on page docs/{page}" if page else ""


def say(outcome: Check, sentence: str) -> str:
    """``sentence`` with the check's values filled in, marked as checked; fails the build if it does not hold."""
    if not isinstance(outcome, Check):
        raise TypeError(f"say() takes the Check a check returned, got {type(outcome).__name__}{_where()}")
    # a sentence a page wraps over several lines reads as one (a Chinese page's breaks between characters are gone)
    sentence = re.sub(r"[ \t]*\n\s*", " ", sentence)
    try:
        # words a check measured ("the CPU") read in the page's language; numbers and code stay as they are
        text = sentence.format(**{key: t(value) if isinstance(value, str) else value
                                  for key, value in outcome.values.items()})
    except (KeyError, IndexError, ValueError) as error:
        raise ClaimError(f"Claim{_where()} cannot be written: the sentence {sentence!r} uses {error} but check "
                         f"{outcome.name} measured only: {', '.join(outcome.values) or 'nothing'}") from None
    # where the same check holds or fails on the recorded machines: in the tip, one tap away, never in the prose
    verdicts = machines.elsewhere(outcome)
    by_release = machines.across_releases(outcome)
    others = _on_other_machines(verdicts) + on_releases(outcome, by_release)
    context.current().said.append({"page": context.current().page, "check": outcome.name,
                                   "condition": outcome.condition, "here": outcome, "releases": by_release})
    source = _provenance(outcome)
    if outcome.holds is None:
        why = _undecided_because(outcome.values)
        tip = t("Undecided on this machine: whether {condition} cannot be told, {why}. Measured: "
                "{measured}.{source} Re-measure on a quiet machine: REFRESH=timing make build.",
                condition=t(outcome.condition), why=why, measured=outcome.measured(), source=source)
        return _marked(outcome, (f"{text}<em>——{t('undecided on this machine')}：{why}</em>" if i18n.language() == "zh" else
                                f"{text} <em>— {t('undecided on this machine')}: {why}</em>"), tip + others,
                       "pitfalls-claim pitfalls-claim--undecided")
    if not outcome.holds:
        message = (f"Claim contradicted{_where()}: check {outcome.name} ({outcome.condition}) does not hold — "
                   f"measured: {outcome.measured()} — sentence: {text!r}")
        build = context.current()
        if not build.collect_contradictions:
            raise ClaimError(message)
        # In a build of several languages the same check fails once, naming every page that states it.
        build.contradicted.append({"check": outcome.name, "condition": outcome.condition,
                                   "measured": outcome.measured(), "page": build.page, "sentence": text})
        return _marked(outcome, f"{text} <em>— {t('contradicted by this build')}</em>", message + others,
                       "pitfalls-claim pitfalls-claim--contradicted")
    tip = t("Checked when this page was built: {condition}. Measured: {measured}.{source}",
            condition=t(outcome.condition), measured=outcome.measured(), source=source)
    fails_elsewhere = any(isinstance(other, Check) and other.holds is False
                          for _, other in [*verdicts, *by_release])
    return _marked(outcome, text, tip + others, "pitfalls-claim", fails_elsewhere=fails_elsewhere)


def _undecided_because(values: dict) -> str:
    """Why a timing check decided nothing, in the page's language: there was no interval, or the interval (widened
    for a busy or drifting machine, ``timing.widened``) straddles the threshold (the sentence shows it)."""
    if values.get("low") is None or values.get("high") is None:
        return t("too few repeats for an interval")
    return t("its interval reaches both sides of the threshold")


def _marked(outcome: Check, text: str, tip: str, classes: str, *, fails_elsewhere: bool = False) -> str:
    """The sentence, focusable, and its tip: the browser's tooltip (its title) while the pointer rests on it, and
    on a tap, click, Enter or Space (``assets/claims.js`` toggles it); screen readers read it as the sentence's
    description.
    A check that holds here and fails on a recorded machine is marked so (its ✓ says "here"); the tip says where."""
    build = context.current()
    number = build.claims[build.page] = build.claims.get(build.page, 0) + 1
    tip_id = f"claim-tip-{number}"
    escaped = html.escape(tip)
    # in an attribute, Markdown's inline syntax must stay text (`code` would become a <code> tag inside it)
    title = escaped.translate({ord("`"): "&#96;", ord("_"): "&#95;", ord("*"): "&#42;", ord("["): "&#91;",
                               ord("]"): "&#93;"})
    if fails_elsewhere:
        classes += " pitfalls-claim--fails-elsewhere"
    # title: a pointer resting on the claim gets the tip as the browser's tooltip; the tip itself opens on a tap,
    # a click or the keyboard (and is what a screen reader reads, through aria-describedby)
    return (f'<span class="{classes}" tabindex="0" role="button" aria-expanded="false" aria-describedby="{tip_id}" '
            f'title="{title}" data-check="{html.escape(outcome.name)}">{text}</span>'
            f'<span class="pitfalls-claim__tip" id="{tip_id}" hidden>{escaped}</span>')


def _provenance(outcome: Check) -> str:
    """Where the measured values come from: the experiments behind the check and the machine that ran them."""
    args, kwargs = outcome.args
    results = [a for a in [*args, *kwargs.values()] if isinstance(a, Result)]
    if not results:
        return ""
    names = ", ".join(dict.fromkeys(r.experiment for r in results))
    return t(" From {names}, measured with {stamp}.", names=names, stamp=i18n.stamp(results[0].stamp))


def _on_other_machines(verdicts: list[tuple[str, Any]]) -> str:
    """Where the same check holds, fails or cannot be told on the recorded machines, as a sentence of the claim's
    tip (plain text: the tip escapes it). A check that fails on a recorded machine is said failing there, with its
    values; it never fails the build, which answers for the machine that is building only. ``verdicts`` is what
    ``machines.elsewhere`` returns."""
    if not verdicts:
        return ""
    groups: dict[str, list[str]] = {"holds": [], "fails": [], "undecided": [], "unknown": []}
    zh = i18n.language() == "zh"
    for label, other in verdicts:
        if isinstance(other, Check):
            shown = label if other.holds else (f"{label}（{other.measured()}）" if zh else f"{label} ({other.measured()})")
            groups[other.status].append(shown)
        else:
            groups["unknown"].append(f"{label}（{other}）" if zh else f"{label}: {other}")
    parts = [t(f"{word} on {{machines}}", machines=i18n.joined(groups[key])) for key, word in
             (("holds", "holds"), ("fails", "fails"), ("undecided", "undecided"))
             if groups[key]]
    if groups["unknown"]:
        parts.append(t("not checked on {machines}", machines=i18n.joined(groups["unknown"], clauses=True)))
    space = "" if zh else " "  # after the sentence before it; Chinese puts no space there
    return space + t("Recorded machines: {verdicts}.", verdicts=i18n.joined(parts, clauses=True))



def release_verdict(outcome: Any) -> str:
    """One release's verdict, short: ✓, ✗ with the values measured, ? (undecided), or — (not checked)."""
    if not isinstance(outcome, Check):
        return "—"
    return {"holds": "✓", "undecided": "?"}.get(outcome.status) or f"✗ {outcome.measured()}"


def on_releases(outcome: Check, by_release: list[tuple[Any, Any]]) -> str:
    """The claim's verdict on each recorded torch release of this machine, this build's among them, as a sentence
    of its tip: ``By torch release on this machine: 2.3.1 ✓, 2.9.1 ✗ ratio = 2.1, 2.13.0 ✓ (this build).``
    Empty when no other release is recorded, or when every release checked gives this build's verdict (the
    Versions page lists them all, and those where it was not checked): a tip names releases only where they
    differ."""
    if not by_release or all(not isinstance(verdict, Check) or verdict.status == outcome.status
                             for _, verdict in by_release):
        return ""
    zh = i18n.language() == "zh"
    rows = [(machines.short_release(rec.fingerprint["torch"]), release_verdict(verdict)) for rec, verdict in by_release]
    rows.append((machines.this_release(), f"{release_verdict(outcome)}{t(' (this build)')}"))
    items = [f"{version} {verdict}" for version, verdict in sorted(rows, key=lambda row: machines.release(row[0]))]
    return ("" if zh else " ") + t("By torch release on this machine: {verdicts}.",
                                   verdicts=i18n.joined(items, clauses=True))


# A claim that starts a sentence: after the start of a paragraph or list item, or after a full stop.
_SENTENCE_START_CLAIM = re.compile(r'((?:<p>|<li>|<td>|[.!?]\s+)(?:<[a-z]+>)*)(<span class="pitfalls-claim[^"]*"[^>]*>)([a-z])')


def capitalised(page_html: str) -> str:
    """English claims that start a sentence, with a capital: a claim's sentence is written to be usable inside
    another one ("…, and so are the final weights"), so where it stands decides its first letter."""
    return _SENTENCE_START_CLAIM.sub(lambda m: m.group(1) + m.group(2) + m.group(3).upper(), page_html)
