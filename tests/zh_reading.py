"""What a reader of the Chinese edition sees, read out of the built site: the text and the attribute texts a
browser shows (tooltips, labels, alternative texts, figure texts), outside code; and the English words in it.

Used by the Chinese-edition tests (``tests/test_zh_edition.py``) and by ``benchmarks/zh_audit.py``, which prints the
counts the closing notes of the Chinese passes quote.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

# Elements whose text is code, the quoted original (the askers' own words) or not shown.
SKIPPED = {"code", "pre", "kbd", "samp", "script", "style", "blockquote", "template", "noscript", "math"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
        "path", "use", "rect", "circle", "line", "polyline", "polygon", "ellipse", "stop"}
# Elements, by class, that hold code or a program's output: a notebook's cells and outputs, highlighted code.
CODE_CLASSES = ("highlight", "CodeMirror", "jp-OutputArea-output", "jp-RenderedText", "md-clipboard")
# Attributes whose text a reader sees or hears.
SHOWN_ATTRIBUTES = ("title", "aria-label", "alt", "placeholder", "data-clipboard-text-label", "data-md-state-label")

# Names and identifiers that read the same in Chinese: products, libraries, classes, hardware, file formats.
NAMES = {
    "PyTorch", "torch", "DataLoader", "TensorLoader", "TensorDataset", "BatchedTensorDataset", "BatchSampler",
    "NumPy", "SciPy", "Python", "CUDA", "CPU", "GPU", "MPS", "XPU", "Adam", "AdamW", "SGD", "Linux", "macOS", "Windows",
    "OpenMP", "MKL", "cuDNN", "cuBLAS", "Dynamo", "GitHub", "Jupyter", "Jupytext", "AMD", "EPYC", "Intel", "NVIDIA",
    "MkDocs", "Material", "Matplotlib", "English", "Lighthouse", "jieba", "pip", "make", "commit", "fork", "spawn",
    "forkserver", "DDP", "SVG", "PNG", "HTML", "JSON", "UTC", "ATen", "Lightning", "Accelerate", "BatchNorm",
    "Dropout", "MIT", "SPDX", "dtype", "lr", "ms", "us", "µs", "ns", "GiB", "MiB", "KiB", "GB", "MB", "KB", "ReLU",
    "MLP", "RNG", "OS", "IQR", "vs", "Ctrl", "OMP_NUM_THREADS", "cpu", "cuda", "python", "Inductor", "gloo",
    "nccl", "rank", "cProfile", "glibc", "Hessian", "McCandlish", "Malladi", "Goyal", "Smith", "Kingma", "Ba",
    "Hugging", "Face", "Transformers", "arXiv", "MSE", "ReLU", "Net", "Gloo", "shuffle", "generator", "jupytext",
    "Generator", "NaN", "random", "Dropout", "Kaplan", "Amodei", "Lyu", "Panigrahi", "Arora", "Goyal", "Malladi", "Inductor", "NeurIPS", "ICLR", "ICML", "OpenAI", "Dota",
    # PyTorch's own name for running operators one by one, untranslated in Chinese writing ("eager 模式").
    "eager",
}
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]")
_CJK = re.compile(r"[\u3400-\u9fff]")


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.skipping = 0
        self.texts: list[tuple[str, str]] = []  # (where, text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.skipping == 0:
            for name in SHOWN_ATTRIBUTES:
                if attrs.get(name):
                    self.texts.append((f"{tag}[{name}]", attrs[name]))
        if tag in VOID:
            return
        self.stack.append(tag)
        classes = attrs.get("class") or ""
        hidden = ("pitfalls-claim__tip" in classes  # a claim's tip is its title, read above
                  or any(name in classes for name in CODE_CLASSES)
                  or (attrs.get("lang") or "zh").split("-")[0] != "zh"  # marked as another language: meant so
                  or (tag == "a" and (attrs.get("href") or "").startswith(("http://", "https://"))))  # a cited title
        if tag in SKIPPED or hidden or self.skipping:
            self.skipping += 1

    def handle_startendtag(self, tag, attrs):
        if self.skipping == 0:
            for name in SHOWN_ATTRIBUTES:
                value = dict(attrs).get(name)
                if value:
                    self.texts.append((f"{tag}[{name}]", value))

    def handle_endtag(self, tag):
        if tag in VOID or tag not in self.stack:
            return
        while self.stack:
            top = self.stack.pop()
            if self.skipping:
                self.skipping -= 1
            if top == tag:
                break

    def handle_data(self, data):
        if self.skipping == 0 and data.strip():
            self.texts.append((self.stack[-1] if self.stack else "", data))


def shown_texts(html: str) -> list[tuple[str, str]]:
    """Every text a reader sees on a page, outside code and the quoted original: ``(element, text)``."""
    reader = _Reader()
    reader.feed(html)
    return reader.texts


def english_words(text: str) -> list[str]:
    """The English words in ``text``: Latin-script words that are not a name, an identifier or an acronym."""
    found = []
    text = re.sub(r"[\w.\[\]'\"]+ = ", " ", text)  # a measured value's name: "runs = 5"
    # an English gloss of the Chinese term right before it, as at a term's first use: 逐位（bitwise）
    text = re.sub(r"(?:(?<=[\u3400-\u9fff*])|^)（[A-Za-z][A-Za-z -]{0,30}）", "", text)
    text = re.sub(r"\bmake \w+", " ", text)  # a command: make build
    for token in text.split():
        if re.search(r"\w\(", token) or re.search(r"[_=./\\\[]|\d", token.strip(".,;:!?()（）、，。：；“”\"'")):
            # an identifier, a call, a path, a value
            continue
        for word in _WORD.findall(token):
            if (word in NAMES or word.upper() == word or re.fullmatch(r"([A-Z][a-z0-9]+){2,}\w*|[a-z]+[A-Z]\w*", word)
                    or len(word) == 1):
                continue
            found.append(word)
    return found


def zh_pages(site: Path) -> list[Path]:
    """The Chinese edition's pages and the code fragments they load."""
    pages = sorted((site / "zh").rglob("*.html"))
    fragments = set()
    for page in pages:
        for name in re.findall(r'data-src="[./]*code/([0-9a-f]+\.html)"', page.read_text(encoding="utf-8")):
            fragments.add(site / "code" / name)
    return pages + sorted(fragments)
