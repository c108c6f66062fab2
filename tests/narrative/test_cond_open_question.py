"""Bare numbers answer the coach's question still open several turns back (inserted sequences: "hang on, getting the
scale" / "no rush"), and only that question: a later question closes it."""
from __future__ import annotations

from reconcile_app.narrative.engines.measurements import find_measurements, open_question_context


def _kinds(answer: str, previous: list[tuple[str, str]]) -> dict[str, list[float]]:
    return {m.kind: m.values or [m.value] for m in find_measurements(answer, context=open_question_context(previous))}


def test_a_weight_question_stays_open_across_a_holding_exchange() -> None:
    previous = [("coach", "did you step on the scale today? what did it say?"), ("patient", "hang on its in the bathroom"),
                ("coach", "no rush at all."), ("patient", "ok found my glasses")]
    assert _kinds("219.5", previous) == {"weight": [219.5]}


def test_sugar_readings_answer_a_question_asked_three_turns_back() -> None:
    previous = [("coach", "any fingerstick sugars from this week you can share?"), ("patient", "lemme look at the app"),
                ("coach", "take your time.")]
    assert _kinds("61 tues and 58 fri morning", previous)["glucose"] == [61.0, 58.0]


def test_a_later_question_about_something_else_closes_the_old_one() -> None:
    previous = [("coach", "what's your weight been?"), ("patient", "about the same"),
                ("coach", "and how many minutes did you walk on sunday?")]
    assert "weight" not in _kinds("45", previous)


def test_without_a_question_the_last_two_turns_are_the_context() -> None:
    assert open_question_context([("coach", "great job."), ("patient", "thanks"), ("coach", "see you")]) == "thanks see you"


def test_an_open_question_naming_no_measure_asks_about_the_one_under_discussion() -> None:
    previous = [("patient", "had some bad lows this week honestly"), ("coach", "thanks for telling me."),
                ("coach", "do you recall the readings?")]
    assert _kinds("54 on monday, 47 at 2am", previous)["glucose"] == [54.0, 47.0]
