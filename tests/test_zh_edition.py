"""The Chinese edition as a Chinese reader meets it, read out of the built site (``tests/zh_reading.py``): one term
per concept (the glossary, ``snippets/lab/zh.glossary.json``), nothing in English outside code, names and
quotations, typeset as Chinese; and the catalogue checks, fed a catalogue that breaks each."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, project_copy
from zh_reading import english_words, shown_texts, zh_pages

GLOSSARY = json.loads((ROOT / "snippets" / "lab" / "zh.glossary.json").read_text(encoding="utf-8"))
_GLOSS = re.compile(r"(?:(?<=[\u3400-\u9fff*])|^)（[A-Za-z][A-Za-z -]{0,30}）")  # 一轮（epoch）: a first-use gloss
_CODE = re.compile(r"`[^`]*`|<code>.*?</code>|<[^>]+>|\{\w+\}")
# half-width , ; : ! touching a Chinese character (a "?" between spaces is the ? mark the page explains)
_HALF_WIDTH = re.compile(r"(?<=[\u4e00-\u9fff])[,;:!](?!\d)|(?<![\w\d])[,;:!] ?(?=[\u4e00-\u9fff])")
# ASCII brackets around Chinese ("(3–20，有噪声)") or around a number's interval ("10× (3–20)"), and a list of
# numbers joined as prose ("[16、1]")
_ASCII_BRACKETS = re.compile(r"\([^()]*[\u4e00-\u9fff，、；：][^()]*\)|(?<=[\d×%]) \(-?[\d.,]+–-?[\d.,]+\)")
_PROSE_LIST = re.compile(r"\[[\d.,]+、")


def glossary_breaks(text: str) -> list[tuple[str, str]]:
    """``(term, what was found)`` for each glossary term ``text`` words otherwise: an English word where the
    glossary has a Chinese term, or a Chinese variant it rules out."""
    plain = re.sub(r"[\w.\[\]'\"]+ = ", " ", _GLOSS.sub("", text))  # a measured value's name: "epochs = 20"
    found = []
    for term in GLOSSARY["terms"]:
        for pattern in term["avoid"]:
            found += [(term["en"], m.group(0)) for m in re.finditer(pattern, plain, re.M)]
    return found


def _readings(site: Path):
    for page in zh_pages(site):
        for element, text in shown_texts(page.read_text(encoding="utf-8")):
            yield page.relative_to(site).as_posix(), element, text


# --- the checks themselves, fed texts that break them ------------------------------------------------------------

def test_the_glossary_check_finds_each_kind_of_break():
    assert {term for term, _ in glossary_breaks("每个 epoch 的 loss，用拷贝，这条论断")} == \
        {"epoch", "loss", "copy", "checked claim"}
    assert glossary_breaks("每轮的损失，用复制，一轮（epoch）") == [], "a first-use gloss is allowed"
    assert {t for t, _ in glossary_breaks("在迭代器之后构建的模型")} == {"to create (a model, a module)"}
    assert [t for t, _ in glossary_breaks("batch 512 训练 20 轮")] == ["batch", "batch size"]
    assert glossary_breaks("每次构建本页时") == [], "构建 is for the site"


def test_the_english_word_check_names_words_and_spares_code_names_and_values():
    assert english_words("每个 batch 的 loss 都 bitwise equal") == ["batch", "loss", "bitwise", "equal"]
    assert english_words("用 DataLoader 与 torch.manual_seed(0)，shuffle=True，runs = 5，CPU、GPU") == []
    assert english_words("逐位（bitwise）一致") == [], "a first-use gloss"
    html = ('<p>每轮 <code>loss.item()</code> <a title="Permanent link">¶</a><span lang="en">English</span>'
            '<blockquote>原帖里的 batch size</blockquote><img alt="两张图 loss 曲线"></p>')
    assert [(where, english_words(text)) for where, text in shown_texts(html) if english_words(text)] == \
        [("a[title]", ["Permanent", "link"]), ("img[alt]", ["loss"])]


def test_the_typesetting_checks_find_half_width_punctuation_and_spaced_percent():
    assert _HALF_WIDTH.findall("测量值：a = 是, b = 否") == [","] and _HALF_WIDTH.findall("本机无法判定: 忙") == [":"]
    assert not _HALF_WIDTH.findall("1,000 个样本，标有 ? 的句子：12.8× (12.3–13.3)")
    assert re.search(r"\d %", "95 % 区间") and not re.search(r"\d %", "95% 区间")
    assert _ASCII_BRACKETS.findall("耗时 10× (3–20，有噪声)") == ["(3–20，有噪声)"]
    assert _ASCII_BRACKETS.findall("占 92% (86–95)，是 8× (2–25)") == [" (86–95)", " (2–25)"]
    from snippets.lab.mkdocs_hook import close_cjk_spacing
    assert close_cjk_spacing("<p>占 92% (86–95)，是 8× (2–25)，<code>f(1–2)</code></p>") == \
        "<p>占 92%（86–95），是 8×（2–25），<code>f(1–2)</code></p>"
    assert not _ASCII_BRACKETS.findall("10×（3–20，有噪声），函数 f(a, b)") and _PROSE_LIST.search("测得 [16、1]")


def test_every_catalogue_value_follows_the_glossary():
    problems = []
    from babel.messages.pofile import read_po

    for path in sorted((ROOT / "snippets").rglob("zh.po")):
        with path.open("rb") as stream:
            entries = {message.id: message.string for message in read_po(stream) if message.id}
        for key, value in entries.items():
            for term, found in glossary_breaks(_CODE.sub(" ", value)):
                problems.append(f"{path.relative_to(ROOT)}: {key!r} → {value!r}: {found!r} ({term})")
    assert not problems, "\n".join(problems)


# --- the built site ------------------------------------------------------------------------------------------------



@pytest.mark.site
def test_every_zh_page_follows_the_glossary(built_site):
    problems = sorted({f"{page} <{element}>: {found!r} where the glossary says {term!r}: {text.strip()[:80]!r}"
                       for page, element, text in _readings(built_site) for term, found in glossary_breaks(text)})
    assert not problems, f"{len(problems)} glossary breaks:\n" + "\n".join(problems[:60])


def _machine_names() -> list[str]:
    """What this machine and each recorded one call themselves (CPU, GPU, operating system): shown as they are on
    every page (``i18n.Verbatim``), the longest first ("CPU (X)" before "X")."""
    from snippets.lab import environment, i18n

    names = {value for _, value in environment.describe() if isinstance(value, i18n.Verbatim)}
    for fingerprint in [environment.fingerprint(), *(json.loads(path.read_text(encoding="utf-8"))["fingerprint"]
                                                     for path in (ROOT / "results").glob("*/manifest.json"))]:
        names |= {fingerprint[key] for key in ("cpu", "device_name") if isinstance(fingerprint.get(key), str)}
    return sorted(names, key=len, reverse=True)


def _without(text: str, names: list[str]) -> str:
    for name in names:
        text = text.replace(name, " ")
    return text


def test_a_machines_name_is_no_english_a_reader_must_read():
    names = _machine_names()
    assert names and all(name in _machine_names() for name in names)
    text = f"测量环境：torch 2.13.0 · {names[0]} · 1 个线程"
    assert english_words(_without(text, names)) == [] and english_words(_without(text + "，the loss", names)) == ["the", "loss"]


@pytest.mark.site
def test_nothing_a_chinese_reader_sees_is_in_english(built_site):
    """Outside code, names and the quoted original: page text, tooltips, labels, alternative texts, figure texts,
    the fragments the code panels load. What a machine calls itself (its CPU, as it reports it) is a name."""
    names = _machine_names()
    problems = sorted({f"{page} <{element}>: {words} in {text.strip()[:90]!r}"
                       for page, element, text in _readings(built_site)
                       if (words := english_words(_without(text, names)))})
    assert len(list(_readings(built_site))) > 3000, "the reader found the pages' texts"
    assert not problems, f"{len(problems)} texts with English words:\n" + "\n".join(problems[:60])


@pytest.mark.site
def test_the_chinese_edition_is_typeset_as_chinese(built_site):
    problems = []
    for page, element, text in _readings(built_site):
        for mark in _HALF_WIDTH.finditer(text):
            problems.append(f"{page} <{element}>: half-width {mark.group(0)!r} in "
                            f"{text[max(0, mark.start() - 20):mark.end() + 10]!r}")
        for found in [*_ASCII_BRACKETS.finditer(text), *_PROSE_LIST.finditer(text)]:
            problems.append(f"{page} <{element}>: {found.group(0)!r} (Chinese brackets are full-width, a list is "
                            f"written as code writes it) in {text[max(0, found.start() - 20):found.end() + 10]!r}")
        for found in re.finditer(r"\d %|(?<![\d,.])\d{1,3} \d{3}(?!\d)|有 0 个", text):
            problems.append(f"{page} <{element}>: {found.group(0)!r} in {text[max(0, found.start() - 20):found.end() + 10]!r}")
    assert not problems, f"{len(problems)} typesetting problems:\n" + "\n".join(problems[:60])
    css = (built_site / "assets" / "extra.css").read_text(encoding="utf-8")
    rule = re.search(r":lang\(zh\) em[^{]*\{([^}]*)\}", css)
    assert rule and "font-style: normal" in rule.group(1) and "text-emphasis" in rule.group(1), \
        "Chinese emphasis is upright, marked by 着重号"
    for page in sorted((built_site / "zh").rglob("*.html")):
        assert re.search(r'<html[^>]*\blang="zh', page.read_text(encoding="utf-8")[:400]), page


@pytest.mark.site
def test_one_percent_style_in_the_english_edition_too(built_site):
    spaced = sorted({f"{page.relative_to(built_site)}: {m.group(0)!r}" for page in built_site.glob("*/index.html")
                     for _, text in shown_texts(page.read_text(encoding="utf-8"))
                     for m in re.finditer(r"\d+ %", text)})
    assert not spaced, spaced


@pytest.mark.site
def test_each_language_has_its_own_search_index_with_the_glossarys_words_whole(built_site):
    english = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    chinese = json.loads((built_site / "zh" / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert english["docs"] and chinese["docs"]
    assert not [d["location"] for d in english["docs"] if d["location"].startswith("zh/")], "Chinese in English"
    pages = {d["location"].split("#")[0] for d in chinese["docs"]}
    assert pages == {p.relative_to(built_site / "zh").parent.as_posix().replace(".", "") + "/" if p.parent != built_site / "zh"
                     else "" for p in (built_site / "zh").rglob("index.html") if "search" not in p.parts}, pages
    separator = re.compile(english["config"]["separator"])
    words = set()
    for doc in chinese["docs"]:
        words.update(separator.split(doc["title"] + " " + doc["text"]))
    for word in ("优化器", "学习率", "数据集", "全批量", "批大小", "迭代器", "随机数生成器", "工作进程"):
        assert word in words, f"{word} is cut apart in the Chinese search index"
    for page in sorted((built_site / "zh").rglob("index.html")):
        assert re.search(r'"base": "[./]*zh/"', page.read_text(encoding="utf-8")), f"{page}: searches the site root"


@pytest.mark.site
@pytest.mark.parametrize("entry, fuzzy, named", [
    ({"a line no page prints": "没有页面打印的一行"}, False, "1 zh catalogue entry no page used"),
    ({"more than 5× as long": "耗时是 6 倍以上"}, False, "must keep the key's literal numbers ['5']"),
    ({"{low} to {high}": "{high} 至 {low}"}, False, "puts its fields in the order ['high', 'low']"),
    # an entry make translations carried over to changed English: printed, but not used until checked
    ({"CPU model": "CPU 型号"}, True, "its entry is fuzzy"),
])
def test_a_catalogue_entry_that_is_unused_fuzzy_or_prints_a_wrong_number_fails_the_build_naming_it(tmp_path, entry,
                                                                                                   fuzzy, named):
    from babel.messages.catalog import Message
    from babel.messages.pofile import read_po, write_po

    copy = project_copy(tmp_path / "project", caches=True)
    catalogue = copy / "snippets" / "lab" / "zh.po"
    with catalogue.open("rb") as stream:
        entries = read_po(stream)
    for key, value in entry.items():
        entries[key] = Message(key, value, flags=["fuzzy"] if fuzzy else [])
    with catalogue.open("wb") as stream:
        write_po(stream, entries)
    process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(copy / "site")], cwd=copy,
                             env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_LANGUAGE": "zh",
                                  "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results")},
                             capture_output=True, text=True, timeout=900)
    assert process.returncode != 0
    said = process.stdout + process.stderr
    assert named in said and next(iter(entry)) in said, said[-3000:]
