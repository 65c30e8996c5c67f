"""The CJK font is checked where it is used — by matplotlib, not by fc-list: a font installed after matplotlib made
its font list is found by making the list anew; a font matplotlib cannot find stops the build with one line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from matplotlib import font_manager
from mkdocs.exceptions import PluginError

from snippets.lab import fonts


class _Listing:
    """A font list that holds exactly the families given."""

    def __init__(self, *families: str):
        self.families = set(families)
        self.made = 0

    def findfont(self, family, fallback_to_default=True):
        if family in self.families:
            return f"/fonts/{family}.otf"
        raise ValueError(f"no {family}")


@pytest.fixture()
def hidden(monkeypatch):
    """matplotlib's font list (in this process) without the CJK font, as when it was made before the install."""
    monkeypatch.setattr(font_manager, "fontManager", _Listing("DejaVu Sans"))
    monkeypatch.setattr(font_manager, "findfont", font_manager.fontManager.findfont)
    adopted = []
    monkeypatch.setattr(fonts, "_adopt", adopted.append)
    return adopted


def test_a_font_matplotlib_lists_is_found_without_a_new_list(monkeypatch):
    monkeypatch.setattr(font_manager, "fontManager", _Listing(fonts.CJK_FONT))
    made = []
    assert fonts.problem(fresh_list=lambda: made.append(1)) is None
    assert made == [], "the font list was made anew although the font was in it"


def test_an_installed_font_missing_from_matplotlibs_list_is_found_by_a_new_list(hidden):
    fresh = _Listing("DejaVu Sans", fonts.CJK_FONT)
    assert fonts.problem(fresh_list=lambda: fresh) is None
    assert hidden == [fresh], "the new font list was not adopted (nor saved for the next process)"


def test_a_font_nowhere_gives_the_one_line_that_says_what_to_install(hidden):
    message = fonts.problem(fresh_list=lambda: _Listing("DejaVu Sans"))
    assert message == fonts.INSTALL and "\n" not in message
    assert "Noto Sans CJK SC" in message and "apt-get install fonts-noto-cjk" in message
    assert hidden == []


def test_the_command_line_says_the_line_and_exits_1(hidden, monkeypatch, capsys):
    monkeypatch.setattr(fonts, "_fresh_list", lambda: _Listing())
    assert fonts.main([]) == 1
    assert capsys.readouterr().err == fonts.INSTALL + "\n"
    monkeypatch.setattr(fonts.sys, "argv", ["fonts.py"])
    assert fonts.main() == 1, "its own command line when given none"
    capsys.readouterr()
    monkeypatch.setattr(fonts.sys, "argv", ["fonts.py", "--what"])
    assert fonts.main() == 2 and fonts.main(["--what"]) == 2
    assert capsys.readouterr().err == ("usage: python -m snippets.lab.fonts  (no arguments: checks that matplotlib finds "
                                       f"{fonts.CJK_FONT})\n") * 2
    monkeypatch.setattr(fonts, "problem", lambda: None)
    assert fonts.main([]) == 0 and capsys.readouterr().err == ""


def test_the_real_font_is_found_here():
    """``make test`` installs it first (.ci/ensure-fonts.sh): matplotlib must find it, as the Chinese figures do."""
    assert fonts.problem() is None


def _i18n_config(tmp_path, languages):
    plugin = SimpleNamespace(default_language="en", build_languages=languages, current_language=None)
    (tmp_path / "docs").mkdir(exist_ok=True)
    return SimpleNamespace(plugins={"i18n": plugin}, docs_dir=str(tmp_path / "docs"))


def test_a_build_with_the_chinese_edition_stops_at_once_without_the_font(fresh_hook, hidden, tmp_path, monkeypatch):
    monkeypatch.setattr(fonts, "_fresh_list", lambda: _Listing("DejaVu Sans"))
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_config(_i18n_config(tmp_path, ["en", "zh"]))
    assert str(raised.value) == fonts.INSTALL


def test_an_english_only_build_needs_no_cjk_font(fresh_hook, hidden, tmp_path, monkeypatch):
    monkeypatch.setattr(fonts, "_fresh_list", lambda: _Listing("DejaVu Sans"))
    config = _i18n_config(tmp_path, ["en"])
    assert fresh_hook.on_config(config) is config


def test_a_font_list_made_anew_becomes_matplotlibs_in_this_process_and_in_its_cache_file(monkeypatch, tmp_path):
    import copy

    import matplotlib
    from matplotlib import font_manager

    for name in ("fontManager", "findfont", "get_font_names"):  # put back afterwards
        monkeypatch.setattr(font_manager, name, getattr(font_manager, name))
    monkeypatch.setattr(matplotlib, "get_cachedir", lambda: str(tmp_path))
    made = copy.copy(font_manager.fontManager)
    font_manager.get_font(font_manager.findfont("DejaVu Sans"))
    assert font_manager._get_font.cache_info().currsize
    fonts._adopt(made)
    assert font_manager.fontManager is made
    assert font_manager.findfont == made.findfont and font_manager.get_font_names == made.get_font_names
    assert font_manager._get_font.cache_info().currsize == 0, "no font opened from the old list is reused"
    cache = tmp_path / f"fontlist-v{font_manager.FontManager.__version__}.json"
    assert len(font_manager.json_load(cache).ttflist) == len(made.ttflist), "the next process reads the new list"
    monkeypatch.setattr(matplotlib, "get_cachedir", lambda: str(tmp_path / "read-only" / "missing"))
    fonts._adopt(made)  # a cache folder it cannot write: this process has the list all the same
    assert font_manager.fontManager is made


class _Collections:
    """A font list as matplotlib before 3.11 makes it: each entry a ``FontEntry``, a collection listed by its first
    face's family only; found by exact family, with a cache of what it found."""

    def __init__(self, *entries):
        self.ttflist = list(entries)
        self.cleared = 0
        self._findfont_cached = SimpleNamespace(cache_clear=self._clear)

    def _clear(self):
        self.cleared += 1

    def findfont(self, family, fallback_to_default=True):
        for entry in self.ttflist:
            if entry.name == family:
                return entry.fname
        raise ValueError(f"no {family}")


def _entry(name, fname, **fields):
    return font_manager.FontEntry(fname=fname, name=name, **fields)


def test_a_collections_other_face_is_listed_under_the_family_asked_for():
    regular = _entry("Noto Sans CJK JP", "/f/NotoSansCJK-Regular.ttc")
    bold = _entry("Noto Sans CJK JP", "/f/NotoSansCJK-Bold.TTC", weight=700)
    serif = _entry("Noto Serif CJK JP", "/f/NotoSerifCJK-Regular.otc")  # another family's collection
    single = _entry("Noto Sans CJK KR", "/f/NotoSansCJKkr-Regular.otf")  # one face, not a collection
    arabic = _entry("Noto Sans Arabic", "/f/NotoSansArabic.ttc")
    listed = _Collections(regular, bold, serif, single, arabic)
    assert fonts._alias_collection_face(listed, "Noto Sans CJK SC")
    assert listed.ttflist[5:] == [_entry("Noto Sans CJK SC", "/f/NotoSansCJK-Regular.ttc"),
                                  _entry("Noto Sans CJK SC", "/f/NotoSansCJK-Bold.TTC", weight=700)]
    assert listed.cleared == 1 and listed.findfont("Noto Sans CJK SC") == "/f/NotoSansCJK-Regular.ttc"
    otc = _Collections(_entry("Noto Sans CJK TC", "/f/NotoSansCJK.otc"))
    assert fonts._alias_collection_face(otc, "Noto Sans CJK SC") and otc.ttflist[-1].name == "Noto Sans CJK SC"


@pytest.mark.parametrize(("listed", "family"), [
    (_Collections(), "Noto Sans CJK SC"),
    (_Collections(_entry("Noto Sans CJK JP", "/f/NotoSansCJK-Regular.otf")), "Noto Sans CJK SC"),
    (_Collections(_entry("Source Han Sans JP", "/f/SourceHanSans.ttc")), "Source Han Sans SC"),
    (SimpleNamespace(findfont=_Collections().findfont), "Noto Sans CJK SC"),  # a font list without ttflist
], ids=["empty", "no-collection", "another-family", "no-ttflist"])
def test_only_a_noto_cjk_collection_is_aliased(listed, family):
    before = list(getattr(listed, "ttflist", []))
    assert not fonts._alias_collection_face(listed, family)
    assert getattr(listed, "ttflist", []) == before


def test_a_font_list_without_a_find_cache_is_aliased_all_the_same():
    listed = _Collections(_entry("Noto Sans CJK JP", "/f/NotoSansCJK-Regular.ttc"))
    del listed._findfont_cached
    assert fonts._alias_collection_face(listed, "Noto Sans CJK SC")


def test_a_collection_listed_under_another_region_is_found_in_the_list_or_in_a_new_one(monkeypatch, hidden):
    listed = _Collections(_entry("Noto Sans CJK JP", "/f/NotoSansCJK-Regular.ttc"))
    monkeypatch.setattr(font_manager, "fontManager", listed)
    assert fonts.problem(fresh_list=lambda: pytest.fail("made anew")) is None and hidden == []
    monkeypatch.setattr(font_manager, "fontManager", _Listing("DejaVu Sans"))
    fresh = _Collections(_entry("Noto Sans CJK KR", "/f/NotoSansCJK-Regular.ttc"))
    assert fonts.problem(fresh_list=lambda: fresh) is None and hidden == [fresh]
