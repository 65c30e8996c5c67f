"""The site's languages: which one the page being built is written in, and the words the lab and the renderers
print in it.

The pages are written in each language by hand (``docs/`` in English, ``docs/zh/`` in Chinese); their claims'
sentences are in the page. What the Python side prints — table headers and cells, figures' titles, labels and
legends, stamps, warnings, code panels' captions, claims' hover texts — is English in the source, and
:func:`t` gives it in the language of the page being built, from a gettext catalogue beside the code that prints
it (``zh.po`` in ``snippets/lab/`` and in each experiment's package, read with Babel: the English is the ``msgid``,
the translation the ``msgstr``). ``make translations`` (``tools/translations.py``) brings the catalogues up to date
with what a build prints, the usual gettext way: an entry whose English changed keeps its old translation, marked
fuzzy, and a strict build names every fuzzy or untranslated entry until a translator has checked it.

A catalogue key may hold fields, ``"{runs} runs"``: it then matches any text of that shape, and the fields it
captured are themselves translated and put into the translation (``"{runs} 次运行"``). A text that needs a
translation and has none is kept in English and remembered in the build context (``context.Build.missing``),
with the page that asked; the site's MkDocs plugin fails the build at that page, naming each.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable
from pathlib import Path

from . import context

LANGUAGES = {"en": "English", "zh": "简体中文"}
DEFAULT = context.DEFAULT_LANGUAGE

_ROOT = Path(__file__).resolve().parents[1]  # the snippets package
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
_CODE = re.compile(r"`[^`]*`|<code>.*?</code>|<[^>]+>|&\w+;")
# A token that reads the same in every language: a number with or without a unit, an identifier
# (snake_case, dotted.name, key=value, call(), CamelCase), an acronym (CPU, SGD), a symbol.
_KEPT = re.compile(r"""^[\W\d_]*(
      \S*\d\S*
    | (ms|µs|us|ns|s|min|GB/s|GiB|MiB|KiB|GB|MB|KB|lr)
    | (True|False|None|Python|NumPy|Matplotlib|PyTorch|Adam|AdamW|Linux|macOS|Windows)
    | [A-Za-z_][\w.]*[_.=(\[][\w.=()\[\],'"-]*
    | ([A-Z][a-z0-9]+){2,}[A-Za-z0-9]*
    | [A-Z][A-Z0-9]+s?
    | [a-z]+[A-Z]\w*
    | [a-z]
)[\W\d_]*$""", re.X)
_FIELD = re.compile(r"\{(\w+)\}")
NOTE_KINDS = ("reordered", "unused")


def _digits(text: str) -> list[str]:
    """The literal numbers of a catalogue text, outside its fields, in order of size (a translation may move them)."""
    return sorted(re.findall(r"\d+", _FIELD.sub(" ", text)), key=lambda d: (len(d), d))


def translation_problem(key: str, value: str, *, reordered: bool = False) -> str:
    """What is wrong with ``value`` as the translation of ``key``, or "" when nothing is: it must be a format
    string that parses, with only named fields, the key's fields and no other, first used in the key's order (another order only where the catalogue's notes say why: ``reordered``), and the same literal numbers (a wrong digit would print a wrong number in one
    language only; it may add one, as "3× below" reads "不到 1/3")."""
    from collections import Counter
    from string import Formatter

    try:
        named = [name for _, name, spec, conversion in Formatter().parse(value) if name is not None]
        Formatter().parse(key)
    except ValueError as error:
        return f"is not a valid template ({error})"
    if any(not re.fullmatch(r"\w+", name) or name.isdigit() for name in named):
        return f"has an unnamed or indexed field in {value!r}: every field is named, as in the key"
    ours, theirs = list(dict.fromkeys(_FIELD.findall(key))), list(dict.fromkeys(named))  # first uses, in order
    if set(ours) != set(theirs):
        return f"must use the same fields {sorted(ours)}, it has {sorted(theirs)}"
    if not reordered and ours != theirs:  # a swapped pair prints each value in the other's place
        return (f"puts its fields in the order {theirs}, the key in {ours}: keep the key's order, or give the entry a "
                "translator comment '# reordered: why'")
    missing = Counter(_digits(key)) - Counter(_digits(value))
    if missing:  # the translation may add a number ("3× below" is "1/3"), never lose or change one
        return (f"must keep the key's literal numbers {_digits(key)}, it lacks {sorted(missing.elements())}: a "
                "number that varies is a field")
    return ""


def catalogue_files(lang: str) -> list[Path]:
    """Every catalogue of ``lang`` in the package, in a fixed order."""
    return sorted(_ROOT.rglob(f"{lang}.po"))


@lru_cache(maxsize=None)
def _read(lang: str) -> tuple[tuple[Path, object], ...]:
    """Every catalogue of ``lang``, read by Babel: (path, Catalog)."""
    from babel.messages.pofile import PoFileError, read_po

    found = []
    for path in catalogue_files(lang):
        try:
            with path.open("rb") as stream:
                found.append((path, read_po(stream, abort_invalid=True)))
        except (PoFileError, UnicodeDecodeError, ValueError) as error:
            raise ValueError(f"{path}: not a valid gettext catalogue: {error}") from None
    return tuple(found)


def _notes_of(message, path: Path) -> dict[str, str]:
    """What an entry's translator comments say of it: ``# reordered: why`` and ``# unused: why`` (a line that starts
    with neither goes on the note above it, as a long comment wraps)."""
    found: dict[str, str] = {}
    kind = None
    for line in message.user_comments:
        if line.startswith("|"):  # the old English of a fuzzy entry ("#| msgid"), which Babel reads as a comment
            kind = None
            continue
        head, _, rest = line.partition(":")
        if head.strip() in NOTE_KINDS:
            kind = head.strip()
            found[kind] = rest.strip()
        elif kind is not None:
            found[kind] = f"{found[kind]} {line.strip()}".strip()
    empty = [kind for kind, why in found.items() if not why]
    if empty:
        raise ValueError(f"{path}: the note {empty[0]!r} on {message.id!r} gives no reason: each note says why")
    return found


@lru_cache(maxsize=None)
def notes(lang: str) -> dict[str, dict[str, str]]:
    """What the catalogues' translator comments say of some entries, each with its reason: "reordered" (the
    translation puts its fields in another order than the key, as the language needs) and "unused" (an entry no
    build on this machine prints, see :func:`unused`)."""
    found: dict[str, dict[str, str]] = {kind: {} for kind in NOTE_KINDS}
    for path, catalog in _read(lang):
        for message in catalog:
            if message.id:
                for kind, why in _notes_of(message, path).items():
                    found[kind][message.id] = why
    return found


@lru_cache(maxsize=None)
def pending(lang: str) -> dict[str, str]:
    """The entries a translator has still to see, each with what to do and where: fuzzy (its English changed since
    it was translated: ``make translations`` kept the old translation to check) or untranslated. The build uses
    none of them."""
    found = {}
    for path, catalog in _read(lang):
        for message in catalog:
            if message.id and (message.fuzzy or not message.string):
                state = ("is fuzzy: its English changed since it was translated; check the translation and remove "
                         "the fuzzy flag" if message.fuzzy else "has no translation yet")
                found[message.id] = f"{state} ({path.relative_to(_ROOT.parent).as_posix()})"
    return found


@lru_cache(maxsize=None)
def catalogue(lang: str) -> tuple[dict[str, str], tuple[tuple[re.Pattern, str, str], ...]]:
    """``lang``'s catalogue: exact texts, and the keys with fields as patterns (longest key first). Fuzzy and
    untranslated entries are left out (:func:`pending` names them)."""
    exact: dict[str, str] = {}
    where: dict[str, Path] = {}
    reordered = notes(lang)["reordered"]
    for path, catalog in _read(lang):
        for message in catalog:
            key, value = message.id, message.string
            if not key or message.fuzzy or not value:
                continue
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError(f"{path}: {key!r} has plural forms; the catalogue maps one English text to one "
                                 f"{lang} text")
            if key in exact and exact[key] != value:
                raise ValueError(f"{key!r} is translated twice, differently: in {where[key]} and {path}")
            problem = translation_problem(key, value, reordered=key in reordered)
            if problem:
                raise ValueError(f"{path}: the translation of {key!r} {problem}")
            exact[key], where[key] = value, path
    patterns = []
    for key in sorted((k for k in exact if _FIELD.search(k)), key=len, reverse=True):
        seen: set[str] = set()
        regex = ""
        for n, part in enumerate(_FIELD.split(key)):
            if n % 2 == 0:
                regex += re.escape(part)
            else:  # a field used twice matches the same text twice
                regex += f"(?P={part})" if part in seen else f"(?P<{part}>.+?)"
                seen.add(part)
        patterns.append((re.compile(regex + r"\Z", re.S), key, exact[key]))
    return exact, tuple(patterns)


def needs_translation(text: str) -> bool:
    """Whether ``text`` has words a reader of another language needs translated: not code, numbers,
    identifiers or acronyms, and not already written in Chinese."""
    if _CJK.search(text):
        return False
    plain = _CODE.sub(" ", text)
    return any(re.search(r"[A-Za-z]{2}", word) and not _KEPT.match(word) for word in plain.split())


def translate(text: str, lang: str, used: set[str] | None = None) -> str | None:
    """``text`` in ``lang`` from its catalogue, or None when the catalogue has no entry that matches it. The keys
    that matched are added to ``used``."""
    exact, patterns = catalogue(lang)
    if text in exact:
        if used is not None:
            used.add(text)
        return exact[text]
    for pattern, key, value in patterns:
        found = pattern.match(text)
        if not found:
            continue
        parts = {}
        for name, part in found.groupdict().items():
            parts[name] = translate(part, lang, used) if needs_translation(part) else part
            if parts[name] is None:  # "{a} of {b}" must not swallow a sentence nobody translated
                break
        else:
            if used is not None:
                used.add(key)
            return value.format(**parts)
    return None


@lru_cache(maxsize=None)
def translations(lang: str) -> frozenset[str]:
    """Every text ``lang``'s catalogue translates into: handed to :func:`t` again, one is translated twice."""
    exact, _ = catalogue(lang)
    return frozenset(value for key, value in exact.items() if value != key)


def sources(paths: Iterable[Path]) -> str:
    """The text of ``paths``, each string literal split over lines joined again."""
    return "\n".join(re.sub(r"""(["'])\s*\n\s*[rf]?\1""", "", path.read_text(encoding="utf-8")) for path in paths)


@lru_cache(maxsize=None)
def _source_text() -> str:
    """The project's pages and code: where a text that one machine never prints (``, wide``; a CUDA row) is still
    written."""
    return sources(sorted(_ROOT.rglob("*.py")) + sorted((_ROOT.parent / "docs").rglob("*.md")))


def written(key: str, source: str | None = None) -> bool:
    """Whether ``key`` is written in ``source`` (the project's code and pages by default): every literal part of
    it, fields aside."""
    parts = [part for part in _FIELD.split(key)[::2] if len(part.strip()) > 2]
    source = _source_text() if source is None else source
    return all(part in source for part in parts) if parts else key in source


def unused(lang: str, used: set[str]) -> list[str]:
    """The catalogue entries of ``lang`` that no text of a build matched (``used``) and that nothing in the
    project writes (a text printed on some machines only is written in the code that prints it), but those a
    catalogue's notes list under "unused" with the reason they can go unused (a text of the installed torch's own
    documentation, which changes between releases)."""
    exact, _ = catalogue(lang)
    conditional = set(notes(lang)["unused"])
    return sorted(key for key in exact if key not in used and key not in conditional and not written(key))


class Verbatim(str):
    """Text shown as it is in every language, never looked up in a catalogue: what a machine calls itself (its CPU,
    its GPU, its operating system), which no catalogue can list for every machine a rebuilder has."""


def t_in(lang: str, text: str, **fields) -> str:
    """``text`` in ``lang`` (English when ``lang`` is English, or ``text`` is ``Verbatim``), its ``{fields}``
    filled in afterwards."""
    out = text
    if lang != DEFAULT and text and not isinstance(text, Verbatim):
        build = context.current()
        found = translate(text, lang, build.used)
        if found is not None:
            out = found
        elif text in translations(lang):  # a translation handed back for translating: said, never hidden
            build.twice.setdefault((lang, text), set()).add(build.page or "?")
        elif needs_translation(text):
            build.missing.setdefault((lang, text), set()).add(build.page or "?")
    return out.format(**fields) if fields else out


def t(text: str, **fields) -> str:
    """``text`` in the language of the page being built; ``fields`` are filled in after translating."""
    return t_in(context.current().language, text, **fields)


def joined(items: Iterable[str], *, clauses: bool = False) -> str:
    """Items already in the language of the page being built, as a list: ``yes, no, yes``; ``是、否、是`` (clauses,
    each a phrase of its own: ``a; b``; ``a；b``). The items are not translated here: a caller translates each one
    (handed a translation again, ``t`` would say so)."""
    words = list(items)
    if language() == "zh":
        return ("；" if clauses else "、").join(words)
    return ("; " if clauses else ", ").join(words)


def count_or_none(count: int, none: str, some: str, **fields) -> str:
    """A count said in the page's language, zero in words of its own: ``differ at none of 2,000 epochs``,
    ``在全部 2,000 轮中完全一致`` (not "有 0 个不同"). ``none`` and ``some`` are catalogue keys; integers get
    thousands separators."""
    shown = {key: f"{value:,}" if isinstance(value, int) else value for key, value in fields.items()}
    return t(none if count == 0 else some, count=f"{count:,}", **shown)


def counted(count: int, one: str, many: str) -> str:
    """``count`` things in the page's language: ``1 batch``, ``2 batches``; ``2 个批次`` (``one`` and ``many`` are
    catalogue keys with a ``{count}`` field)."""
    return t(one if count == 1 else many, count=f"{count:,}")


def language() -> str:
    """The language of the page being built (English outside a build)."""
    return context.current().language


def language_of(src_path: str) -> str:
    """The language of a page from where it lives: ``zh/…`` is Chinese, the rest English."""
    first = src_path.replace("\\", "/").split("/", 1)[0]
    return first if first in LANGUAGES and first != DEFAULT else DEFAULT


def stamp(text: str) -> str:
    """An environment stamp (``torch 2.13.0, AMD EPYC 7B13, 2 threads``) in the page's language: only its words
    change (``2 threads``); versions and names stay as they are."""
    return re.sub(r"\b(\d+) threads?\b", lambda m: t("{count} threads" if m.group(1) != "1" else "{count} thread",
                                                       count=m.group(1)), text)
