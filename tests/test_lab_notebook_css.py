"""The notebook pages' stylesheet, cut down to what can style the page (snippets/lab/notebook_css.py), on small
pages whose expected result can be read off: which rules, selectors, custom properties, @-rules stay."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from snippets.lab import notebook_css
from snippets.lab.notebook_css import prune_notebook_styles

BODY = '<div class="jupyter-wrapper a">x</div>'


def _pruned(css: str, body: str = BODY, **options) -> str:
    html = prune_notebook_styles(f'<style type="text/css">{css}</style>{body}', **options)
    assert html.endswith("</style>" + body), "only the stylesheet changes"
    return html.removeprefix('<style type="text/css">').removesuffix("</style>" + body)


@pytest.mark.parametrize("css, kept", [
    (".a{color:red}.b{color:blue}", ".a{color:red}"),
    (".a, .b{color:red}", ".a{color:red}"),
    (".b, .a{color:red}", ".a{color:red}"),
    ("div.a > p, .b p{m:0}", "div.a > p{m:0}"),
    (".md-typeset .zz{color:red}.md-x{c:d}", ".md-x{c:d}"),
    ("p{m:0}*{n:1}", "p{m:0}*{n:1}"),
    (".a{c:d !important}", ".a{c:d !important}"),
    (".a{}", ""),
])
def test_rules_whose_classes_are_all_in_the_page_stay(css, kept):
    assert _pruned(css) == kept


@pytest.mark.parametrize("css, kept", [
    (":root{m:0}", ":root{m:0}"), (".a :root{m:0}", ""), (".a > :root{m:0}", ""),
    ("body{m:0}", "body{m:0}"), (".a body{m:0}", ""), ("p+body{m:0}", ""), ("p ~ html{m:0}", ""),
    (".a HTML{m:0}", ""), (".a :ROOT{m:0}", ""),
    (".a~div{m:0}", ".a~div{m:0}"), (".a #body{m:0}", ".a #body{m:0}"), ("p .body{m:0}", ""),
    (".a :hover{m:0}", ".a :hover{m:0}"), ("html body{m:0}", ""), ("html .a{m:0}", "html .a{m:0}"),
    ("body.a{m:0}", "body.a{m:0}"), (".a .a{m:0}", ".a .a{m:0}"),
])
def test_root_html_and_body_are_inside_nothing(css, kept):
    assert _pruned(css) == kept


def test_classes_named_in_inline_scripts_count_and_text_elsewhere_does_not():
    body = ('<div class="jupyter-wrapper">x</div><script>el.classList.add("lm-Widget")</script>'
            '<p>zz jp-Text</p><pre class="">p</pre>')
    assert _pruned(".lm-Widget{c:d}.zz{c:d}.jp-Text{c:d}", body) == ".lm-Widget{c:d}"


def test_class_names_inside_the_styles_themselves_do_not_count():
    html = prune_notebook_styles('<style type="text/css">.ghost{c:d}</style><style type="text/css">'
                                 '.a{c:d}</style><div class="jupyter-wrapper a"></div>')
    assert html == ('<style type="text/css"></style><style type="text/css">.a{c:d}</style>'
                    '<div class="jupyter-wrapper a"></div>')


def test_custom_properties_stay_when_something_reads_them():
    css = ".a{color:var(--c1)}:root{--c1:var( --c2 );--c2:red;--c3:blue}"
    assert _pruned(css) == ".a{color:var(--c1)}:root{--c1:var( --c2 );--c2:red}"


def test_properties_read_by_the_page_or_the_sites_stylesheets_stay():
    body = '<div class="jupyter-wrapper a" style="x: var(--q)">x</div>'
    assert _pruned(".a{c:var(--p)}:root{--p:1;--q:2;--s:3;--t:4}", body, references={"--s"}) == \
        ".a{c:var(--p)}:root{--p:1;--q:2;--s:3}"


def test_properties_read_only_by_dropped_rules_go():
    assert _pruned(".b{c:var(--p)}:root{--p:1}.a{--p2:1}") == ""


def test_keyframes_stay_when_a_kept_rule_names_them():
    css = ".a{animation:spin 1s}@keyframes spin{from{x:0}}@keyframes other{from{x:0}}"
    assert _pruned(css) == ".a{animation:spin 1s}@keyframes spin{from{x:0}}"
    assert _pruned(":root{--anim:fade}.a{animation:var(--anim)}@keyframes fade{to{x:1}}") == \
        ":root{--anim:fade}.a{animation:var(--anim)}@keyframes fade{to{x:1}}"
    assert _pruned(":root{--unused:fade}@keyframes fade{to{x:1}}") == ""


def test_media_and_supports_blocks_keep_what_they_keep():
    css = "@media (min-width:1px){.a{c:d}.b{e:f}}@media print{.b{c:d}}@supports (display:grid){.a{g:h}}"
    assert _pruned(css) == "@media (min-width:1px){.a{c:d}}@supports (display:grid){.a{g:h}}"
    assert _pruned("@media print{@media (color){.a{c:d}}}") == "@media print{@media (color){.a{c:d}}}"
    assert _pruned("@media print{:root{--v:1}.a{c:var(--v)}}") == "@media print{:root{--v:1}.a{c:var(--v)}}"


def test_other_at_rules_stay_and_charset_goes():
    css = "@charset 'utf-8';@font-face{font-family:x}@import url(x.css);@page{margin:0}.a{c:d}"
    assert _pruned(css) == "@font-face{font-family:x}@import url(x.css);@page{margin:0}.a{c:d}"
    assert _pruned("@media print;.a{c:d}") == "@media print;.a{c:d}"


def test_each_style_element_is_pruned_on_its_own():
    html = ('<style type="text/css">.a{c:1}.b{c:2}</style><p>between</p><style type="text/css">.b{c:3}.a{c:4}'
            '</style>' + BODY)
    assert prune_notebook_styles(html) == ('<style type="text/css">.a{c:1}</style><p>between</p>'
                                           '<style type="text/css">.a{c:4}</style>' + BODY)


def test_other_style_elements_are_left_alone():
    html = '<style>.b{c:2}</style><style type="text/css">.b{c:2}</style>' + BODY
    assert prune_notebook_styles(html) == '<style>.b{c:2}</style><style type="text/css"></style>' + BODY


def test_pages_without_a_notebook_are_not_touched(monkeypatch):
    monkeypatch.setattr(notebook_css, "prune_notebook_styles", lambda *a, **k: pytest.fail("pruned"))
    html = '<style type="text/css">.b{c:2}</style><div class="md-content">x</div>'
    assert notebook_css.on_page_content(html, None, config=None) is html


def test_notebook_pages_are_pruned_with_the_sites_references(monkeypatch):
    monkeypatch.setattr(notebook_css, "site_references", lambda config: frozenset({"--s"} if config == "site" else ()))
    html = '<style type="text/css">:root{--s:1;--t:2}.b{c:2}</style><div class="jupyter-wrapper">x</div>'
    assert notebook_css.on_page_content(html, None, config="site") == \
        '<style type="text/css">:root{--s:1}</style><div class="jupyter-wrapper">x</div>'


def test_the_sites_stylesheets_are_read_for_the_properties_they_use(tmp_path, monkeypatch):
    theme, docs = tmp_path / "theme", tmp_path / "docs"
    (theme / "assets" / "css").mkdir(parents=True)
    (docs / "assets").mkdir(parents=True)
    (theme / "assets" / "css" / "main.css").write_text("a{color:var(--md-accent)} b{c:var( --md-x,red)}")
    (theme / "other.txt").write_text("var(--not-css)")
    (docs / "assets" / "extra.css").write_text(".x{c:var(--extra)}", encoding="utf-8")
    config = SimpleNamespace(theme=SimpleNamespace(dirs=[str(theme), str(tmp_path / "missing")]),
                             docs_dir=str(docs), extra_css=["assets/extra.css", "assets/absent.css"])
    assert notebook_css.site_references(config) == {"--md-accent", "--md-x", "--extra"}
    (docs / "assets" / "extra.css").write_text(".x{c:var(--edited)}", encoding="utf-8")  # make serve, an edit
    os.utime(docs / "assets" / "extra.css", ns=(1, 1))
    assert notebook_css.site_references(config) == {"--md-accent", "--md-x", "--edited"}


def test_a_stylesheet_that_is_not_utf8_is_still_read(tmp_path, monkeypatch):
    (tmp_path / "t.css").write_bytes(b"/* \xff */ a{c:var(--kept)}")
    assert notebook_css.site_references(SimpleNamespace(theme=SimpleNamespace(dirs=[str(tmp_path)]),
                                                        docs_dir=str(tmp_path), extra_css=[])) == {"--kept"}


# ---- finer points ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body, kept", [
    ('zz<div class="jupyter-wrapper">x</div>', ""),  # text before any element is not a script
    ('<div class="jupyter-wrapper"><p>x</p>zz</div>', ""),  # nor text after an element closes
    ('<div class="jupyter-wrapper" id="zz" data-x="zz">x</div>', ""),  # nor other attributes
    ('<div class="jupyter-wrapper"><script>add("zz")</script>after</div>', ".zz{c:d}"),
    ('<div class="jupyter-wrapper"><script>add("Zz")</script></div>', ".Zz{c:d}"),
])
def test_what_counts_as_a_class_of_the_page(body, kept):
    assert _pruned(".zz{c:d}.Zz{c:d}", body) == kept


@pytest.mark.parametrize("css, kept", [
    ("p>body{m:0}", ""), ("p~html{m:0}", ""), ("p+body{m:0}", ""), (".a:root{m:0}", ".a:root{m:0}"),
    (".a.b{m:0}", ""), (".a, p{c:d}", ".a,p{c:d}"),
])
def test_combinators_without_spaces(css, kept):
    assert _pruned(css) == kept


def test_properties_read_only_by_unused_properties_go():
    assert _pruned(":root{--unused:var(--b);--b:1}.a{c:d}") == ".a{c:d}"


def test_chains_of_properties_are_followed_to_the_end():
    assert _pruned(":root{--p3:x;--p2:var(--p3);--p1:var(--p2)}.a{c:var(--p1)}") == \
        ":root{--p3:x;--p2:var(--p3);--p1:var(--p2)}.a{c:var(--p1)}"


def test_supports_blocks_are_pruned_inside():
    assert _pruned("@supports (display:grid){.a{g:h}.b{i:j}}") == "@supports (display:grid){.a{g:h}}"


def test_keyframes_inside_a_block_named_outside_it_stay():
    assert _pruned(".a{animation:spin 1s}@media print{@keyframes spin{to{x:1}}}") == \
        ".a{animation:spin 1s}@media print{@keyframes spin{to{x:1}}}"


def test_an_unnamed_keyframes_does_not_stop_the_rest():
    assert _pruned("@keyframes other{to{x:1}}.a{c:d}@font-face{f:g}") == ".a{c:d}@font-face{f:g}"
