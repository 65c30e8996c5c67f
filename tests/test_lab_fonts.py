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
