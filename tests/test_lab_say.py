"""One claim convention: a named check decides, the page's sentence says it, with the measured values."""

from __future__ import annotations

import pytest

from snippets.lab import cache
from snippets.lab import context
from snippets.lab.claims import CHECKS, Check, ClaimError, check, say, show_value


@check("the ratio is above 3")
def ratio_above_three(ratio: float):
    return ratio > 3, {"ratio": ratio, "threshold": 3}


def test_a_holding_check_marks_the_sentence_with_readable_hover_text():
    html = say(ratio_above_three(7.734), "It takes {ratio:.1f}× as long.")
    assert ">It takes 7.7× as long.</span>" in html
    assert 'data-check="test_lab_say.ratio_above_three"' in html
    assert 'hidden>Checked when this page was built: the ratio is above 3. Measured: ratio = 7.734, threshold = 3.</span>' in html
    assert 'tabindex="0"' in html, "the hover text must be reachable without a mouse"


def test_a_contradicted_check_fails_naming_page_check_condition_values_and_sentence(monkeypatch):
    monkeypatch.setattr(context.current(), "page", "loader-overhead.md")
    with pytest.raises(ClaimError) as error:
        say(ratio_above_three(1.25), "It takes {ratio:.1f}× as long.")
    message = str(error.value)
    for fragment in ("on page docs/loader-overhead.md", "check test_lab_say.ratio_above_three",
                     "(the ratio is above 3)", "measured: ratio = 1.25, threshold = 3", "'It takes 1.2× as long.'"):
        assert fragment in message


def test_a_sentence_asking_for_an_unmeasured_value_is_an_error():
    with pytest.raises(ClaimError, match=r"uses 'speedup' but check test_lab_say.ratio_above_three measured only: "
                                         r"ratio, threshold"):
        say(ratio_above_three(5.0), "{speedup:.1f}× faster")


def test_hover_text_is_escaped_and_never_a_python_repr():
    @check('a "quoted" <condition> & more')
    def odd(value):
        return True, {"values": value}

    html = say(odd({"nested": 1}), "ok")
    assert "&quot;quoted&quot; &lt;condition&gt; &amp; more" in html
    assert "Result(" not in html


@pytest.mark.parametrize("outcome", [1, None, "yes", (True,), (True, [1])])
def test_a_check_must_return_a_bool_and_a_dict(outcome):
    @check("whatever")
    def broken():
        return outcome if isinstance(outcome, tuple) else (outcome, {})

    with pytest.raises(TypeError, match="test_lab_say.broken"):
        broken()


def test_say_takes_only_checks():
    with pytest.raises(TypeError, match="Check"):
        say(True, "sentence")


def test_checks_are_registered_by_page_and_name():
    assert CHECKS["test_lab_say.ratio_above_three"] is ratio_above_three
    assert ratio_above_three.condition == "the ratio is above 3"
    assert isinstance(ratio_above_three(4), Check)


@pytest.mark.parametrize("value, shown", [(True, "yes"), (False, "no"), (12345, "12,345"), (0.000123, "0.000123"),
                                          (1234.5678, "1,235"), (7.734, "7.734"), (2.5e7, "2.5e+07"),
                                          ([1, 2, 3, 4, 5, 6, 7], "[1, 2, 3, 4, 5, 6, …]"), ("CPU", "CPU")])
def test_values_are_shown_as_a_reader_reads_them(value, shown):
    assert show_value(value) == shown


@check("the DataLoader epoch takes more than 3x as long", timing=True)
def slower(interval: dict):
    from snippets.lab import timing
    return timing.decide(interval, ">", 3), {"ratio": interval["value"], "low": interval["low"],
                                             "high": interval["high"]}


def test_a_timing_claim_whose_interval_straddles_is_undecided_not_failed_nor_checked():
    html = say(slower({"value": 3.1, "low": 2.6, "high": 3.7}), "It takes {ratio:.1f}× as long.")
    assert "pitfalls-claim--undecided" in html
    assert "undecided on this machine: its interval reaches both sides of the threshold" in html
    assert "REFRESH=timing" in html
    assert slower({"value": 3.1, "low": 2.6, "high": 3.7}).status == "undecided"


def test_a_clear_timing_claim_holds_or_fails():
    assert 'class="pitfalls-claim"' in say(slower({"value": 7.7, "low": 7.2, "high": 8.1}), "{ratio:.1f}×")
    with pytest.raises(ClaimError, match="does not hold"):
        say(slower({"value": 1.5, "low": 1.2, "high": 1.8}), "{ratio:.1f}×")


def test_only_timing_checks_may_be_undecided():
    @check("not a timing check")
    def plain():
        return None, {}

    with pytest.raises(TypeError, match="holds must be a bool, got NoneType"):
        plain()


@check("DataLoader over a TensorDataset takes more than 5× as long per epoch as DataLoader over a BatchedTensorDataset "
       "(same arguments, the question's full batch)", timing=True)
def five_times(interval: dict):
    from snippets.lab import timing
    return timing.decide(interval, ">", 5), {"ratio": interval["value"], "low": interval["low"],
                                             "high": interval["high"], "drifted": interval.get("drifted", False)}


def test_an_undecided_claim_on_a_drifting_machine_reads_as_chinese_with_nothing_translated_twice(monkeypatch):
    from snippets.lab import context

    monkeypatch.setattr(context.current(), "language", "zh")
    html = say(five_times({"value": 5.5, "low": 4.0, "high": 7.0, "drifted": True}), "耗时是 {ratio:.1f} 倍")
    assert context.current().twice == {} and context.current().missing == {}, context.current().missing
    assert "耗时是 5.5 倍<em>——本机无法判定：" in html and "pitfalls-claim--undecided" in html, html
