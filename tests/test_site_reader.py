"""What a reader who lands on a topic page gets: code that runs as pasted, beside its download link; provenance one
tap away instead of in the prose; the notation, the jump links and where the numbers were measured, under the In
short."""

from __future__ import annotations

import html as html_module
import re
import subprocess
import sys

import pytest

from conftest import RECIPES, ROOT, topic_pages

pytestmark = pytest.mark.site

TOPIC_PAGES = [f"{lang}{topic}/index.html" for lang in ("", "zh/") for topic in topic_pages()]
# a code block as the site writes it (its line count in a style attribute, its <code> focusable when a line is long)
_BLOCK = re.compile(r'<div class="language-python([^"]*)highlight"[^>]*><pre>(?:<span></span>)?<code[^>]*>(.*?)</code>'
                    r'</pre>', re.S)
_TAB_SET = re.compile(r'<div class="tabbed-labels">(.*?)</div>\s*<div class="tabbed-content">', re.S)


def _code(block: str) -> str:
    return html_module.unescape(re.sub(r"<[^>]+>", "", block))


def copy_blocks(page_html: str) -> list[tuple[int, str]]:
    """The code a page invites a reader to copy: blocks marked ``pitfalls-copy`` (the In short's and the recipes'
    tabs) and a recipe's Usage tab. ``(offset in the page, code)``."""
    found = [(m.start(), _code(m.group(2))) for m in _BLOCK.finditer(page_html) if "pitfalls-copy" in m.group(1)]
    for tabs in _TAB_SET.finditer(page_html):
        labels = re.findall(r"<label[^>]*>(.*?)</label>", tabs.group(1))
        if labels and labels[0] in ("Usage", "用法"):
            first = _BLOCK.search(page_html, tabs.end())
            found.append((first.start(), _code(first.group(2))))
    return sorted(found)


def test_the_copy_blocks_are_found_where_the_reader_is_asked_to_copy(built_site):
    for page in TOPIC_PAGES:
        found = copy_blocks((built_site / page).read_text(encoding="utf-8"))
        source = (ROOT / "docs" / page.replace("/index.html", ".md")).read_text(encoding="utf-8")
        # the In short's tabs and the recipes' (marked pitfalls-copy in the page), and a recipe's Usage tab
        marked = source.count(".pitfalls-copy}") + source.count('=== "Usage"') + source.count('=== "用法"')
        assert len(found) == marked > 0, f"{page}: {len(found)} blocks to copy found, {marked} marked in its source"


@pytest.mark.parametrize("page", TOPIC_PAGES)
def test_every_snippet_runs_as_pasted_beside_the_downloaded_recipe(built_site, tmp_path, page):
    """Each block, pasted into a fresh file in a folder that holds only the recipe it imports, downloaded from the
    site (never the repository's snippets/), runs with exit status 0; its download link is on the page before it."""
    text = (built_site / page).read_text(encoding="utf-8")
    ran = 0
    for number, (offset, code) in enumerate(copy_blocks(text)):
        folder = tmp_path / f"block-{number}"
        folder.mkdir()
        needed = [f"{name}.py" for name in RECIPES if re.search(rf"^\s*(from|import) {name}\b", code, re.M)]
        for name in needed:
            recipe = next(p for p in (built_site / "recipes" / name, built_site / "zh" / "recipes" / name)
                          if p.is_file())
            (folder / name).write_bytes(recipe.read_bytes())
            before = text[:offset]
            section = before[max(before.rfind("<h2"), 0):]  # linked above it, in its own section
            assert f'recipes/{name}"' in section, f"{page}: block {number} needs {name}, not linked above it"
        (folder / "snippet.py").write_text(code, encoding="utf-8")
        done = subprocess.run([sys.executable, "snippet.py"], cwd=folder, capture_output=True, text=True, timeout=300,
                              env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1", "OMP_NUM_THREADS": "1"})
        assert done.returncode == 0, f"{page}: block {number} fails as pasted:\n{code}\n{done.stderr[-3000:]}"
        assert "snippets" not in code, f"{page}: block {number} imports from the repository"
        ran += 1
    assert ran >= 2


@pytest.mark.parametrize("page", TOPIC_PAGES)
def test_tabs_open_on_the_fix(built_site, page):
    text = (built_site / page).read_text(encoding="utf-8")
    for tabs in _TAB_SET.finditer(text):
        first = re.findall(r"<label[^>]*>(.*?)</label>", tabs.group(1))[0]
        assert first not in ("Before", "修改前"), f"{page}: a tab set opens on the code before the fix"


def _prose(page_html: str) -> str:
    """What a reader reads without opening anything: the article, less claim tips, code panels, code blocks and
    collapsed blocks."""
    article = re.search(r"<article.*?</article>", page_html, re.S).group(0)
    article = re.sub(r'<span class="pitfalls-claim__tip"[^>]*>.*?</span>', " ", article, flags=re.S)
    while True:  # innermost <details> first: panels hold panels
        shorter = re.sub(r"<details\b(?:(?!<details\b).)*?</details>", " ", article, flags=re.S)
        if shorter == article:
            break
        article = shorter
    article = re.sub(r"<pre\b.*?</pre>", " ", article, flags=re.S)
    article = re.sub(r"<(script|style)\b.*?</\1>", " ", article, flags=re.S)
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", article)).split())


@pytest.mark.parametrize("page", TOPIC_PAGES)
def test_no_prose_names_a_recorded_machine_or_a_build_command(built_site, page):
    labels = [p.name for p in (ROOT / "results").iterdir() if p.is_dir()]
    prose = _prose((built_site / page).read_text(encoding="utf-8"))
    for word in [*labels, "make build", "make record", "REFRESH=", "recorded machines", "已记录的机器", "the build fails",
                 "none usable"]:
        assert word not in prose, f"{page}: the text a reader reads names {word!r}"


@pytest.mark.parametrize("page", TOPIC_PAGES)
def test_the_in_short_says_where_it_was_measured_and_is_followed_by_jump_links_and_the_notation(built_site, page):
    text = (built_site / page).read_text(encoding="utf-8")
    start = text.index('<div class="admonition abstract">')
    after_box = text[start:]
    jump = after_box.index('<nav class="pitfalls-jump"')
    legend = after_box.index('<p class="pitfalls-legend">')
    first_section = after_box.index("<h2")
    assert jump < legend < first_section, f"{page}: the jump links and the notation come right after the In short"
    in_short = after_box[:jump]
    where = re.search(r"(?:Numbers on this page measured with|本页数字的测量环境：)([^<]*)", in_short)
    assert where and "torch " in where.group(1) and ("thread" in where.group(1) or "线程" in where.group(1)), page
    links = re.findall(r'<a href="#([^"]+)">', after_box[jump:legend])
    headings = re.findall(r'<h2 id="([^"]+)"', text)
    assert links == headings and len(links) >= 5, f"{page}: the jump links are the page's sections, in order"
    assert any(anchor.startswith(("recipe", "the-recipes")) for anchor in links), f"{page}: no link to the recipe"
    legend_text = re.sub(r"<[^>]+>", "", after_box[legend:first_section])
    from snippets.lab import mkdocs_hook

    explained = "95%" in legend_text or "95% 区间" in legend_text
    printed = bool(mkdocs_hook._INTERVAL.search(re.sub(r'<span class="pitfalls-claim__tip".*?</span>', "", text)))
    assert explained == printed, f"{page}: intervals printed: {printed}, explained under the In short: {explained}"


@pytest.mark.parametrize("page", TOPIC_PAGES)
def test_one_stamp_per_page_not_one_per_table(built_site, page):
    text = (built_site / page).read_text(encoding="utf-8")
    said = re.search(r"(?:Numbers on this page measured with|本页数字的测量环境：)\s*([^<]*?)[.。]\s*<", text).group(1)
    below_tables = re.findall(r'<p class="pitfalls-stamp">(?:Measured with|测量环境：)\s*([^<]*)</p>',
                              _outside_panels(text))
    assert said not in below_tables, f"{page}: a table repeats the stamp the In short names"


def _outside_panels(text: str) -> str:
    return re.sub(r'<details class="example pitfalls-code".*?</details>\s*(?=<|$)', " ", text, flags=re.S)


@pytest.mark.parametrize("page", [p for p in TOPIC_PAGES if not p.startswith("zh/")])
def test_a_claim_that_starts_a_sentence_starts_with_a_capital(built_site, page):
    text = (built_site / page).read_text(encoding="utf-8")
    starts = re.findall(r'(?:<p>|<li>|[.!?]\s+)(?:<[a-z]+>)*<span class="pitfalls-claim[^"]*"[^>]*>(.)', text)
    assert starts and all(not c.islower() for c in starts), f"{page}: {starts}"


def test_figures_follow_the_palette_and_read_at_nine_pixels(built_site):
    text = (built_site / "update-steps" / "index.html").read_text(encoding="utf-8")
    figures = re.findall(r"<svg role=\"img\".*?</svg>", text, re.S)
    assert figures
    for svg in figures:
        assert "fill: #ffffff" not in svg and "fill: #1a1a1a" not in svg, "white and black follow the palette"
        assert "var(--pitfalls-figure-bg, #ffffff)" in svg
        width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))
        smallest = min(float(size) for size in re.findall(r"font-size: ([\d.]+)px", svg))
        min_width = int(re.search(r'style="min-width: (\d+)px"', svg).group(1))
        assert smallest >= 9 and min_width * smallest / width >= 9 - 1e-6
