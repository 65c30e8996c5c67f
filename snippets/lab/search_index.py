"""MkDocs hook: one search index per language.

mkdocs-static-i18n writes every language's pages into the one ``search/search_index.json`` (after the last
language is built, in its ``on_post_build``), so a Chinese query met English pages first. This hook runs after it
(a lower priority) and gives each other language its own ``<lang>/search/search_index.json``, its locations
relative to ``<lang>/``; the root index keeps the default language's pages. The pages of a language search their
own index: ``mkdocs_hook`` points their Material ``__config`` base at their folder (``_search_base``).
"""

from __future__ import annotations

import json
from pathlib import Path

from mkdocs.plugins import event_priority


def split(site: Path, others: list[str]) -> None:
    """Split ``site``'s search index by language; a no-op on an index that holds one language only."""
    path = site / "search" / "search_index.json"
    if not path.is_file():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    docs = index.get("docs", [])
    prefixes = tuple(f"{lang}/" for lang in others)
    if not any(doc["location"].startswith(prefixes) for doc in docs):
        return
    for lang in others:
        prefix = f"{lang}/"
        mine = [{**doc, "location": doc["location"][len(prefix):]} for doc in docs
                if doc["location"].startswith(prefix)]
        _write(site / lang / "search" / "search_index.json", {**index, "docs": mine})
    _write(path, {**index, "docs": [doc for doc in docs if not doc["location"].startswith(prefixes)]})


def _write(path: Path, index: dict) -> None:
    """An index as Material reads it, each language's text as it is (not escaped: a third of the size)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(index, ensure_ascii=False), encoding="utf-8")


@event_priority(-110)  # after mkdocs-static-i18n's (-100), which writes the index of every language
def on_post_build(config):
    plugin = config.plugins.get("i18n") if getattr(config, "plugins", None) is not None else None
    if plugin is None:
        return
    default = plugin.default_language
    others = [lang for lang in getattr(plugin, "build_languages", []) if lang != default
              and (Path(config.site_dir) / lang).is_dir()]  # built beside the default language, not alone
    if others:
        split(Path(config.site_dir), others)
