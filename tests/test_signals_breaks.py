"""Graph breaks dynamo counted that ``explain`` of the model did not see (engine/measure/signals.py)."""
from engine.measure import signals

OPT_BREAK = ("Call to `torch._dynamo.graph_break()`\n  Explanation: User-inserted graph break. "
             "Message: None\n  Hint: Remove the `torch._dynamo.graph_break()` call.")


def test_counted_break_missing_from_the_model_trace_is_named_with_where():
    rows = signals.unexplained_breaks(
        {"Call to `torch._dynamo.graph_break()` (Explanation: User-inserted graph break.)": 1},
        [], "compiled optimizer step")
    assert rows == [{"reason": "Call to `torch._dynamo.graph_break()` (Explanation: "
                               "User-inserted graph break.) [compiled optimizer step]",
                     "file": None, "line": None, "count": 1}]


def test_break_already_explained_in_the_model_is_not_repeated():
    explained = [{"reason": "Tensor.item: `x.item()`", "file": "m.py", "line": 3, "count": 1}]
    assert signals.unexplained_breaks({"Tensor.item": 2}, explained, "x") == []


def test_counter_reasons_keep_the_first_line_and_the_explanation(monkeypatch):
    class Utils:
        counters = {"graph_break": {OPT_BREAK: 2, "print at 0x7f00aa: builtin": 1}}

    monkeypatch.setattr(signals, "_dynamo_utils", lambda: Utils)
    assert signals.counter_break_reasons() == {
        "Call to `torch._dynamo.graph_break()` (Explanation: User-inserted graph break. "
        "Message: None)": 2,
        "print: builtin": 1}


def test_an_explained_break_without_reason_hides_nothing():
    rows = signals.unexplained_breaks({"Tensor.item": 1}, [{"reason": ""}], "x")
    assert [r["reason"] for r in rows] == ["Tensor.item [x]"]
