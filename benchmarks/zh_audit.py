"""Count what a Chinese reader trips over on a built site: English words outside code, glossary breaks, half-width
punctuation, spaced percents and thousands, emphasis on Chinese text, and whether search keeps the glossary's
words whole and the languages apart. The counts the closing notes of the Chinese passes quote.

    python benchmarks/zh_audit.py --site site/          # a site built with make build
    python benchmarks/zh_audit.py --site /tmp/old-site --glossary snippets/lab/zh.glossary.json

The readings are those of the tests (``tests/zh_reading.py``, ``tests/test_zh_edition.py``), so a count here is
what those tests would report.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from zh_reading import english_words, shown_texts, zh_pages  # noqa: E402

HALF_WIDTH = re.compile(r"(?<=[\u4e00-\u9fff])[,;:!](?!\d)|(?<![\w\d])[,;:!] ?(?=[\u4e00-\u9fff])")
GLOSS = re.compile(r"(?:(?<=[\u3400-\u9fff*])|^)（[A-Za-z][A-Za-z -]{0,30}）")
WORDS = ("优化器", "迭代器", "调度器", "学习率", "数据集", "全批量")


def audit(site: Path, glossary: dict) -> dict:
    counts: Counter = Counter({key: 0 for key in (
        "English words", "texts with English words", "'Permanent link' titles", "glossary breaks",
        "half-width , ; : ! beside Chinese", "spaced percent (95 %)", "spaced thousands (10 000)", "有 0 个",
        "<em> holding Chinese")})
    english: Counter = Counter()
    for page in zh_pages(site):
        html = page.read_text(encoding="utf-8")
        counts["<em> holding Chinese"] += len(re.findall(r"<em>[^<]*[\u4e00-\u9fff]", html))
        for element, text in shown_texts(html):
            words = english_words(text)
            if words:
                counts["texts with English words"] += 1
                english.update(words)
            if element.endswith("[title]") and text.strip() == "Permanent link":
                counts["'Permanent link' titles"] += 1
            counts["half-width , ; : ! beside Chinese"] += len(HALF_WIDTH.findall(text))
            counts["spaced percent (95 %)"] += len(re.findall(r"\d %", text))
            counts["spaced thousands (10 000)"] += len(re.findall(r"(?<![\d,.])\d{1,3} \d{3}(?!\d)", text))
            counts["有 0 个"] += text.count("有 0 个")
            plain = re.sub(r"[\w.\[\]'\"]+ = ", " ", GLOSS.sub("", text))
            for term in glossary["terms"]:
                counts["glossary breaks"] += sum(len(re.findall(p, plain, re.M)) for p in term["avoid"])
    counts["English words"] = sum(english.values())
    index = site / "search" / "search_index.json"
    docs = json.loads(index.read_text(encoding="utf-8"))["docs"] if index.is_file() else []
    own = site / "zh" / "search" / "search_index.json"
    counts["Chinese entries in the English search index"] = sum(d["location"].startswith("zh/") for d in docs)
    counts["a Chinese search index of its own"] = int(own.is_file())
    source = json.loads(own.read_text(encoding="utf-8"))["docs"] if own.is_file() else \
        [d for d in docs if d["location"].startswith("zh/")]
    text = " ".join(d["title"] + " " + d["text"] for d in source)
    tokens = Counter(re.split(r"[\s\u200b\-_,:!=\[\]()\"`/]+", text))
    counts["glossary words cut apart in search (of 6)"] = sum(1 for w in WORDS if tokens[w] == 0)
    return {"counts": dict(counts), "most_common_english": english.most_common(15)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "site")
    parser.add_argument("--glossary", type=Path, default=ROOT / "snippets" / "lab" / "zh.glossary.json")
    args = parser.parse_args()
    if not (args.site / "zh").is_dir():
        raise SystemExit(f"{args.site}: no zh/ folder; build the site first (make build)")
    found = audit(args.site, json.loads(args.glossary.read_text(encoding="utf-8")))
    width = max(len(k) for k in found["counts"])
    for key, value in found["counts"].items():
        print(f"{key:<{width}}  {value:>6}")
    print("most common English words:", ", ".join(f"{w} ({n})" for w, n in found["most_common_english"]) or "none")


if __name__ == "__main__":
    main()
