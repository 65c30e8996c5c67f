"""The Chinese edition: translation at render time, and every English page's twin under docs/zh/."""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, named_page, write_catalogue
from snippets.lab import claims, i18n, render
from snippets.lab import context

DOCS = ROOT / "docs"
ENGLISH_PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if not p.is_relative_to(DOCS / "zh"))
NOTEBOOKS = sorted(p.name for p in (DOCS / "notebooks").glob("*.py"))


@pytest.fixture()
def zh(monkeypatch):
    monkeypatch.setattr(context.current(), "language", "zh")
    return i18n


@pytest.fixture()
def catalogue_in(tmp_path, monkeypatch):
    """A private set of catalogues: ``catalogue_in({"a/zh.po": {...}, "a/zh.po#notes": {"reordered": {...}}})``
    (the notes become translator comments on their entries; ``fuzzy``: entries flagged fuzzy)."""
    def write(files: dict[str, dict], fuzzy: tuple[str, ...] = ()):
        for name, entries in files.items():
            if not name.endswith("#notes"):
                write_catalogue(tmp_path / name, entries, notes=files.get(f"{name}#notes"), fuzzy=fuzzy)
        monkeypatch.setattr(i18n, "_ROOT", tmp_path)
        _forget()
        return i18n
    yield write
    _forget()


def _forget():
    for cached in (i18n._read, i18n.catalogue, i18n.notes, i18n.pending, i18n.translations, i18n._source_text):
        cached.cache_clear()


# --- translating ---------------------------------------------------------------------------------------------

def test_english_is_the_source_and_comes_back_unchanged():
    assert i18n.language() == "en"
    assert i18n.t("median") == "median"
    assert i18n.t("{n} runs", n=3) == "3 runs"


def test_a_text_and_a_template_are_translated(zh, catalogue_in):
    catalogue_in({"zh.po": {"median": "中位数", "{n} runs": "{n} 次运行"}})
    assert i18n.t("median") == "中位数"
    assert i18n.t("{n} runs", n=3) == "3 次运行"
    assert context.current().missing == {}


def test_a_pattern_matches_printed_text_and_translates_what_it_captured(zh, catalogue_in):
    catalogue_in({"zh.po": {"Batch {b}: needs {steps} steps": "批大小 {b}：需要 {steps} 步",
                              "{what} (sequential)": "{what}（顺序）", "loss": "损失"}})
    assert i18n.t("Batch 64: needs 3,140 steps") == "批大小 64：需要 3,140 步"
    assert i18n.t("loss (sequential)") == "损失（顺序）"
    # a field holding prose nobody translated does not make the pattern match: the text is reported instead
    assert i18n.t("the question's loss (sequential)") == "the question's loss (sequential)"
    assert ("zh", "the question's loss (sequential)") in context.current().missing


def test_a_field_used_twice_must_capture_the_same_text(zh, catalogue_in):
    catalogue_in({"zh.po": {"{x} against {x}": "{x} 对自身"}})
    assert i18n.t("a1 against a1") == "a1 对自身"
    assert i18n.translate("a1 against b2", "zh") is None


def test_a_missing_translation_is_kept_in_english_and_reported_with_its_page(zh, catalogue_in, monkeypatch):
    from snippets.lab import cache

    catalogue_in({"zh.po": {}})
    monkeypatch.setattr(context.current(), "page", "zh/seeding-order.md")
    assert i18n.t("bitwise equal") == "bitwise equal"
    assert context.current().missing == {("zh", "bitwise equal"): {"zh/seeding-order.md"}}


@pytest.mark.parametrize("name", ["Intel(R) Xeon(R) Processor", "Apple M2 Pro", "CPU (Intel(R) Core(TM) Ultra 7 Processor)"])
def test_what_a_machine_calls_itself_is_shown_as_it_is_on_a_chinese_page(zh, catalogue_in, monkeypatch, name):
    """A rebuilder's CPU or GPU is in no catalogue: its name, which reads as words, must not stop the Chinese build."""
    from snippets.lab import environment, render

    catalogue_in({"zh.po": {"field": "字段", "value": "值", "cpu": "CPU", "threads": "线程数"}})
    assert i18n.t(name) == name and context.current().missing, "as plain text it is words nobody translated"
    context.current().missing.clear()
    fingerprint = {"cpu": name, "device_name": f"CPU ({name})", "threads": 1}
    table = render.fingerprint_table(fingerprint)
    assert name in table and "| 字段 | 值 |" in table
    monkeypatch.setattr(environment, "cpu_model", lambda: name)
    rows = dict(environment.describe())
    assert rows["CPU model"] == name and render.t(rows["CPU model"]) == name
    assert context.current().missing == {}, context.current().missing


@pytest.mark.parametrize("text", ["`torch.randn`", "1.07 ms", "DataLoader, shuffle=True", "num_workers=2",
                                  "TensorDataset", "CPU", "2.13.0+cpu", "中位数", "Python", "—", "3 × 4", "GB/s"])
def test_code_numbers_identifiers_and_chinese_need_no_translation(text):
    assert not i18n.needs_translation(text)


@pytest.mark.parametrize("text", ["median", "**no**", "direct (as asked)", "Loss per epoch", "the CPU",
                                  "DataLoader per batch", "yes"])
def test_words_need_a_translation(text):
    assert i18n.needs_translation(text)


def test_a_key_translated_differently_in_two_catalogues_is_an_error(catalogue_in):
    catalogue_in({"a/zh.po": {"median": "中位数"}, "b/zh.po": {"median": "中值"}})
    with pytest.raises(ValueError, match="translated twice, differently"):
        i18n.catalogue("zh")


def test_a_translation_must_keep_the_keys_fields(catalogue_in):
    catalogue_in({"zh.po": {"{n} runs": "{count} 次运行"}})
    with pytest.raises(ValueError, match="same fields"):
        i18n.catalogue("zh")


def test_a_swapped_pair_of_fields_is_refused_unless_the_notes_say_why(catalogue_in):
    catalogue_in({"zh.po": {"{low} to {high}": "{high} 至 {low}"}})
    with pytest.raises(ValueError, match=r"order \['high', 'low'\], the key in \['low', 'high'\]"):
        i18n.catalogue("zh")
    catalogue_in({"zh.po": {"{count} of {runs}": "{runs} 次中 {count} 次"},
                  "zh.po#notes": {"reordered": {"{count} of {runs}": "the whole before the part"}}})
    assert i18n.translate("3 of 10", "zh") == "10 次中 3 次"


@pytest.mark.parametrize("value", ["{} 次运行", "{0} 次运行", "{n 次运行"])
def test_an_unnamed_or_broken_field_is_refused(catalogue_in, value):
    catalogue_in({"zh.po": {"{n} runs": value}})
    with pytest.raises(ValueError, match="unnamed or indexed field|not a valid template|same fields"):
        i18n.catalogue("zh")


def test_a_wrong_literal_digit_is_refused_and_an_added_one_allowed(catalogue_in):
    catalogue_in({"zh.po": {"more than 5× as long": "耗时是 6 倍以上"}})
    with pytest.raises(ValueError, match=r"must keep the key's literal numbers \['5'\], it lacks \['5'\]"):
        i18n.catalogue("zh")
    catalogue_in({"zh.po": {"ends more than 3× below": "不到 1/3"}})
    assert i18n.translate("ends more than 3× below", "zh") == "不到 1/3"


def test_a_translation_handed_back_to_t_is_reported_not_passed_through(zh, catalogue_in, monkeypatch):
    catalogue_in({"zh.po": {"median": "中位数"}})
    monkeypatch.setattr(context.current(), "page", "zh/loader-overhead.md")
    assert i18n.t(i18n.t("median")) == "中位数"
    assert context.current().twice == {("zh", "中位数"): {"zh/loader-overhead.md"}}
    assert i18n.t("一句中文") == "一句中文" and ("zh", "一句中文") not in context.current().twice, \
        "a page's own Chinese is not a translation"


def test_an_entry_no_build_used_and_nothing_writes_is_reported(zh, catalogue_in):
    catalogue_in({"zh.po": {"median": "中位数", "{count} of {runs}": "{runs} 次中 {count} 次",
                              "3 of 10": "10 次中 3 次", "held back": "保留", "a docstring line": "一行"},
                  "zh.po#notes": {"reordered": {"{count} of {runs}": "the whole before the part"},
                                    "unused": {"a docstring line": "torch's docstring changes"}}})
    (i18n._ROOT / "figures.py").write_text('label = t("held back")\n', encoding="utf-8")
    i18n._source_text.cache_clear()
    i18n.t("median"), i18n.t("4 of 10")
    assert context.current().used == {"median", "{count} of {runs}"}
    assert i18n.unused("zh", context.current().used) == ["3 of 10"], \
        "held back is written in the code (printed on some machines only); the docstring line is noted"


def test_a_note_without_its_reason_is_refused_and_a_wrapped_one_is_read_whole(catalogue_in):
    catalogue_in({"zh.po": {"median": "中位数"}, "zh.po#notes": {"unused": {"median": ""}}})
    with pytest.raises(ValueError, match=r"the note 'unused' on 'median' gives no reason"):
        i18n.catalogue("zh")
    catalogue_in({"zh.po": {"median": "中位数"}})
    path = i18n._ROOT / "zh.po"
    path.write_text(path.read_text(encoding="utf-8").replace(
        'msgid "median"', '# unused: printed on a CUDA device\n# only\nmsgid "median"'), encoding="utf-8")
    _forget()
    assert i18n.notes("zh")["unused"] == {"median": "printed on a CUDA device only"}


def test_a_catalogue_that_is_not_gettext_is_named(catalogue_in):
    catalogue_in({"zh.po": {}})
    (i18n._ROOT / "zh.po").write_text('msgid "a"\nmsgstr "甲"\nnonsense "b"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"zh.po: not a valid gettext catalogue"):
        i18n.catalogue("zh")


def test_a_fuzzy_or_untranslated_entry_translates_nothing_and_is_named(zh, catalogue_in):
    """The usual gettext workflow: an entry flagged fuzzy (its English changed since it was translated) or left
    empty is not used; the text stays missing, and ``pending`` says which entry waits, and where."""
    catalogue_in({"zh.po": {"median": "中位数", "mean of the rounds": "各组的平均值", "spread": ""}},
                 fuzzy=("mean of the rounds",))
    assert i18n.t("median") == "中位数"
    assert i18n.t("mean of the rounds") == "mean of the rounds" and i18n.t("spread") == "spread"
    assert set(context.current().missing) == {("zh", "mean of the rounds"), ("zh", "spread")}
    waiting = i18n.pending("zh")
    assert set(waiting) == {"mean of the rounds", "spread"}
    assert waiting["mean of the rounds"].startswith("is fuzzy") and waiting["spread"].startswith("has no translation")


def test_the_language_of_a_page_is_its_folder():
    assert i18n.language_of("zh/seeding-order.md") == "zh"
    assert i18n.language_of("zh/notebooks/question_steps.py") == "zh"
    assert i18n.language_of("seeding-order.md") == "en"
    assert i18n.language_of("zhongwen.md") == "en"


def test_a_stamp_keeps_versions_and_translates_its_words(zh):
    assert i18n.stamp("torch 2.13.0+cpu, AMD EPYC 7B13, 2 threads") == "torch 2.13.0+cpu, AMD EPYC 7B13, 2 个线程"
    assert i18n.stamp("torch 2.13.0, 1 thread") == "torch 2.13.0, 1 个线程"


# --- what the renderers print in Chinese -------------------------------------------------------------------------

def test_a_table_is_printed_in_the_pages_language(zh):
    table = render.table(["operation", "advances the global RNG"], [["`torch.randn`", "**yes**"]], align="lc")
    header, _, row = table.splitlines()
    assert re.search(r"[\u4e00-\u9fff]", header) and "operation" not in header and "advances" not in header, header
    assert row.startswith("| `torch.randn` | **") and "yes" not in row and re.search(r"[\u4e00-\u9fff]", row), row
    assert context.current().missing == {}


def test_a_figure_is_drawn_with_chinese_words_in_a_cjk_font(zh):
    from snippets.lab.cache import Result

    fig, ax = render.new_figure("wide")
    ax.plot([1, 2], [3, 4], label="direct (as asked)")
    ax.set(xlabel="epoch", ylabel="MSE loss", title="Loss per epoch")
    ax.legend()
    result = Result({"x": 1}, "probe.figure", {}, {}, "2026-01-01T00:00:00+00:00", 0.0, False, cached=False)
    svg = render.svg(lambda: fig, result, drawn_by=test_a_figure_is_drawn_with_chinese_words_in_a_cjk_font,
                     alt="Loss curves of direct and DataLoader training, and their difference")
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "Loss per epoch" not in texts and "epoch" not in texts and texts.count("轮") == 1, texts
    assert all(re.search(r"[\u4e00-\u9fff]", text) for text in texts if re.search("[a-z]{3}", text)
               and "DataLoader" not in text and "MSE" not in text), texts
    assert f"'{render.CJK_FONT}', {render.CJK_FALLBACKS}" in svg, "no CJK font for readers without Noto"
    assert 'aria-label="' in svg and "DataLoader" in svg.split('aria-label="')[1].split('"')[0]
    assert not re.search(r'aria-label="Loss curves', svg), "the alt text is still English"
    assert context.current().missing == {}, context.current().missing


def test_without_the_cjk_font_a_chinese_figure_says_what_to_install(monkeypatch):
    monkeypatch.setattr(render, "CJK_FONT", "No Such Font CJK")
    with pytest.raises(RuntimeError, match="fonts-noto-cjk"):
        render.cjk_font()


def test_an_english_figure_keeps_its_font(monkeypatch):
    fig, ax = render.new_figure("wide")
    ax.set_title("Loss per epoch")
    render.translate_figure(fig)
    assert ax.title.get_text() == "Loss per epoch" and render.CJK_FONT not in ax.title.get_fontfamily()


# --- claims in two languages --------------------------------------------------------------------------------------

def test_a_claims_words_and_tip_are_in_the_pages_language(zh):
    outcome = claims.Check(name="seeding.probe", condition="from equal starts, no epoch's loss differs between the "
                           "direct and the DataLoader run", holds=True, values={"device": "the CPU", "n": 4})
    text = claims.say(outcome, "在 {device} 上，{n} 个参数张量不同。")
    sentence = re.search(r'<span class="pitfalls-claim"[^>]*>(.*?)</span>', text).group(1)
    assert "the CPU" not in sentence and "在 CPU 上" in sentence, text
    tip = re.search(r'class="pitfalls-claim__tip"[^>]*>(.*?)</span>', text).group(1)
    assert "Checked when" not in tip and "no epoch's loss" not in tip and re.search(r"[\u4e00-\u9fff]", tip), tip
    assert context.current().missing == {}, context.current().missing


def test_a_contradicted_claim_is_collected_in_a_build_and_raised_outside_one(monkeypatch):
    outcome = claims.Check(name="p.c", condition="x > 1", holds=False, values={"x": 0})
    with pytest.raises(claims.ClaimError, match="Claim contradicted"):
        claims.say(outcome, "x is {x}")
    monkeypatch.setattr(context.current(), "collect_contradictions", True)
    text = claims.say(outcome, "x is {x}")
    assert "pitfalls-claim--contradicted" in text
    assert context.current().contradicted == [{"check": "p.c", "condition": "x > 1", "measured": "x = 0", "page": None,
                                    "sentence": "x is 0"}]


def test_every_check_condition_and_every_lab_template_has_a_chinese_translation():
    i18n.catalogue.cache_clear()
    found = claims.topic_checks()
    assert {"loader", "seeding", "steps"} <= {name.split(".")[0] for name in found}
    untranslated = [f"check {name}: {check.condition!r}" for name, check in found.items()
                    if i18n.translate(check.condition, "zh") is None]
    def calls(tree):  # skipping the mutated copies mutation testing writes beside each function (x__mutmut_3)
        for node in ast.iter_child_nodes(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name:
                continue
            yield node
            yield from calls(node)

    for path in sorted((ROOT / "snippets" / "lab").glob("*.py")):
        for node in calls(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "t" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                if i18n.needs_translation(node.args[0].value) and i18n.translate(node.args[0].value, "zh") is None:
                    untranslated.append(f"{path.name}:{node.lineno}: {node.args[0].value!r}")
    assert not untranslated, "no Chinese for:\n" + "\n".join(untranslated)


def test_the_shipped_catalogues_load():
    i18n.catalogue.cache_clear()
    exact, patterns = i18n.catalogue("zh")
    assert len(exact) > 100 and patterns
    assert all(i18n.catalogue_files("zh"))


# --- every English page has its Chinese twin ---------------------------------------------------------------------

FENCE = re.compile(r'^(?P<indent>[ ]*)```python exec="1"(?P<attrs>[^\n]*)\n(?P<body>.*?)^(?P=indent)```', re.S | re.M)
HEADING = re.compile(r"^(#{1,6}) (.*?)(?:\s*\{\s*#([\w-]+)\s*\})?\s*$", re.M)


def headings(markdown: str) -> list[tuple[int, str]]:
    """(level, anchor) of each heading outside code; an English heading's anchor is the one MkDocs derives."""
    from markdown.extensions.toc import slugify

    outside = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    return [(len(hashes), anchor or slugify(re.sub(r"[`*]", "", text), "-"))
            for hashes, text, anchor in HEADING.findall(outside)]


class _Sentences(ast.NodeTransformer):
    """Every string of a syntax tree reduced to the fields it fills in (``{total}``); an f-string to its
    expressions."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            return ast.Constant(value=("string", tuple(sorted(re.findall(r"\{[^{}]*\}", node.value)))))
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        fields = sorted(ast.unparse(ast.JoinedStr(values=[value])) for value in node.values
                        if isinstance(value, ast.FormattedValue))
        return ast.Constant(value=("f-string", tuple(fields)))


def code_shape(code: str) -> str:
    """An exec block's syntax tree, with each string reduced to the fields it fills in: the code must be the same
    in both languages, the sentences may not. A tree, not tokens: Python 3.12 tokenizes f-strings piece by piece
    (PEP 701), and the comparison must mean the same on every Python the project supports."""
    tree = _Sentences().visit(ast.parse(textwrap.dedent(code)))
    return ast.dump(tree, include_attributes=False)


def test_the_pages_are_found():
    assert {"index.md", "seeding-order.md", "loader-overhead.md", "update-steps.md", "environment.md"} <= set(ENGLISH_PAGES)


@pytest.mark.parametrize("page", ENGLISH_PAGES)
def test_every_english_page_has_a_chinese_twin_with_the_same_sections(page):
    twin = DOCS / "zh" / page
    assert twin.is_file(), f"docs/{page} has no Chinese twin docs/zh/{page}"
    english, chinese = (DOCS / page).read_text(encoding="utf-8"), twin.read_text(encoding="utf-8")
    assert headings(chinese) == headings(english), (
        f"docs/zh/{page}: its headings (level, anchor) differ from docs/{page}'s — a section added to one "
        f"language must be added to the other")
    assert re.search(r"[\u4e00-\u9fff]", chinese), f"docs/zh/{page} is not written in Chinese"
    assert _front_matter(chinese).get("collapsed") == _front_matter(english).get("collapsed"), (
        f"docs/zh/{page}: the sections it opens closed (front matter 'collapsed') differ from docs/{page}'s")


def _front_matter(text: str) -> dict:
    import yaml

    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    return yaml.safe_load(match.group(1)) if match else {}


def template_shape(markdown: str) -> tuple:
    """What a page of named values computes and names: its template's tree without its prose, each string reduced to
    the fields it fills in, and the values named between two statements in any order (a sentence in another
    language names them in another order)."""
    from jinja2 import nodes

    def shape(node: nodes.Node):  # noqa: ANN202 - a nested tuple
        if isinstance(node, nodes.TemplateData):
            return None
        if isinstance(node, nodes.Const) and isinstance(node.value, str):
            return ("string", tuple(sorted(re.findall(r"\{[^{}]*\}", node.value))))
        if isinstance(node, nodes.Concat):  # "text " ~ value ~ " text": a sentence, however its words are ordered
            parts = [shape(part) for part in node.nodes]
            strings = [part for part in parts if part and part[0] == "string"]
            return ("sentence", tuple(sorted(field for part in strings for field in part[1])),
                    tuple(sorted(map(repr, (part for part in parts if part not in strings)))))
        if isinstance(node, nodes.Output):
            return ("output", tuple(sorted(map(repr, filter(None, map(shape, node.nodes))))))
        fields = []
        for name in node.fields:
            value = getattr(node, name)
            if isinstance(value, list):
                value = tuple(item for item in (shape(v) if isinstance(v, nodes.Node) else v for v in value)
                              if item is not None)
            elif isinstance(value, nodes.Node):
                value = shape(value)
            fields.append(value)
        return (type(node).__name__, *fields)

    named = named_page(markdown)
    assert named is not None, "not a page of named values"
    return shape(named[1])


def test_the_template_shape_sees_a_value_named_in_one_language_only():
    english = "---\nnames: true\n---\n{% set r = run(m) %}{{ r.a }} of {{ r.b }}, {{ say(c(r), 'x {n}') }}\n"
    chinese = "---\nnames: true\n---\n{% set r = run(m) %}{{ r.b }} 个中的 {{ r.a }}，{{ say(c(r), '一 {n}') }}\n"
    assert template_shape(english) == template_shape(chinese), "the same values, in another order and language"
    assert template_shape(english) != template_shape(chinese.replace("{{ r.a }}", "{{ r.c }}"))
    assert template_shape(english) != template_shape(chinese.replace("'一 {n}'", "'一'")), "a field left out"
    joined = english.replace("'x {n}'", "'x {n} of ' ~ r.c ~ ' in all'")
    assert template_shape(joined) == template_shape(chinese.replace("'一 {n}'", "'一 {n}' ~ r.c")), (
        "a sentence joined from text and values, the text around them in another place")
    assert template_shape(joined) != template_shape(chinese.replace("'一 {n}'", "'一 {n}' ~ r.a"))


@pytest.mark.parametrize("page", ENGLISH_PAGES)
def test_every_exec_block_runs_the_same_code_in_both_languages(page):
    twin = DOCS / "zh" / page
    if named_page((DOCS / page).read_text(encoding="utf-8")) is not None:  # one copy of the code: the values named
        assert template_shape(twin.read_text(encoding="utf-8")) == template_shape(
            (DOCS / page).read_text(encoding="utf-8")), (
            f"docs/zh/{page} names other values, or fills in other fields, than docs/{page}")
    english = list(FENCE.finditer((DOCS / page).read_text(encoding="utf-8")))
    chinese = list(FENCE.finditer(twin.read_text(encoding="utf-8")))
    assert len(chinese) == len(english), f"docs/zh/{page}: {len(chinese)} exec blocks, docs/{page} {len(english)}"
    for number, (a, b) in enumerate(zip(english, chinese), 1):
        assert b["attrs"] == a["attrs"], f"docs/zh/{page}: exec block {number}'s fence differs"
        assert code_shape(b["body"]) == code_shape(a["body"]), (
            f"docs/zh/{page}: exec block {number} ({a['attrs'].strip()}) runs different code, or its sentences "
            "fill in different fields")


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_notebook_has_a_chinese_twin_with_the_same_code(notebook):
    def cells(text: str) -> list[tuple[str, str]]:
        parts = re.split(r"^# %%(.*)$", text, flags=re.M)
        return [("markdown" if "[markdown]" in head else "code", body.strip() if "[markdown]" not in head else "")
                for head, body in zip(parts[1::2], parts[2::2])]

    twin = DOCS / "zh" / "notebooks" / notebook
    assert twin.is_file(), f"docs/notebooks/{notebook} has no Chinese twin"
    assert cells(twin.read_text(encoding="utf-8")) == cells((DOCS / "notebooks" / notebook).read_text(encoding="utf-8"))


def test_the_heading_comparison_sees_a_missing_section():
    english = "# T\n\n## One\n\n## Two\n"
    assert headings("# 标题 { #t }\n\n## 一 { #one }\n") != headings(english)
    assert headings("# 标题 { #t }\n\n## 一 { #one }\n\n## 二 { #two }\n") == headings(english)


def test_the_code_comparison_sees_changed_code_but_not_changed_sentences():
    a = 'print(say(c, "After one seed, {differ} of {total} differ."), x + 1)\n'
    assert code_shape('print(say(c, "一个种子之后，{total} 个中有 {differ} 个不同。"), x + 1)\n') == code_shape(a)
    assert code_shape('print(say(c, "一个种子之后有 {differ} 个不同。"), x + 1)\n') != code_shape(a)
    assert code_shape('print(say(c, "After one seed, {differ} of {total} differ."), x + 2)\n') != code_shape(a)


def test_the_code_comparison_reads_f_strings_by_their_fields_on_every_python():
    a = 'print(f"After one seed, {differ} of {total:,} differ.", x)\n'
    assert code_shape('print(f"一个种子之后，{total:,} 个中有 {differ} 个不同。", x)\n') == code_shape(a)
    assert code_shape('print(f"一个种子之后，{total} 个中有 {differ} 个不同。", x)\n') != code_shape(a)
    assert code_shape('print(f"有 {differ} 个不同。", x)\n') != code_shape(a)
    assert code_shape('print("After one seed, {differ} of {total:,} differ.", x)\n') != code_shape(a)
    assert code_shape('    y = 1  # a comment\n    print(y)\n') == code_shape('y = 1\nprint(y)\n')


# --- the build: one execution, one failure -----------------------------------------------------------------------

def test_a_wrapped_chinese_paragraph_reads_as_one_but_code_keeps_its_lines():
    from snippets.lab import mkdocs_hook

    markdown = "第一行，\n第二行。\nEnglish line\n中文\n\n```python\nx = '甲'\n'乙'\n```\n"
    joined = mkdocs_hook.join_cjk_lines(markdown)
    assert joined.startswith("第一行，第二行。\nEnglish line\n中文")
    assert "x = '甲'\n'乙'" in joined


def test_a_translated_notebook_is_found_by_its_folder():
    from snippets.lab import mkdocs_hook

    assert mkdocs_hook._twin("docs/zh/notebooks/q.py") == Path("docs/notebooks/q.py")
    assert mkdocs_hook._twin("docs/notebooks/q.py") is None


def _notebook(path: Path, cells: list[tuple[str, str]]) -> None:
    path.write_text("".join(f"# %% {head}\n{body}\n\n" for head, body in cells), encoding="utf-8")


def test_a_translated_notebook_takes_its_outputs_from_the_one_execution(fresh_hook, tmp_path, monkeypatch):
    import nbformat

    from snippets.lab import mkdocs_hook

    docs = tmp_path / "docs"
    (docs / "notebooks").mkdir(parents=True)
    (docs / "zh" / "notebooks").mkdir(parents=True)
    _notebook(docs / "notebooks" / "q.py", [("[markdown]", "# Title"), ("", "print(1)")])
    _notebook(docs / "zh" / "notebooks" / "q.py", [("[markdown]", "# 标题"), ("", "print(1)")])
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    runs = []

    def execute():  # stands for nbclient: the English notebook, executed with its output
        import jupytext

        notebook = jupytext.read(docs / "notebooks" / "q.py")
        notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
        target = fresh_hook._executed_path(str(docs / "notebooks" / "q.py"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(nbformat.writes(notebook), encoding="utf-8")
        runs.append(1)

    merged = fresh_hook._translated(str(docs / "zh" / "notebooks" / "q.py"), docs / "notebooks" / "q.py", execute)
    notebook = nbformat.read(merged, as_version=4)
    assert notebook.cells[0].source == "标题" and notebook.cells[1].outputs[0]["text"] == "1\n"
    fresh_hook._translated(str(docs / "zh" / "notebooks" / "q.py"), docs / "notebooks" / "q.py", execute)
    assert runs == [1], "the English notebook ran more than once"
    _notebook(docs / "zh" / "notebooks" / "q.py", [("[markdown]", "# 标题"), ("", "print(2)")])
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="code cell 1 differs"):
        fresh_hook._translated(str(docs / "zh" / "notebooks" / "q.py"), docs / "notebooks" / "q.py", execute)
    _notebook(docs / "zh" / "notebooks" / "q.py", [("[markdown]", "# 标题"), ("", "print(1)"), ("", "print(3)")])
    with pytest.raises(PluginError) as raised:
        fresh_hook._translated(str(docs / "zh" / "notebooks" / "q.py"), docs / "notebooks" / "q.py", execute)
    assert str(raised.value).endswith(": code cell 2 differs; 2 code cells here, 1 there"), \
        "a cell more than the twin has is the first that differs"


def test_a_claim_contradicted_in_both_languages_fails_the_build_once_naming_both_pages(fresh_hook, tmp_path, monkeypatch):
    from types import SimpleNamespace

    from mkdocs.exceptions import PluginError

    from snippets.lab import mkdocs_hook

    class Plugins(dict):
        pass

    plugin = SimpleNamespace(current_language="en", default_language="en", build_languages=["en", "zh"])
    config = SimpleNamespace(plugins=Plugins(i18n=plugin), site_dir=str(tmp_path), extra_css=[], site_name="S")
    monkeypatch.setattr(fresh_hook._session, "contradicted", {})
    for language, page, sentence in (("en", "seeding-order.md", "x is 0"), ("zh", "zh/seeding-order.md", "x 为 0")):
        context.current().contradicted.append({"check": "p.c", "condition": "x > 1", "measured": "x = 0", "page": page,
                                    "sentence": sentence})
        fresh_hook.on_page_content("<h1>T</h1>", SimpleNamespace(file=SimpleNamespace(src_path=page), url=""))
        plugin.current_language = language
        if language == "en":
            fresh_hook.on_post_build(config)  # the first language: the build goes on to the next
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_post_build(config)
    message = str(raised.value)
    assert message.count("Claim contradicted") == 1
    assert "page docs/seeding-order.md: 'x is 0'" in message and "page docs/zh/seeding-order.md: 'x 为 0'" in message


# --- edges the mutation tests found ----------------------------------------------------------------------------

def test_english_asks_no_catalogue_and_reports_nothing(monkeypatch):
    assert i18n.t_in("en", "a sentence nobody translates") == "a sentence nobody translates"
    assert i18n.t("{n} runs") == "{n} runs", "a template without fields is returned as it is"
    assert context.current().missing == {}


def test_a_text_asked_for_outside_a_page_is_reported_as_such(zh, catalogue_in):
    catalogue_in({"zh.po": {}})
    i18n.t("bitwise equal")
    assert context.current().missing == {("zh", "bitwise equal"): {"?"}}


def test_when_a_longer_pattern_cannot_translate_what_it_captured_a_shorter_one_is_tried(zh, catalogue_in):
    catalogue_in({"zh.po": {"{a} of {b} runs": "{b} 中的 {a} 次运行", "{x} runs": "{x} 次", "foo of bar": "甲之乙"},
                  "zh.po#notes": {"reordered": {"{a} of {b} runs": "the whole before the part"}}})
    assert i18n.t("foo of bar runs") == "甲之乙 次"


def test_a_two_letter_word_needs_a_translation():
    assert i18n.needs_translation("Ok") and i18n.needs_translation("Or")


def test_the_language_of_a_windows_path_is_its_folder():
    assert i18n.language_of("zh\\seeding-order.md") == "zh"
    assert i18n.language_of("zh\\notebooks\\question_steps.py") == "zh"


def test_a_contradicted_claim_reads_in_the_pages_language_with_its_measured_words_translated(zh, catalogue_in,
                                                                                            monkeypatch):
    catalogue_in({"zh.po": {"contradicted by this build": "与本次构建的测量矛盾", "the CPU": "CPU"}})
    monkeypatch.setattr(context.current(), "collect_contradictions", True)
    monkeypatch.setattr(claims, "_on_other_machines", lambda outcome: "")
    outcome = claims.Check(name="p.c", condition="x > 1", holds=False, values={"device": "the CPU", "x": 0})
    text = claims.say(outcome, "在 {device} 上 x 为 {x}")
    assert text.startswith('<span class="pitfalls-claim pitfalls-claim--contradicted" tabindex="0" role="button"')
    assert '>在 CPU 上 x 为 0 <em>— 与本次构建的测量矛盾</em></span>' in text
    assert context.current().contradicted[0]["sentence"] == "在 CPU 上 x 为 0"
    assert context.current().missing == {}


def test_the_exact_advice_when_the_cjk_font_is_missing(monkeypatch):
    monkeypatch.setattr(render, "CJK_FONT", "No Such Font CJK")
    with pytest.raises(RuntimeError) as raised:
        render.cjk_font()
    assert str(raised.value) == (
        "The Chinese edition's figures need the font No Such Font CJK, which matplotlib cannot find: install it "
        "(Debian/Ubuntu: sudo apt-get install fonts-noto-cjk; macOS: brew install --cask font-noto-sans-cjk-sc; "
        "elsewhere: https://github.com/notofonts/noto-cjk) and run the command again.")


def test_fixed_tick_labels_are_translated(zh, catalogue_in):
    from matplotlib.ticker import FixedFormatter

    catalogue_in({"zh.po": {"direct": "直接", "DataLoader": "DataLoader"}})
    fig, ax = render.new_figure("wide")
    ax.bar([0, 1], [1, 2])
    ax.set_xticks([0, 1])
    ax.xaxis.set_major_formatter(FixedFormatter(["direct", "DataLoader"]))
    render.translate_figure(fig)
    assert ax.xaxis.get_major_formatter().seq == ["直接", "DataLoader"]


def test_a_figures_cache_key_follows_the_chinese_catalogue_but_not_its_order(monkeypatch):
    from types import SimpleNamespace

    result = SimpleNamespace(value={"x": 1}, experiment="probe.figure", timing=False)
    asked = []
    catalogues = {"zh": ({"a": "甲", "b": "乙"}, ())}

    def catalogue(language):
        asked.append(language)
        return catalogues[language]

    monkeypatch.setattr(i18n, "catalogue", catalogue)
    key = functools.partial(render._figure_key, result, "alt", "draw-digest")
    english = key()
    assert asked == [], "an English figure's key needs no catalogue"
    monkeypatch.setattr(context.current(), "language", "zh")
    chinese = key()
    assert chinese != english and asked == ["zh"]
    catalogues["zh"] = ({"b": "乙", "a": "甲"}, ())
    assert key() == chinese, "the same translations in another order draw the same figure"
    catalogues["zh"] = ({"a": "甲", "b": "丙"}, ())
    assert key() != chinese, "a changed translation draws the figure again"


def test_a_tables_numbers_are_printed_as_they_are(zh):
    table = render.table(["batch size", "steps"], [[512, 20], [10_000, 1.5]], align="rr")
    assert table.splitlines()[2:] == ["| 512 | 20 |", "| 10000 | 1.5 |"]


def test_chinese_text_in_a_figure_names_fonts_a_reader_may_have():
    cjk, latin = f"font: 10px '{render.CJK_FONT}'", "font: 10px 'DejaVu Sans'"
    svg = render.lean_svg('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
                          f'<text style="{cjk}">批</text><text style="{latin}">a</text><text>b</text></svg>',
                          label="x")
    texts = re.findall(r"<text[^>]*>", svg)
    assert texts == [f"<text style=\"font: 10px '{render.CJK_FONT}', {render.CJK_FALLBACKS}\">",
                     f'<text style="{latin}">', "<text>"]


def test_the_noise_warning_is_written_once_in_chinese_with_nothing_translated_twice(zh):
    """What a busy machine prints, in the Chinese edition: each reason translated once, joined as Chinese clauses
    (a list joiner that translated again once failed the build on a machine that drifted)."""
    interval = {"value": 12.8, "low": 12.3, "high": 13.3, "contention": 0.4, "drifted": True, "noisy": True}
    shown = render.noise_warning([("DataLoader ÷ direct", interval)])
    assert context.current().twice == {} and context.current().missing == {}, (context.current().twice,
                                                                             context.current().missing)
    assert "其他程序占用了它所需 CPU 时间的 40%；机器的速度发生了漂移" in shown and "——" in shown, shown
    assert "DataLoader ÷ 直接循环：" in shown, shown
    stage = render.noise_warning([("the rest: freeing the N samples, DataLoader's __next__ bookkeeping, the clock's "
                                   "own reads", {**interval, "value": 0.1, "low": 0.05, "high": 0.15}, True)])
    assert "<code>__next__</code>" in stage and "**" not in stage and "`" not in stage, stage


def test_no_page_relies_on_a_code_annotation():
    """Material turns `# (1)!` into an annotation in the browser only, once the code block is equipped: the page's
    text, a copied block and a reader without JavaScript keep the marker. Pages explain code in prose instead."""
    marked = [str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")
              if re.search(r"#\s*\(\d+\)!?", path.read_text(encoding="utf-8"))]
    assert not marked, f"annotation markers in {marked}"


def test_make_translations_keeps_a_changed_texts_translation_as_fuzzy_and_drops_what_nothing_prints(catalogue_in):
    """``make translations`` on what a build printed: the edited English takes its old translation, flagged fuzzy
    with the old English beside it; an entry nothing prints or writes goes, one noted as unused stays; a new text
    goes, untranslated, to the catalogue of the package whose code writes it (the lab's when none does)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("translations", ROOT / "tools" / "translations.py")
    translations = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(translations)
    from babel.messages.pofile import read_po

    old, new = "share of a whole epoch timed beside it (95% interval)", "share of a whole epoch timed next to it (95% interval)"
    catalogue_in({"lab/zh.po": {"median": "中位数", "an old label nothing prints": "旧标签", "a CUDA row": "CUDA 行"},
                  "lab/zh.po#notes": {"unused": {"a CUDA row": "printed on a CUDA device only"}},
                  "pkg/zh.po": {old: "占与之一同计时的整轮耗时的比例（95% 区间）"}})
    (i18n._ROOT / "pkg" / "figures.py").write_text('LABEL = "a label the package writes"\n', encoding="utf-8")
    report = translations.update("zh", {"used": ["median"],
                                        "missing": [new, "a label the package writes", "a text no code writes"]})

    def entries(name):
        with (i18n._ROOT / name / "zh.po").open("rb") as stream:
            return {m.id: m for m in read_po(stream) if m.id}

    lab, pkg = entries("lab"), entries("pkg")
    assert set(lab) == {"median", "a CUDA row", "a text no code writes"}, "the unused entry went, the noted one stayed"
    assert lab["a text no code writes"].string == "" and not lab["a text no code writes"].fuzzy
    assert set(pkg) == {new, "a label the package writes"}
    assert pkg[new].fuzzy and pkg[new].string == "占与之一同计时的整轮耗时的比例（95% 区间）"
    assert f'#| msgid "{old}"' in (i18n._ROOT / "pkg" / "zh.po").read_text(encoding="utf-8"), "the old English shown"
    assert pkg["a label the package writes"].string == ""
    assert any("fuzzy" in line and new in line for line in report) and any("dropped" in line for line in report)
    _forget()
    assert set(i18n.pending("zh")) == {new, "a label the package writes", "a text no code writes"}
    assert new not in i18n.catalogue("zh")[0], "a fuzzy entry translates nothing until it is checked"
    pkg_text = (i18n._ROOT / "pkg" / "zh.po").read_text(encoding="utf-8")
    again = {"used": ["median"], "missing": [new, "a label the package writes", "a text no code writes"]}
    assert translations.update("zh", again) == [], "a second run, nothing checked yet, changes nothing"
    assert (i18n._ROOT / "pkg" / "zh.po").read_text(encoding="utf-8") == pkg_text, "the old English kept beside it"
    assert "python-format" not in pkg_text, "'95% i' is no printf format: gettext's checkers would hold it to one"


def test_a_count_of_none_is_said_in_words_of_its_own_in_either_language(monkeypatch):
    keys = ("differ at none of {total} epochs", "differ at {count} of {total} epochs")
    with context.using(context.Build(language="en")):
        assert i18n.count_or_none(0, *keys, total=2000) == "differ at none of 2,000 epochs"
        assert i18n.count_or_none(1234, *keys, total=2000) == "differ at 1,234 of 2,000 epochs"
        assert i18n.count_or_none(1, *keys, total="all") == "differ at 1 of all epochs", "a text field as it is"
    with context.using(context.Build(language="zh")):
        assert i18n.count_or_none(0, *keys, total=2000) == "在全部 2,000 轮中完全一致"
        assert i18n.count_or_none(1234, *keys, total=2000) == "在 2,000 轮中有 1,234 轮不同"


def test_a_catalogue_text_is_written_in_the_code_when_each_literal_part_of_it_is(tmp_path):
    first, second = tmp_path / "a.py", tmp_path / "b.md"
    first.write_text('say("The loader took {seconds} "\n    f"in all")\n', encoding="utf-8")
    second.write_text("A page: {count} figures.\n", encoding="utf-8")
    source = i18n.sources([first, second])
    assert source == 'say("The loader took {seconds} in all")\n\nA page: {count} figures.\n', \
        "a string split over lines joined, the files one after the other"
    assert i18n.written("The loader took {seconds} in all", source)
    assert i18n.written("{count} figures", source) and not i18n.written("{count} tables", source)
    assert i18n.written("{n} of {m}", "3 of 4") is False and i18n.written("{n} of {m}", "{n} of {m}") is True, \
        "a key of short parts only is looked up whole"
    assert not i18n.written("The loader took {seconds} in total", source), "every part must be there"
    assert i18n.written("in", "x") is False and i18n.written("abc", "xabcx")
    assert not i18n.written("ab {x}", "zz ab y"), "a part of two letters is no evidence"
    assert i18n.written("abc {x}", "abc 1") and i18n.written("{a} one {b} two {c}", "x one y two z")


def test_a_translators_note_runs_over_its_wrapped_lines_and_stops_at_the_old_english_of_a_fuzzy_entry():
    from types import SimpleNamespace

    message = SimpleNamespace(id="{a} of {b}", user_comments=[
        "reordered: Chinese names the whole", "before the part: b, then a", '| msgid "the old English"',
        "not part of a note", "unused: kept for: the next release"])
    assert i18n._notes_of(message, Path("zh.po")) == {
        "reordered": "Chinese names the whole before the part: b, then a", "unused": "kept for: the next release"}
