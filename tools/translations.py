"""Bring the Chinese catalogues (``zh.po`` beside the code that prints each text) up to date with what the site
prints, the usual gettext way, with Babel:

    make translations        # python tools/translations.py

It builds the Chinese edition once (results from the cache: nothing is measured that a build would not measure),
collecting the catalogue entries the pages used and the texts they printed with no translation. Then, catalogue by
catalogue (``babel.messages.catalog.Catalog.update``):

* an entry no page printed, that nothing in the code or the pages writes and that no ``# unused: why`` comment
  keeps, is dropped;
* a printed text with no translation takes the translation of the most similar translated entry, when one is
  similar enough (the old English of an edited label, typically), flagged ``fuzzy``, with that entry's English
  beside it (``#| msgid``);
* any other printed text with no translation is added untranslated, to the catalogue of the package whose code
  writes it (the lab's when none does).

A strict build names every fuzzy or untranslated entry, until a translator has translated it or checked it and
removed its ``fuzzy`` flag.
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
    """``catalog`` into ``path``, sorted, without file positions or placeholders: a diff shows entries only. Babel
    flags "95% interval" as a printf format (``% i``), which gettext's checkers would then hold the translation to:
    no entry is one, so the flag is left out."""
    for message in catalog:
        message.flags.discard("python-format")
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


def _previous_ids(path: Path) -> dict[str, str]:
    """The old English a fuzzy entry shows beside it (``#| msgid``), by entry: Babel writes it but does not read it
    back, and an update that lost it would leave a translator nothing to compare with."""
    found = {}
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = block.splitlines()
        old = [line[3:] for line in lines if line.startswith("#| ")]
        new = [line for line in lines if not line.startswith("#")]
        if old and new and new[0].startswith("msgid "):
            found[_joined(new)] = _joined(old)
    return found


def _joined(lines: list[str]) -> str:
    """The text of a ``msgid`` written on one line or over several (``msgid ""`` then one quoted piece a line)."""
    pieces = [lines[0].removeprefix("msgid ")]
    for line in lines[1:]:
        if not line.startswith('"'):
            break
        pieces.append(line)
    return "".join(json.loads(piece) for piece in pieces)


def update(language: str, texts: dict) -> list[str]:
    """Update every catalogue of ``language`` from what its build printed; returns what changed, line by line."""
    used, missing = set(texts["used"]), list(texts["missing"])
    kept_unused = set(i18n.notes(language)["unused"])
    files = i18n.catalogue_files(language)
    lab = i18n._ROOT / "lab" / f"{language}.po"
    shown = i18n._ROOT.parent
    report, updated, before = [], {}, {}
    code = {path: i18n.sources(sorted(path.parent.glob("*.py"))) for path in files}  # what each package writes
    for path in files:
        with path.open("rb") as stream:
            catalog = read_po(stream)
        previous = _previous_ids(path)
        for message in catalog:  # Babel reads a "#| msgid" line back as a translator comment: it is not one
            message.user_comments = [c for c in message.user_comments if not c.startswith("|")]
        template = Catalog(locale=catalog.locale)
        for message in catalog:  # a fuzzy or untranslated entry still printed comes back below, as a missing text
            if message.id and (message.id in used or message.id in kept_unused or i18n.written(message.id)):
                template.add(message.id, previous_id=[previous[message.id]] if message.id in previous else ())
        for text in missing:
            if text not in template:
                template.add(text, previous_id=[previous[text]] if text in previous else ())
        before[path] = {m.id for m in catalog if m.id}
        catalog.update(template, update_header_comment=False, update_creation_date=False)
        report += [f"{path.relative_to(shown)}: dropped {key!r}" for key in sorted(before[path] - {m.id for m in catalog})]
        updated[path] = catalog
    for text in missing:
        # its home: the catalogue that already holds it (fuzzy or untranslated); else one that found it a similar
        # translation and whose package writes it (an edited label); else the package that writes it; else one that
        # found it a similar translation; else the lab's
        held = [path for path in files if text in before[path]]
        carried = [path for path in files if text not in before[path] and updated[path][text].fuzzy]
        writers = [path for path in files if path != lab and i18n.written(text, code[path])]
        home = (held + [p for p in carried if p in writers] + writers + carried + [lab])[0]
        for path in files:
            if path != home:
                del updated[path][text]
        message = updated[home][text]
        if text in before[home]:
            continue
        if message.fuzzy:
            report.append(f"{home.relative_to(shown)}: fuzzy {text!r} (the translation of {message.previous_id[0]!r})")
        else:
            message.string, message.previous_id = "", []
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
