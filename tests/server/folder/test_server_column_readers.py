"""Column-wise readers of a category CSV agree with their per-row definitions, cell by cell (brute force):
kernel_details_summary (names, dominant kernel), Input Dims (plain nests, strict parse, errors), `args`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.folder.kernel_details import parse_kernel_details, read_kernel_details
from sdpa_analyzer.server.folder.read import load_category
from sdpa_analyzer.server.scoring.records import _args_column, short_args


def _kd(*kernels: tuple[str, str]) -> str:
    """A kernel_details_summary cell: (name repr, total_duration_us text) per kernel."""
    parts = [f"{{'name': {name}, 'stream': 7, 'count': 3, 'total_duration_us': {dur}}}" for name, dur in kernels]
    return "[" + ", ".join(parts) + "]"


CELLS = [
    _kd(("'attn_fwd'", "np.float64(12.5)")),
    _kd(("'attn_fwd'", "np.float64(99.0)")),  # same names, other numbers: one skeleton
    _kd(("'fill<float>'", "np.float64(5.0)"), ("'attn_fwd'", "np.float64(50.0)")),
    _kd(("'fill<float>'", "np.float64(80.0)"), ("'attn_fwd'", "np.float64(50.0)")),  # dominant flips
    _kd(("'fill<float>'", "nan"), ("'attn_fwd'", "7")),
    _kd(("'fill<float>'", "None"), ("'attn_fwd'", "np.float64(1e3)")),  # unreadable duration: counts as 0
    _kd(("'a'", "np.float64(1.0)"), ("'b'", "np.float64(1.0)")),  # a tie: the first
    _kd(("'k{lambda(float)#1}'", "np.float64(9.0)"), ("'attn'", "np.float64(1.0)")),  # '{' inside a name
    _kd(("'it\\'s'", "np.float64(2.0)"), ("'attn'", "np.float64(1.0)")),  # an escaped quote: per-row path
    _kd(
        ('"dq\'name"', "np.float64(2.0)"),
    ),  # a double-quoted name
    "[]",
    "[{'stream': 1, 'count': 2}]",  # no name
    "[{'count': 2, 'name': 'late', 'total_duration_us': np.float64(3.0)}]",  # other key order
    None,
    float("nan"),
]


def _dominant(cell: object) -> int:
    durs = [float(k["total_duration_us"] or 0.0) for k in parse_kernel_details(cell)]
    return int(np.argmax(durs)) if durs else -1


@pytest.mark.parametrize("repeat", [1, 40])
def test_kernel_details_match_the_per_row_parser(repeat: int) -> None:
    rng = np.random.default_rng(repeat)
    cells = [CELLS[i] for i in rng.integers(0, len(CELLS), len(CELLS) * repeat)] + CELLS
    kd = read_kernel_details(cells)
    for i, cell in enumerate(cells):
        assert kd.names(i) == tuple(k["name"] for k in parse_kernel_details(cell)), cell
        assert kd.dominant[i] == _dominant(cell), cell
        assert kd[i] == parse_kernel_details(cell)


def test_dominant_kernel_of_many_rows_with_one_skeleton() -> None:
    # every cell well formed: the durations of the whole group are read in one pass
    rng = np.random.default_rng(5)
    durs = rng.uniform(1, 100, (500, 3))
    durs[::10, 1] = durs[::10, 2]  # ties: the first wins
    cells = [
        _kd(("'fill'", f"np.float64({a})"), ("'attn'", f"{b}"), ("'bwd_dq'", f"np.float64({c})")) for a, b, c in durs
    ]
    kd = read_kernel_details(cells)
    assert list(kd.dominant) == [_dominant(c) for c in cells]
    assert list(kd.dominant) == np.argmax(durs, axis=1).tolist()  # independent: numpy on the numbers themselves
    assert len(kd.name_sets) == 2 and kd.names(0) == ("fill", "attn", "bwd_dq")


HEADER = "name,Input Dims,Input type,operation_count,Kernel Time (µs)_sum\n"
TYPES3 = "\"('c10::BFloat16', 'c10::BFloat16', 'c10::Half', 'Scalar')\""
TYPES_SAME = "\"('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', '')\""


def _folder(tmp_path: Path, dims: list[str], types: list[str]) -> Path:
    out = tmp_path / "f"
    (out / "category_data").mkdir(parents=True)
    (out / "metadata").mkdir()
    lines = [f"aten::x,{d},{t},1,10.0" for d, t in zip(dims, types, strict=True)]
    (out / "category_data" / "sdpa_fwd_ops.csv").write_text(HEADER + "\n".join(lines) + "\n")
    (out / "metadata" / "sdpa_fwd_metadata.json").write_text('{"gpu_utilization": {"total_time_ms": 5.0}}')
    return out


def test_input_dims_and_args_match_short_args(tmp_path: Path) -> None:
    dims = [
        '"((16, 8, 128, 64), (16, 8, 128, 64), (16, 8, 128, 64), (), ())"',  # the usual: tensors, then empties
        '"((2, 4, 32, 64), (2, 4, 32, 64), (2, 4, 32, 64), (), ())"',
        '"((1, 2), (), (3, 4,), (5,))"',  # empties in between, trailing commas
        '"[[1, 2], [3], [], [4, 5, 6]]"',  # list brackets
        '"((1, (2, 3)), (4,))"',  # a nested entry: short_args' own formatting
        '"((-1, 2), (3,))"',  # not plain: parsed strictly
        '"(7, 8)"',  # entries that are numbers, not shapes
        "",  # empty cell
        '"()"',
    ]
    types = [TYPES_SAME, TYPES_SAME, TYPES3, TYPES3, TYPES3, TYPES3, TYPES3, TYPES3, TYPES3]
    data = load_category(_folder(tmp_path, dims, types), "sdpa_fwd")
    parsed = [data.input_dims(i) for i in range(len(dims))]
    # the parsed cells, as JSON lists for plain nests and literals otherwise
    assert parsed[0] == [[16, 8, 128, 64], [16, 8, 128, 64], [16, 8, 128, 64], [], []]
    assert parsed[2] == [[1, 2], [], [3, 4], [5]]
    assert parsed[5] == ((-1, 2), (3,))
    assert parsed[7] is None
    assert list(data.dims_plain) == [True, True, True, True, True, False, True, False, True]
    args = _args_column(data)
    assert args == [short_args(p, data.parsed["Input type"][i]) for i, p in enumerate(parsed)]
    # worked by hand: bf16 q/k/v, the empty slots dropped
    assert args[0] == "(16,8,128,64) bf16<br>(16,8,128,64) bf16<br>(16,8,128,64) bf16"
    assert args[2] == "(1,2) bf16<br>(3,4) fp16<br>(5) Scalar"


def test_a_malformed_plain_cell_is_named(tmp_path: Path) -> None:
    dims = ['"((1, 2), (3, 4))"', '"((1, 2), (3, 4)"', '"((5, 6),)"']  # row 3 of the file lacks a bracket
    with pytest.raises(InputError, match=r"'Input Dims' row 3"):
        load_category(_folder(tmp_path, dims, [TYPES3] * 3), "sdpa_fwd")


def test_many_rows_group_by_structure(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    shapes = [
        "(({b}, 8, {n}, 64), ({b}, 2, {n}, 64), ({b}, 2, {n}, 64), (), ())",
        "(({b}, 8, {n}, 64), (), ({b}, 2, {n}, 64), ())",
    ]
    dims = [
        f'"{shapes[k].format(b=b, n=n)}"'
        for k, b, n in zip(rng.integers(0, 2, 300), rng.integers(1, 99, 300), rng.integers(1, 5000, 300), strict=True)
    ]
    types = [TYPES_SAME if k % 3 else TYPES3 for k in range(300)]
    data = load_category(_folder(tmp_path, dims, types), "sdpa_fwd")
    expected = [short_args(data.input_dims(i), data.parsed["Input type"][i]) for i in range(300)]
    assert _args_column(data) == expected
    assert pd.Series(expected).nunique() > 200  # the rows really differ


@pytest.mark.parametrize(
    ("cell", "fast"),
    [
        ("((16, 8, 128, 64), (), (3,))", True),
        ("((100, 0), (0,))", True),
        ("()", True),
        ("7", True),
        ("((01, 2),)", False),  # a leading zero is no Python literal
        ("((00,),)", False),
        ("((1 2),)", False),  # two numbers without a comma
        ("((1, 2) (3))", False),
        ("((1, 2)", False),  # unbalanced
        ("((1,2)),((3,))", False),  # two values: the strict parser decides what it is
        ("(" * 40 + "1" + ")" * 40, False),  # deeper than MAX_NESTING
    ],
)
def test_plain_shape_cells_are_checked_without_being_parsed(cell: str, fast: bool) -> None:
    import ast

    from sdpa_analyzer.server.folder.read import _plain_nests_well_formed

    assert _plain_nests_well_formed([cell]) is fast
    if fast:  # what the fast path lets through is a literal integer nest, as Python reads it
        value = ast.literal_eval(cell)
        assert all(isinstance(x, int) for x in _leaves(value))
    # one bad cell among good ones sends the whole column to the strict parser
    assert _plain_nests_well_formed(["((1, 2),)", cell, "((3,),)"]) is fast


def _leaves(value: object) -> list[object]:
    if isinstance(value, tuple | list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]
