"""The project's weight: hand-written lines per area, and how much of the English pages' prose is Python strings.

    python benchmarks/weight.py          # make bench runs it with the other benchmarks

Lines per area (the lab, the experiments, the recipes, the pages, the tests, the benchmarks), each split into
code, docstrings and comments, and blank lines. Then the prose: the words of the English pages' Markdown outside
code fences and template tags, the words of the sentences the pages write inside ``{{ … }}`` (a claim's sentence,
in the page's language), and the words of the Python string literals of six words or more in the experiments
(``snippets/experiments/``: docstrings and the messages of ``raise`` left out, a check's condition and a figure's
labels counted): the last, as a share of all three, is the prose a writer would have to find in Python.

Target: the lab (``snippets/lab/``) at most 3,000 lines. Exits 1 when it is over.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAB_TARGET = 3000
AREAS = {
    "lab": ["snippets/lab/*.py"],
    "experiments": ["snippets/experiments/**/*.py"],
    "recipes": ["snippets/*.py"],
    "pages": ["docs/**/*.md", "docs/**/notebooks/*.py"],
    "tests": ["tests/*.py"],
    "benchmarks": ["benchmarks/*.py"],
}
_FENCE = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2[ \t]*$", re.S | re.M)
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def files(patterns: list[str], root: Path = ROOT) -> list[Path]:
    found = {path for pattern in patterns for path in root.glob(pattern) if path.is_file()}
    return sorted(path for path in found if "__pycache__" not in path.parts)


def python_lines(source: str) -> dict[str, int]:
    """A Python file's lines: code, docstrings and comments (a line of its own), blank."""
    lines = source.splitlines()
    blank = {number for number, line in enumerate(lines, 1) if not line.strip()}
    notes = {token.start[0] for token in tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type == tokenize.COMMENT and lines[token.start[0] - 1].lstrip().startswith("#")}
    for node in ast.walk(ast.parse(source)):
        if _docstring(node):
            notes.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    return {"code": len(lines) - len(blank | notes), "notes": len(notes - blank), "blank": len(blank)}


def _docstring(node: ast.AST) -> ast.Constant | None:
    if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first.value
    return None


def text_lines(source: str) -> dict[str, int]:
    lines = source.splitlines()
    blank = sum(1 for line in lines if not line.strip())
    return {"code": 0, "notes": len(lines) - blank, "blank": blank}


def area_lines(patterns: list[str], root: Path = ROOT) -> dict[str, int]:
    total = {"files": 0, "code": 0, "notes": 0, "blank": 0}
    for path in files(patterns, root):
        text = path.read_text(encoding="utf-8")
        counted = python_lines(text) if path.suffix == ".py" else text_lines(text)
        total["files"] += 1
        for key, value in counted.items():
            total[key] += value
    total["lines"] = total["code"] + total["notes"] + total["blank"]
    return total


def words(text: str) -> int:
    return len(_WORD.findall(text))


def python_prose(source: str, *, least: int = 6) -> int:
    """Words of the string literals of ``least`` words or more, docstrings and ``raise`` messages left out (an
    f-string counts its literal parts)."""
    tree = ast.parse(source)
    skipped = {id(doc) for node in ast.walk(tree) if (doc := _docstring(node)) is not None}
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise):
            skipped.update(id(inner) for inner in ast.walk(node))
    total = 0
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in node.values)
            text = " ".join(part.value for part in node.values
                            if isinstance(part, ast.Constant) and isinstance(part.value, str))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        count = words(text)
        total += count if count >= least else 0
    return total


def page_prose(markdown: str) -> tuple[int, int]:
    """A page's words: in its Markdown prose (outside code fences and template tags), and in the sentences its
    template tags write (their quoted strings)."""
    if markdown.startswith("---\n"):  # front matter
        markdown = markdown.split("\n---\n", 1)[-1]
    markdown = _FENCE.sub("", markdown)
    tags = _TEMPLATE.findall(markdown)
    said = sum(words(quoted) for tag in tags for quoted in _QUOTED.findall(tag) if words(quoted) >= 2)
    prose = re.sub(r"<[^>]+>|\[([^\]]*)\]\([^)]*\)", r"\1", _TEMPLATE.sub(" ", markdown))
    return words(prose), said


def prose_share(root: Path = ROOT) -> dict[str, float]:
    markdown = said = 0
    for page in sorted((root / "docs").glob("*.md")):  # the English pages
        prose, inline = page_prose(page.read_text(encoding="utf-8"))
        markdown, said = markdown + prose, said + inline
    python = sum(python_prose(path.read_text(encoding="utf-8"))
                 for path in files(["snippets/experiments/**/*.py"], root))
    total = markdown + said + python
    return {"markdown": markdown, "template": said, "python": python, "share": python / total if total else 0.0}


def main() -> int:
    print(f"{'area':<12} {'files':>5} {'lines':>7} {'code':>7} {'docs+comments':>13} {'blank':>6}")
    weights = {}
    for area, patterns in AREAS.items():
        weights[area] = counted = area_lines(patterns)
        print(f"{area:<12} {counted['files']:>5} {counted['lines']:>7,} {counted['code']:>7,} "
              f"{counted['notes']:>13,} {counted['blank']:>6,}")
    share = prose_share()
    print(f"\nEnglish pages' prose: {share['markdown']:,} words of Markdown, {share['template']:,} in the sentences "
          f"their template tags write; {share['python']:,} words in the experiments' Python string literals of six "
          f"words or more (checks' conditions and figures' labels; docstrings and raise messages left out): {share['share']:.0%} of the prose is in Python.")
    lab = weights["lab"]["lines"]
    verdict = "met" if lab <= LAB_TARGET else f"missed by {lab - LAB_TARGET:,} lines"
    print(f"\nThe lab: {lab:,} lines, target at most {LAB_TARGET:,}: {verdict}.")
    return 0 if lab <= LAB_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
