"""server.writers.csv_columns: the column-wise CSV writer gives exactly pandas' `to_csv(index=False)` bytes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdpa_analyzer.server.factorize import factorize
from sdpa_analyzer.server.writers.csv_columns import frame_csv_chunks


def _csv(df: pd.DataFrame, **kw: object) -> bytes:
    return b"".join(frame_csv_chunks(df, **kw))  # type: ignore[arg-type]


def _floats(rng: np.random.Generator, n: int) -> np.ndarray:
    """Every magnitude numpy formats differently (exponents below 1e-4 and from 1e16), zeros, NaN and inf."""
    x = rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-30, 30, n)
    special = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e16, 9999999999999998.0, 1e-4, 9.99e-5, 1e-5, 0.1, 1 / 3, 2.0**53]
    x[: len(special)] = special
    x[len(special) : len(special) + n // 4] = np.round(x[len(special) : len(special) + n // 4])
    return x


def test_mixed_frame_matches_pandas() -> None:
    rng = np.random.default_rng(7)
    n = 5000
    texts = np.array(["plain", "a,b", 'say "hi"', "two\nlines", "cr\rhere", "", "µs — ünïcode", "x"], dtype=object)
    mixed = texts[rng.integers(0, len(texts), n)]
    mixed[rng.random(n) < 0.1] = None
    mixed[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({
        "row": np.arange(n),
        "name": np.where(rng.random(n) < 0.5, "aten::x", "aten::y"),  # pandas' str dtype, two values
        "f_unique": _floats(rng, n),
        "f_few": rng.choice([1.5, 64.0, np.nan, 1e-7], n),  # few distinct values: a pre-rendered run
        "i_few": rng.integers(0, 3, n),
        "b": rng.random(n) < 0.5,
        "mixed": mixed,
        "unique_text": [f"k{i}, v{i}" for i in range(n)],
        "neg_ints": rng.integers(-(2**62), 2**62, n),
    })  # fmt: skip
    assert _csv(df) == df.to_csv(index=False).encode()
    assert _csv(df, chunk_rows=7) == df.to_csv(index=False).encode()


def test_list_columns_and_precomputed_codes() -> None:
    lists = [["w1", "w, 2"], [], ["it's"], ["w1", "w, 2"]] * 50
    df = pd.DataFrame({"a": [f"v{i % 3}" for i in range(len(lists))], "warnings": lists, "z": 1.0})
    expected = df.assign(warnings=df["warnings"].map(repr)).to_csv(index=False).encode()
    assert _csv(df, convert={"warnings": repr}) == expected

    def codes(col: str) -> tuple[np.ndarray, list[object]]:
        if col == "warnings":
            c, u = factorize([tuple(x) for x in lists])
            return c, [repr(list(t)) for t in u]
        return factorize(df[col].to_numpy(dtype=object))

    assert _csv(df, codes=codes) == expected


@pytest.mark.parametrize(
    "df",
    [
        pd.DataFrame({"only": ["", "a", None]}),  # one column: the csv module quotes a lone empty field
        pd.DataFrame({"a": pd.Series([], dtype=float), "b": pd.Series([], dtype=object)}),  # no rows
        pd.DataFrame({"t": pd.to_datetime(["2024-01-01"]), "x": [1]}),  # a dtype the writer leaves to pandas
        pd.DataFrame({"a,b": [1], 'q"': ["x"]}),  # header fields that need quotes
    ],
)
def test_edge_frames_match_pandas(df: pd.DataFrame) -> None:
    assert _csv(df) == df.to_csv(index=False).encode()


def test_mixed_numeric_objects_keep_their_own_text() -> None:
    # 1, 1.0 and True hash alike; the CSV must still say 1, 1.0 and True
    df = pd.DataFrame({"o": np.array([1, 1.0, True, None, "1"], dtype=object), "k": range(5)})
    assert _csv(df) == df.to_csv(index=False).encode()


@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_float_columns_rounded_as_written_match_pandas_of_the_rounded_frame(chunk_rows: int) -> None:
    rng = np.random.default_rng(7)
    df = pd.DataFrame({
        "a": rng.normal(size=50) * 1e3, "b": np.r_[[np.nan, 0.125, 2.675, -0.0049999, 1e-7], rng.random(45)],
        "c": np.repeat([1.23456, 7.0], 25), "name": [f"op{i % 4}" for i in range(50)],
    })  # fmt: skip
    digits = {"a": 2, "b": 3, "c": 1}
    want = df.assign(**{c: np.round(df[c].to_numpy(dtype=float), d) for c, d in digits.items()}).to_csv(index=False)
    assert b"".join(frame_csv_chunks(df, digits=digits, chunk_rows=chunk_rows)).decode() == want
    one = df[["a"]]  # the pandas path (one column) rounds too
    assert b"".join(frame_csv_chunks(one, digits={"a": 2})).decode() == one.round({"a": 2}).to_csv(index=False)


def test_repeated_and_mostly_distinct_text_columns_match_pandas() -> None:
    # between "few" (pre-rendered runs) and mostly distinct: each distinct value formatted once; mostly distinct
    # values with missing cells and non-text values among them: formatted a chunk at a time
    rng = np.random.default_rng(11)
    n = 4000
    repeated = np.array([f"w{i % 700}, \"q\"" if i % 3 else f"w{i % 700}" for i in range(n)], dtype=object)
    repeated[rng.random(n) < 0.05] = None
    distinct = np.array([f"s{i}" if i % 5 else f"s,{i}" for i in range(n)], dtype=object)
    distinct[rng.random(n) < 0.05] = np.nan
    distinct[rng.random(n) < 0.02] = 7
    df = pd.DataFrame({"repeated": repeated, "distinct": distinct, "x": np.arange(n) * 0.5})
    expected = df.to_csv(index=False).encode()
    assert _csv(df) == expected
    assert _csv(df, chunk_rows=13) == expected


def test_adjacent_float_columns_written_as_one_block_match_pandas() -> None:
    # a block of float columns: NaN (orjson's null), inf and magnitudes numpy writes in exponent form on some rows,
    # plain values on the others; rounded columns beside unrounded ones
    rng = np.random.default_rng(5)
    n = 3000
    plain = rng.uniform(1, 1000, (n, 4))
    plain[rng.random((n, 4)) < 0.1] = np.nan
    odd = _floats(rng, n)
    df = pd.DataFrame({
        "a": plain[:, 0], "b": plain[:, 1], "odd": odd, "c": plain[:, 2], "label": "x", "d": plain[:, 3],
        "e": np.where(rng.random(n) < 0.01, np.inf, plain[:, 0] * 1e-3),
    })  # fmt: skip
    digits = {"b": 2, "c": 0}
    expected = df.assign(b=np.round(df["b"], 2), c=np.round(df["c"], 0)).to_csv(index=False).encode()
    assert _csv(df, digits=digits) == expected
    assert _csv(df, digits=digits, chunk_rows=11) == expected
