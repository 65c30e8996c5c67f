"""The CJK font the Chinese edition's figures are drawn in, checked where it is used: by matplotlib.

    python -m snippets.lab.fonts        exit 0 when matplotlib finds Noto Sans CJK SC, else 1 and one line

``fc-list`` listing a font is not enough: matplotlib keeps its own list of fonts (``fontlist-v*.json`` in its
cache folder) and never looks again, so a font installed after that list was made is invisible to it. When the
font is missing from matplotlib's list, the list is made afresh (and saved, for the next process) before
giving up.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

CJK_FONT = "Noto Sans CJK SC"
INSTALL = (f"The Chinese edition's figures need the font {CJK_FONT}, which matplotlib cannot find: install it "
           "(Debian/Ubuntu: sudo apt-get install fonts-noto-cjk; macOS: brew install --cask font-noto-sans-cjk-sc; "
           "elsewhere: https://github.com/notofonts/noto-cjk) and run the command again.")


def _finds(manager, family: str) -> bool:
    try:
        manager.findfont(family, fallback_to_default=False)
    except ValueError:
        return False
    return True


def _alias_collection_face(manager, family: str) -> bool:
    """matplotlib before 3.11 reads only the first face of a font collection (``NotoSansCJK-Regular.ttc`` holds
    JP, KR, SC, TC and HK): "Noto Sans CJK SC" is then listed as "Noto Sans CJK JP". The faces share their glyphs
    and metrics (only some glyph shapes differ by region, and the SVG names the SC family for the browser), so the
    listed face of the same collection is registered under the family's name too."""
    import dataclasses

    prefix = family.rsplit(" ", 1)[0] + " "  # "Noto Sans CJK "
    faces = [entry for entry in getattr(manager, "ttflist", [])
             if entry.name.startswith(prefix) and str(entry.fname).lower().endswith((".ttc", ".otc"))]
    if not faces or not family.startswith("Noto Sans CJK"):
        return False
    manager.ttflist.extend(dataclasses.replace(face, name=family) for face in faces)
    if hasattr(manager, "_findfont_cached"):
        manager._findfont_cached.cache_clear()
    return _finds(manager, family)


def _fresh_list():
    """matplotlib's font list made anew from the fonts installed now."""
    from matplotlib import font_manager

    return font_manager.FontManager()


def _adopt(manager) -> None:
    """Make ``manager`` matplotlib's font list in this process and in the next ones (its cache file)."""
    import matplotlib
    from matplotlib import font_manager

    font_manager.fontManager = manager
    font_manager.findfont = manager.findfont
    font_manager.get_font_names = manager.get_font_names
    font_manager._get_font.cache_clear()
    cache = Path(matplotlib.get_cachedir()) / f"fontlist-v{font_manager.FontManager.__version__}.json"
    try:
        font_manager.json_dump(manager, cache)
    except OSError:  # a read-only cache folder: this process has the new list, the next makes it again
        pass


def problem(family: str = CJK_FONT, *, fresh_list: Callable[[], object] | None = None) -> str | None:
    """None when matplotlib finds ``family`` (after making its font list anew if needed), else the one line that
    says what to install."""
    from matplotlib import font_manager

    if _finds(font_manager.fontManager, family) or _alias_collection_face(font_manager.fontManager, family):
        return None
    manager = (fresh_list or _fresh_list)()
    if _finds(manager, family) or _alias_collection_face(manager, family):
        _adopt(manager)
        return None
    return INSTALL if family == CJK_FONT else INSTALL.replace(CJK_FONT, family)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        print("usage: python -m snippets.lab.fonts  (no arguments: checks that matplotlib finds "
              f"{CJK_FONT})", file=sys.stderr)
        return 2
    found = problem()
    if found:
        print(found, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
