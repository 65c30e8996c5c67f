"""benchmarks/weight.py counts what it says it counts: lines by kind, and prose in Python strings and in pages."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import weight  # noqa: E402

SOURCE = '''"""A module docstring
of two lines."""

# a comment of its own
x = "one two three four five six"  # a trailing comment: the line is code


def f():
    """The docstring."""
    short = "two words"
    said = f"a sentence of {x} words, long enough to count"
    raise ValueError("an error message of more than six words is left out")
'''


def test_lines_are_counted_by_kind():
    assert weight.python_lines(SOURCE) == {"code": 5, "notes": 4, "blank": 3}


def test_prose_in_python_counts_long_literals_but_not_docstrings_errors_or_short_strings():
    # "one two three four five six" (6) and the f-string's literal parts, "a sentence of words, long enough to
    # count" (8); the docstrings, the two-word string and the raise message are left out
    assert weight.python_prose(SOURCE) == 14
    assert weight.python_prose(SOURCE, least=7) == 8


def test_a_pages_prose_leaves_out_code_fences_and_counts_the_sentences_its_tags_write():
    page = ('---\ntopic: loader\n---\n# Title here\n\nSome [linked words](x.md) and {{ value(result) }} more.\n\n'
            '```python\nprint("not prose at all, however long it is")\n```\n'
            '{{ say(check, "the claim holds on this machine") }}.\n')
    assert weight.page_prose(page) == (7, 6)


def test_the_lab_target_is_checked(capsys):
    status = weight.main()
    lab = weight.area_lines(weight.AREAS["lab"])["lines"]
    assert status == (0 if lab <= weight.LAB_TARGET else 1)
    assert f"The lab: {lab:,} lines" in capsys.readouterr().out
