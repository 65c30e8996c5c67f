"""Bring the Chinese catalogues (``zh.po`` beside the code that prints each text) up to date with what the site
prints, the usual gettext way, with Babel:

    make translations        # python tools/translations.py

It builds the Chinese edition once (results from the cache: nothing is measured that a build would not measure),
collecting the catalogue entries the pages used and the texts they printed with no translation. Then, catalogue by
catalogue (``babel.messages.catalog.Catalog.update``):

* an entry nothing printed, nothing in the code writes and no ``# unused: why`` comment keeps is dropped;
* a text with no translation that is close to a dropped entry (its English was edited) takes that entry's
  translation, marked ``fuzzy``, with the old English beside it (``#| msgid``);
* any other text with no translation is added untranslated to the catalogue of the package whose code writes it
  (the lab's when none does).

A strict build names every fuzzy or untranslated entry until a translator has checked it and removed the flag.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from babel.messages.catalog import Catalog  # noqa: E402
from babel.messages.pofile import read_po, write_po  # noqa: E402

from snippets.lab import i18n  # noqa: E402
from snippets.lab.mkdocs_hook import TRANSLATIONS_ENV  # noqa: E402

# Header fields Babel fills with placeholders or the time of writing: left out, so an update changes only entries
_PLACEHOLDER = re.compile(rb'^"(POT-Creation-Date|PO-Revision-Date|Last-Translator|Language-Team|'
                          rb'Report-Msgid-Bugs-To): [^"]*\\n"\n', re.M)


def write(path: Path, catalog: Catalog) -> None:
    """``catalog`` into ``path``, sorted, without file positions or placeholders: a diff shows entries only."""
    out = BytesIO()
    write_po(out, catalog, sort_output=True, no_location=True, ignore_obsolete=True, include_previous=True)
    path.write_bytes(_PLACEHOLDER.sub(b"", out.getvalue()))


def printed(language: str) -> dict:
    """What a build of ``language``'s edition printed: the catalogue keys it used, the texts it had none for."""
    with tempfile.TemporaryDirectory(prefix="pitfalls-translations-") as folder:
        out = Path(folder) / "texts.json"
        env = {**os.environ, "PITFALLS_LANGUAGE": language, TRANSLATIONS_ENV: str(out)}
        process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-d", str(Path(folder) / "site")],
                                 cwd=ROOT, env=env, capture_output=True, text=True)
        if process.returncode != 0 or not out.is_file():
            sys.stderr.write(process.stdout[-3000:] + process.stderr[-6000:])
            raise SystemExit(f"make translations: the {language} build failed (above); fix it and run again")
        return json.loads(out.read_text(encoding="utf-8"))


def _writes(folder: Path, text: str) -> bool:
    """Whether the code in ``folder`` (not its subpackages' catalogues' folders) writes every literal part of
    ``text``."""
    parts = [part for part in re.split(r"\{\w+\}", text) if len(part.strip()) > 2] or [text]
    source = "\n".join(re.sub(r"""(["'])\s*\n\s*[rf]?\1""", "", p.read_text(encoding="utf-8"))
                       for p in sorted(folder.glob("*.py")))
    return all(part in source for part in parts)


def update(language: str, texts: dict) -> list[str]:
    """Update every catalogue of ``language`` from what its build printed; returns what changed, line by line."""
    used, missing = set(texts["used"]), list(texts["missing"])
    kept_unused = set(i18n.notes(language)["unused"])
    files = i18n.catalogue_files(language)
    lab = i18n._ROOT / "lab" / f"{language}.po"
    shown = i18n._ROOT.parent
    report, updated, before = [], {}, {}
    for path in files:
        with path.open("rb") as stream:
            catalog = read_po(stream)
        keep = [m for m in catalog if m.id and (m.id in used or m.id in kept_unused or i18n.written(m.id)
                                                 or m.fuzzy or not m.string)]
        template = Catalog(locale=catalog.locale)
        for message in keep:
            template.add(message.id, flags=[f for f in message.flags if f != "fuzzy"])
        for text in missing:
            if text not in template:
                template.add(text, flags=["python-brace-format"] if re.search(r"\{\w+\}", text) else [])
        before[path] = {m.id for m in catalog if m.id}
        catalog.update(template, update_header_comment=False, update_creation_date=False)
        report += [f"{path.relative_to(shown)}: dropped {key!r}" for key in sorted(before[path] - {m.id for m in catalog})]
        updated[path] = catalog
    for text in missing:
        # its home: a catalogue that carried an old translation over and whose package writes the text (an edited
        # label), else the package that writes it, else one that carried a translation over, else the lab's
        carried = [path for path in files if text not in before[path] and updated[path][text].fuzzy]
        writers = [path for path in files if path != lab and _writes(path.parent, text)]
        home = next(iter([p for p in carried if p in writers] + writers + carried + [lab]))
        for path in files:
            if path != home and text not in before[path]:
                del updated[path][text]
        message = updated[home][text]
        if message.fuzzy:
            report.append(f"{home.relative_to(shown)}: fuzzy {text!r} (was {message.previous_id[0]!r})")
        else:
            message.string = ""
            message.previous_id = []
            report.append(f"{home.relative_to(shown)}: untranslated {text!r}")
    for path, catalog in updated.items():
        write(path, catalog)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", default="zh", choices=[lang for lang in i18n.LANGUAGES if lang != "en"])
    args = parser.parse_args(argv)
    report = update(args.language, printed(args.language))
    print("\n".join(report) if report else f"make translations: the {args.language} catalogues are up to date")
    i18n._read.cache_clear()
    i18n.pending.cache_clear()
    waiting = i18n.pending(args.language)
    if waiting:
        print(f"{len(waiting)} entr{'ies' if len(waiting) > 1 else 'y'} to check before the strict build passes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
