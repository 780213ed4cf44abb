"""perf_models.literals: plain literals in, everything else refused (trace files are untrusted)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.perf_models.literals import (
    LiteralParseError,
    parse_bool_str,
    parse_float_str,
    parse_int_str,
    parse_literal,
)


def test_input_dims_cell_fast_path():
    # a real `Input Dims` cell (h100_qwen1.5-0.5b sdpa_fwd_ops.csv)
    cell = "((16, 16, 559, 64), (16, 16, 559, 64), (16, 16, 559, 64), (), (), (), ())"
    assert parse_literal(cell) == ((16, 16, 559, 64), (16, 16, 559, 64), (16, 16, 559, 64), (), (), (), ())


def test_trace_style_lists_and_single_element_tuples():
    assert parse_literal("[[888, 8, 64], [888, 1, 64], [], []]") == ((888, 8, 64), (888, 1, 64), (), ())
    assert parse_literal("((5,), (-1, -1))") == ((5,), (-1, -1))
    assert parse_literal("7") == 7


def test_concrete_inputs_cell():
    cell = "('', '', '', '0.', 'True', 'False', '0.125')"
    assert parse_literal(cell) == ("", "", "", "0.", "True", "False", "0.125")


def test_numpy_wrappers_are_unwrapped():
    cell = (
        "[{'name': 'attn_fwd', 'stream': 0, 'count': 24, 'total_duration_us': np.float64(3908.798), "
        "'n': np.int64(3), 'ok': np.True_, 'bad': np.False_, 'gap': np.float64(nan)}]"
    )
    (d,) = parse_literal(cell)
    assert d == {
        "name": "attn_fwd",
        "stream": 0,
        "count": 24,
        "total_duration_us": 3908.798,
        "n": 3,
        "ok": True,
        "bad": False,
        "gap": None,
    }


def test_nan_inside_a_string_is_left_alone():
    assert parse_literal("{'kernel': 'banana nan inf', 'x': nan}") == {"kernel": "banana nan inf", "x": None}


@pytest.mark.parametrize("missing", [None, float("nan"), "", "  ", "nan", "NaN", "None"])
def test_missing_cells_are_none(missing):
    assert parse_literal(missing) is None


def test_already_parsed_values_pass_through():
    value = ((1, 2), ())
    assert parse_literal(value) is value
    assert parse_literal({"B": 1}) == {"B": 1}


@pytest.mark.parametrize(
    "bait",
    [
        "__import__('os').system('touch /tmp/sdpa_pwned_literal')",
        "os",
        "a.b",
        "().__class__.__bases__",
        "np.float64(__import__('os').getcwd())",
        "{'a': open('/etc/passwd').read()}",
        "[x for x in range(3)]",
        "lambda: 1",
        "(1, 2",
        "1 + x",
        "np.float64(os)",
    ],
)
def test_eval_bait_raises(bait):
    with pytest.raises(LiteralParseError) as info:
        parse_literal(bait, field="Input Dims")
    msg = str(info.value)
    assert msg.startswith("Input Dims: ") and "\n" not in msg
    assert "object at 0x" not in msg  # no AST reprs in user-facing messages
    assert not Path("/tmp/sdpa_pwned_literal").exists()


def test_literal_error_is_a_perf_model_error():
    assert issubclass(LiteralParseError, PerfModelError)
    assert issubclass(LiteralParseError, ValueError)


def test_oversized_literal_refused():
    with pytest.raises(LiteralParseError, match="character limit"):
        parse_literal("[" + "1," * 1_100_000 + "]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("True", True),
        ("False", False),
        ("true", True),
        ("np.True_", True),
        (True, True),
        ("", None),
        (None, None),
    ],
)
def test_parse_bool_str(text, expected):
    assert parse_bool_str(text) is expected


@pytest.mark.parametrize("text", ["0.088388347648318433", "0.", "1", "-1", "yes"])
def test_parse_bool_refuses_numbers(text):
    # softmax_scale in a causal slot must never read as truthy (reference-pitfalls #2)
    with pytest.raises(LiteralParseError, match="not a boolean"):
        parse_bool_str(text, field="slot 10")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.088388347648318433", 0.088388347648318433),
        ("0.", 0.0),
        ("-1", -1.0),
        ("1e-3", 0.001),
        ("np.float64(0.5)", 0.5),
        (0.125, 0.125),
        ("", None),
        ("nan", None),
        (float("nan"), None),
    ],
)
def test_parse_float_str(text, expected):
    assert parse_float_str(text) == expected


def test_parse_float_inf_and_refusals():
    assert math.isinf(parse_float_str("inf"))
    for bad in ("True", "abc", "1.2.3", True):
        with pytest.raises(LiteralParseError):
            parse_float_str(bad)


@pytest.mark.parametrize(
    ("text", "expected"), [("559", 559), ("-1", -1), ("np.int64(4)", 4), (8, 8), (8.0, 8), ("", None)]
)
def test_parse_int_str(text, expected):
    assert parse_int_str(text) == expected


@pytest.mark.parametrize("bad", ["0.5", "1.0", "True", True, 2.5, "[1]"])
def test_parse_int_refusals(bad):
    with pytest.raises(LiteralParseError):
        parse_int_str(bad)
