"""Claims as code: ``check`` declares a condition, ``say`` writes its sentence or fails the build, ``claim`` is the
older one-call form. What a reader sees (the marked sentence, the hover text) and what a failing build says."""

from __future__ import annotations

import pytest

from snippets.lab import Check, ClaimError, cache, check, say
from snippets.lab import context
from snippets.lab import claims
from snippets.lab.claims import show_value


@pytest.fixture()
def on_page(monkeypatch):
    monkeypatch.setattr(context.current(), "page", "loader-overhead.md")
    monkeypatch.setattr(context.current(), "claims", {})


def _ratio_check():
    @check("ratio > 3")
    def ratio_above_three(result, factor=1):
        return result["ratio"] * factor > 3, {"ratio": result["ratio"] * factor, "runs": 2000}

    return ratio_above_three


def test_a_check_returns_its_outcome_named_after_its_page():
    ratio_above_three = _ratio_check()
    outcome = ratio_above_three({"ratio": 7.5})
    assert outcome == Check(name="test_lab_claims.ratio_above_three", condition="ratio > 3", holds=True,
                            values={"ratio": 7.5, "runs": 2000})
    assert ratio_above_three({"ratio": 1.0}, factor=2).holds is False
    assert "test_lab_claims.ratio_above_three" not in claims.topic_checks(), "a test's check is no topic's"
    assert ratio_above_three.check_name == "test_lab_claims.ratio_above_three"
    assert ratio_above_three.condition == "ratio > 3"
    assert ratio_above_three.__name__ == "ratio_above_three", "functools.wraps keeps the name"


def test_a_page_packages_check_is_named_page_dot_function():
    def loader_check(result):
        return True, {}

    loader_check.__module__ = "snippets.experiments.loader.checks"
    declared = check("always")(loader_check)
    assert declared.check_name == "loader.loader_check"
    assert declared({}).name == "loader.loader_check"


def test_values_are_copied():
    values = {"ratio": 4.0}

    @check("ratio > 3")
    def copied(result):
        return True, values

    outcome = copied({})
    values["ratio"] = 0.0
    assert outcome.values == {"ratio": 4.0}


@pytest.mark.parametrize("condition", ["", None, 3])
def test_a_check_needs_its_condition_in_words(condition):
    with pytest.raises(TypeError) as raised:
        check(condition)
    assert str(raised.value) == "check() needs the condition in words, e.g. @check('ratio > 3')"


@pytest.mark.parametrize("outcome, message", [
    (True, "check test_lab_claims.bad must return (holds, values), got True"),
    ((True,), "check test_lab_claims.bad must return (holds, values), got (True,)"),
    ((True, {}, 1), "check test_lab_claims.bad must return (holds, values), got (True, {}, 1)"),
    ((True, [1]), "check test_lab_claims.bad must return (holds, values), got (True, [1])"),
    ([True, {}], "check test_lab_claims.bad must return (holds, values), got [True, {}]"),
    ((1, {}), "check test_lab_claims.bad: holds must be a bool, got int"),
    ((None, {}), "check test_lab_claims.bad: holds must be a bool, got NoneType"),
])
def test_a_check_must_return_a_bool_and_its_values(outcome, message):
    @check("anything")
    def bad(result):
        return outcome

    with pytest.raises(TypeError) as raised:
        bad({})
    assert str(raised.value) == message


def test_a_long_wrong_return_is_cut():
    @check("anything")
    def bad(result):
        return "x" * 1000

    with pytest.raises(TypeError) as raised:
        bad({})
    assert str(raised.value) == "check test_lab_claims.bad must return (holds, values), got '" + "x" * 199


@pytest.mark.parametrize("value, shown", [
    (True, "yes"), (False, "no"), (0, "0"), (1234567, "1,234,567"), (-4200, "-4,200"),
    (0.0, "0"), (12.345678, "12.35"), (999.94, "999.9"), (999.96, "1,000"), (1234.5678, "1,235"),
    (12345.0, "1.234e+04"), (1e6, "1e+06"), (0.001, "0.001"), (0.00012346, "0.0001235"), (-2e-5, "-2e-05"),
    (float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf"),
    ([1, 2.5, True], "[1, 2.5, yes]"), ((1.5,), "[1.5]"), ([], "[]"),
    (list(range(6)), "[0, 1, 2, 3, 4, 5]"), (list(range(7)), "[0, 1, 2, 3, 4, 5, …]"),
    ("text", "text"), (None, "n/a"), ({"a": 1}, "{a: 1}"), ({"b": [1000, True]}, "{b: [1000, yes]}"),
])
def test_values_are_shown_as_a_reader_reads_them(value, shown):
    assert show_value(value) == shown


def test_measured_lists_the_values():
    assert Check("p.c", "x", True, {"ratio": 7.731, "epochs": 2000, "same": True}).measured() == \
        "ratio = 7.731, epochs = 2,000, same = yes"
    assert Check("p.c", "x", True).measured() == "—"


def test_say_marks_the_sentence_with_condition_and_values(on_page):
    outcome = Check("loader.slower", 'ratio > 3 & "fast"', True, {"ratio": 7.7312, "runs": 2000})
    tip = ("Checked when this page was built: ratio &gt; 3 &amp; &quot;fast&quot;. Measured: ratio = 7.731, "
           "runs = 2,000.")
    assert say(outcome, "The DataLoader run takes {ratio:.1f}× as long ({runs:,} runs).") == (
        '<span class="pitfalls-claim" tabindex="0" role="button" aria-expanded="false" '
        f'aria-describedby="claim-tip-1" title="{tip}" data-check="loader.slower">The DataLoader run '
        'takes 7.7× as long (2,000 runs).</span>'
        f'<span class="pitfalls-claim__tip" id="claim-tip-1" hidden>{tip}</span>')
    assert 'id="claim-tip-2"' in say(outcome, "again"), "each claim of a page has its own tip"
    marked = say(Check("p.c", "uses `code` and __dunder__", True, {}), "x")
    assert 'title="Checked when this page was built: uses &#96;code&#96; and &#95;&#95;dunder&#95;&#95;.' in marked, (
        "Markdown must not turn the title's backticks into tags")


def test_a_claims_tip_names_the_experiment_and_the_machine_never_a_repr(on_page):
    from snippets.lab.cache import Result

    result = Result({"ratio": 7.7}, "loader.question_timing", {}, {"torch": "2.13.0", "device": "cpu",
                    "device_name": "CPU (demo)", "cpu": "demo", "threads": 2}, "2026-11-30T10:00:00+00:00", 1.0, True)
    outcome = Check("loader.slower", "ratio > 3", True, {"ratio": 7.7}, args=((result,), {}))
    text = say(outcome, "{ratio}×")
    tip = text.split('hidden>')[1].split('</span>')[0]
    assert tip == ("Checked when this page was built: ratio &gt; 3. Measured: ratio = 7.7. From "
                   "loader.question_timing, measured with torch 2.13.0 · CPU (demo) · 2 threads · 2026-11-30.")
    assert "Result(" not in text and "{" not in tip
    other = Result({}, "loader.breakdown", {}, result.fingerprint, result.computed_at, 1.0, True)
    both = Check("loader.slower", "ratio > 3", True, {"ratio": 7.7},
                 args=((result, other), {"again": result, "n": 3}))
    assert " From loader.question_timing, loader.breakdown, measured with torch" in say(both, "{ratio}×"), \
        "each experiment named once, in order"


def test_say_escapes_the_check_name():
    outcome = Check('a"b<c', "x", True)
    assert 'data-check="a&quot;b&lt;c"' in say(outcome, "s")


def test_a_contradicted_claim_fails_naming_page_check_values_and_sentence(on_page):
    outcome = Check("loader.slower", "ratio > 3", False, {"ratio": 1.04})
    with pytest.raises(ClaimError) as raised:
        say(outcome, "The DataLoader run takes {ratio:.1f}× as long.")
    assert str(raised.value) == ("Claim contradicted on page docs/loader-overhead.md: check loader.slower "
                                 "(ratio > 3) does not hold — measured: ratio = 1.04 — sentence: "
                                 "'The DataLoader run takes 1.0× as long.'")


def test_a_contradicted_claim_outside_a_page():
    with pytest.raises(ClaimError) as raised:
        say(Check("p.c", "x > 1", False, {"x": 0}), "x is {x}")
    assert str(raised.value) == "Claim contradicted: check p.c (x > 1) does not hold — measured: x = 0 — " \
                                "sentence: 'x is 0'"


@pytest.mark.parametrize("sentence, missing", [("{nope}", "'nope'"), ("{0}", "Replacement index 0 out of range"),
                                               ("{ratio:d}", "Unknown format code 'd'")])
def test_a_sentence_using_a_value_the_check_did_not_measure(on_page, sentence, missing):
    with pytest.raises(ClaimError) as raised:
        say(Check("loader.slower", "ratio > 3", True, {"ratio": 7.5}), sentence)
    message = str(raised.value)
    assert message.startswith(f"Claim on page docs/loader-overhead.md cannot be written: the sentence {sentence!r} "
                              f"uses ")
    assert missing in message and message.endswith(" but check loader.slower measured only: ratio")


def test_a_sentence_when_nothing_was_measured():
    with pytest.raises(ClaimError) as raised:
        say(Check("p.c", "x", True), "{x}")
    assert str(raised.value) == "Claim cannot be written: the sentence '{x}' uses 'x' but check p.c measured " \
                                "only: nothing"


def test_say_takes_a_check_outcome_only(on_page):
    with pytest.raises(TypeError) as raised:
        say(True, "sentence")  # type: ignore[arg-type]
    assert str(raised.value) == "say() takes the Check a check returned, got bool on page docs/loader-overhead.md"
    with pytest.raises(TypeError, match=r"^say\(\) takes the Check a check returned, got function$"):
        context.current().page = None
        say(_ratio_check, "sentence")  # type: ignore[arg-type]


# ---- undecided (timing checks) -----------------------------------------------------------------------------------


def test_an_undecided_claim_says_why():
    outcome = Check("p.c", 'ratio > 3 "x"', None, {"ratio": 2.5, "low": 1.5, "high": 3.5})
    text = say(outcome, "It is {ratio}")
    tip = ("Undecided on this machine: whether ratio &gt; 3 &quot;x&quot; cannot be told, its interval reaches both "
           "sides of the threshold. Measured: ratio = 2.5, low = 1.5, high = 3.5. Re-measure on a quiet machine: "
           "REFRESH=timing make build.")
    assert text.startswith('<span class="pitfalls-claim pitfalls-claim--undecided" tabindex="0" role="button" '
                           'aria-expanded="false" aria-describedby="claim-tip-')
    assert ('data-check="p.c">It is 2.5 <em>— undecided on this machine: its interval reaches both sides of the '
            'threshold</em></span><span class="pitfalls-claim__tip" id="claim-tip-') in text
    assert text.endswith(f'hidden>{tip}</span>')


@pytest.mark.parametrize("low, high", [(None, 3.5), (1.5, None), (None, None)])
def test_an_undecided_claim_without_an_interval_says_why(low, high):
    text = say(Check("p.c", "ratio > 3", None, {"ratio": 2.5, "low": low, "high": high}), "It is {ratio}")
    assert "It is 2.5 <em>— undecided on this machine: too few repeats for an interval</em></span>" in text


@pytest.mark.parametrize("values", [{"drifted": True, "contention": 0.5}, {"drifted": False, "contention": 0.4}])
def test_a_busy_or_drifting_machine_is_no_reason_given_for_an_undecided_claim(values):
    """An undecided claim is one whose interval straddles its bound, whatever the load: the load widened that
    interval (``timing.widened``) and is not named as a veto."""
    text = say(Check("p.c", "ratio > 3", None, {"ratio": 3.4, "low": 2.0, "high": 5.0, **values}), "It is {ratio}")
    assert "<em>— undecided on this machine: its interval reaches both sides of the threshold</em>" in text
    sentence = text.split('data-check="p.c">', 1)[1].split("</span>", 1)[0]
    assert "CPU" not in sentence and "drift" not in sentence


def test_timing_checks_say_so_and_may_be_undecided():
    @check("ratio > 3", timing=True)
    def timed(result):
        return None, {"ratio": result}

    @check("ratio > 3")
    def untimed(result):
        return None, {"ratio": result}

    assert timed.timing is True and untimed.timing is False
    assert timed(2.0).holds is None
    with pytest.raises(TypeError) as raised:
        untimed(2.0)
    assert str(raised.value) == "check test_lab_claims.untimed: holds must be a bool, got NoneType"

    @check("ratio > 3", timing=True)
    def wrong(result):
        return "yes", {}

    with pytest.raises(TypeError) as raised:
        wrong(1)
    assert str(raised.value) == "check test_lab_claims.wrong: holds must be a bool or None, got str"


@check("DataLoader over a TensorDataset takes more than 5× as long per epoch as DataLoader over a BatchedTensorDataset "
       "(same arguments, the question's full batch)", timing=True)
def five_times(interval: dict):
    from snippets.lab import timing
    return timing.decide(interval, ">", 5), {"ratio": interval["value"], "low": interval["low"],
                                             "high": interval["high"], "drifted": interval.get("drifted", False)}


def test_an_undecided_claim_on_a_drifting_machine_reads_as_chinese_with_nothing_translated_twice(monkeypatch):
    monkeypatch.setattr(context.current(), "language", "zh")
    html = say(five_times({"value": 5.5, "low": 4.0, "high": 7.0, "drifted": True}), "耗时是 {ratio:.1f} 倍")
    assert context.current().twice == {} and context.current().missing == {}, context.current().missing
    assert "耗时是 5.5 倍<em>——本机无法判定：" in html and "pitfalls-claim--undecided" in html, html


def test_a_list_reads_as_code_writes_it_in_chinese_too(monkeypatch):
    monkeypatch.setattr(context.current(), "language", "zh")
    assert show_value([16, 1]) == "[16, 1]" and show_value((2048, 0.06439)) == "[2048, 0.06439]"
    assert show_value(list(range(8))) == "[0, 1, 2, 3, 4, 5, …]"
    assert show_value([True, False]) == "[是、否]", "words are joined as Chinese joins them"
    assert show_value([[1, [20, 20]], [2, [10, 10]]]) == "[[1, [20, 20]], [2, [10, 10]]]"


def test_the_topics_checks_are_found_in_their_modules():
    """Every check a topic's checks.py declares, by its name, and nothing else: no registry to keep or reset."""
    from snippets.experiments.loader import checks as loader_checks
    from snippets.experiments.seeding import checks as seeding_checks

    found = claims.topic_checks()
    assert found["loader.dataloader_counts_per_sample"] is loader_checks.dataloader_counts_per_sample
    assert found["seeding.equal_starts_identical"] is seeding_checks.equal_starts_identical
    assert {name.split(".")[0] for name in found} == {"loader", "seeding", "steps"}
    assert all(getattr(function, "condition", None) for function in found.values())


def test_the_build_context_is_the_callers_and_a_block_of_its_own_leaves_it_as_it_was(build):
    """The build is passed down to whatever a page's code calls; ``using`` gives a block a build of its own and
    restores the caller's, even on an error; another thread starts from a fresh build and changes nobody's."""
    import threading

    assert context.current() is build
    with pytest.raises(RuntimeError):
        with context.using(context.Build(language="zh")) as inner:
            assert context.current() is inner and context.current().language == "zh"
            raise RuntimeError("a failing page")
    assert context.current() is build
    elsewhere = []

    def other_thread() -> None:
        elsewhere.append(context.current())
        context.begin(context.Build(page="elsewhere.md"))
        elsewhere.append(context.current())

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert elsewhere[0] is not build and elsewhere[0].page is None and elsewhere[1].page == "elsewhere.md"
    assert context.current() is build


def test_a_releases_verdict_is_one_mark_with_the_values_only_when_it_fails():
    from snippets.lab.claims import Check, release_verdict

    assert release_verdict(Check("t.c", "ratio > 3", True, {"ratio": 5})) == "✓"
    assert release_verdict(Check("t.c", "ratio > 3", None, {"ratio": 3.1})) == "?"
    assert release_verdict(Check("t.c", "ratio > 3", False, {"ratio": 2})) == "✗ ratio = 2"
    assert release_verdict("not recorded on box") == "—"


def test_a_claims_tooltip_keeps_markdowns_marks_as_text_and_a_claim_failing_elsewhere_says_so(build):
    from snippets.lab.claims import Check, _marked

    build.page = "a.md"
    marked = _marked(Check("t.c", "c", True), "the sentence", "a `b` _c_ *d* [e](f)", "pitfalls-claim x",
                     fails_elsewhere=True)
    assert marked.startswith('<span class="pitfalls-claim x pitfalls-claim--fails-elsewhere" tabindex="0" ')
    assert 'title="a &#96;b&#96; &#95;c&#95; &#42;d&#42; &#91;e&#93;(f)"' in marked
    assert marked.endswith('<span class="pitfalls-claim__tip" id="claim-tip-1" hidden>a `b` _c_ *d* [e](f)</span>')


def test_the_recorded_machines_verdicts_are_one_sentence_in_each_languages_punctuation(build):
    from snippets.lab.claims import Check, _on_other_machines

    verdicts = [("big", Check("t.c", "ratio > 3", True, {"ratio": 5})),
                ("small", Check("t.c", "ratio > 3", False, {"ratio": 2.5})), ("old", "not recorded on old")]
    assert _on_other_machines(verdicts) == (
        " Recorded machines: holds on big; fails on small (ratio = 2.5); not checked on old: not recorded on old.")
    build.language = "zh"
    assert _on_other_machines(verdicts) == (
        "已记录的机器：在 big 上成立；在 small（ratio = 2.5） 上不成立；未在以下机器上校验：old（not recorded on old）。")


def test_a_claims_releases_are_one_sentence_in_release_order_in_each_languages_punctuation(build, monkeypatch):
    from types import SimpleNamespace

    from snippets.lab import machines
    from snippets.lab.claims import Check, on_releases

    monkeypatch.setattr(machines, "_lead_fingerprint", lambda: {"torch": "2.13.0+cpu"})

    def rec(torch):
        return SimpleNamespace(fingerprint={"torch": torch}, label=f"box-{torch}")

    here = Check("t.c", "ratio > 3", True, {"ratio": 5})
    releases = [(rec("2.9.1"), Check("t.c", "ratio > 3", False, {"ratio": 2})), (rec("2.3.1"), here)]
    assert on_releases(here, releases) == " By torch release on this machine: 2.3.1 ✓; 2.9.1 ✗ ratio = 2; 2.13.0 ✓ (this build)."
    build.language = "zh"
    assert on_releases(here, releases) == "本机各 torch 版本：2.3.1 ✓；2.9.1 ✗ ratio = 2；2.13.0 ✓（本次构建）。"


def test_a_measured_value_reads_in_the_pages_language_labels_translated_names_kept(build):
    from snippets.lab.claims import Check, show_value

    values = {"on": "the CPU", "op": "aten::index_select", "ratio": 7.5}
    assert show_value(values) == "{on: the CPU, op: aten::index_select, ratio: 7.5}"
    assert Check("t.c", "c", False, {"a": 1, "b": 2.5}).measured() == "a = 1, b = 2.5"
    build.language = "zh"
    assert show_value(values) == "{on：CPU，op：aten::index_select，ratio：7.5}"
    assert "the CPU" in build.used, "the catalogue entry the label used"
    assert show_value("a label nobody translated") == "a label nobody translated", "no entry: shown as measured"
    assert Check("t.c", "c", False, {"a": 1, "b": 2.5}).measured() == "a = 1，b = 2.5"


def test_a_sentence_wrapped_over_lines_reads_as_one_and_a_field_it_lacks_is_named_with_what_was_measured():
    outcome = Check("p.c", "c", True, {"ratio": 5, "runs": 3})
    assert "The ratio is 5 over 3 runs.</span>" in say(outcome, "The ratio is {ratio}  \n    over\n{runs} runs.")
    with pytest.raises(ClaimError) as refused:
        say(outcome, "The {speed} is {ratio}")
    assert str(refused.value).endswith("uses 'speed' but check p.c measured only: ratio, runs")
