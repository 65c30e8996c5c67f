"""The site's languages: which one the page being built is written in, and the words the lab and the renderers
print in it.

The pages are written in each language by hand (``docs/`` in English, ``docs/zh/`` in Chinese); their claims'
sentences are in the page. What the Python side prints — table headers and cells, figures' titles, labels and
legends, stamps, warnings, code panels' captions, claims' hover texts — is English in the source, and
:func:`t` gives it in the language of the page being built, from a catalogue beside the code that prints it
(``zh.json`` in ``snippets/lab/`` and in each experiment's package: ``{"English": "中文"}``).

A catalogue key may hold fields, ``"{runs} runs"``: it then matches any text of that shape, and the fields it
captured are themselves translated and put into the translation (``"{runs} 次运行"``). A text that needs a
translation and has none is kept in English and remembered in the build context (``context.Build.missing``),
with the page that asked; the MkDocs hook fails the build at that page, naming each.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
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


def catalogue_files(lang: str) -> list[Path]:
    """Every catalogue of ``lang`` in the package, in a fixed order."""
    return sorted(_ROOT.rglob(f"{lang}.json"))


@lru_cache(maxsize=None)
def catalogue(lang: str) -> tuple[dict[str, str], tuple[tuple[re.Pattern, str, str], ...]]:
    """``lang``'s catalogue: exact texts, and the keys with fields as patterns (longest key first)."""
    exact: dict[str, str] = {}
    where: dict[str, Path] = {}
    for path in catalogue_files(lang):
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON: {error}") from None
        if not isinstance(entries, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in entries.items()):
            raise ValueError(f"{path}: a catalogue maps English texts to {lang} texts, both strings")
        for key, value in entries.items():
            if key in exact and exact[key] != value:
                raise ValueError(f"{key!r} is translated twice, differently: in {where[key]} and {path}")
            if set(_FIELD.findall(key)) != set(_FIELD.findall(value)):
                raise ValueError(f"{path}: the translation of {key!r} must use the same fields "
                                 f"{sorted(set(_FIELD.findall(key)))}, it has {sorted(set(_FIELD.findall(value)))}")
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


def translate(text: str, lang: str) -> str | None:
    """``text`` in ``lang`` from its catalogue, or None when the catalogue has no entry that matches it."""
    exact, patterns = catalogue(lang)
    if text in exact:
        return exact[text]
    for pattern, _key, value in patterns:
        found = pattern.match(text)
        if not found:
            continue
        parts = {}
        for name, part in found.groupdict().items():
            parts[name] = translate(part, lang) if needs_translation(part) else part
            if parts[name] is None:  # "{a} of {b}" must not swallow a sentence nobody translated
                break
        else:
            return value.format(**parts)
    return None


def t_in(lang: str, text: str, **fields) -> str:
    """``text`` in ``lang`` (English when ``lang`` is English), its ``{fields}`` filled in afterwards."""
    out = text
    if lang != DEFAULT and text:
        found = translate(text, lang)
        if found is not None:
            out = found
        elif needs_translation(text):
            build = context.current()
            build.missing.setdefault((lang, text), set()).add(build.page or "?")
    return out.format(**fields) if fields else out


def t(text: str, **fields) -> str:
    """``text`` in the language of the page being built; ``fields`` are filled in after translating."""
    return t_in(context.current().language, text, **fields)


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
