"""perf_models.objects: the same arrays NumPy builds, with one object per distinct string."""

from __future__ import annotations

import numpy as np
import pytest

from sdpa_analyzer.perf_models.objects import as_objects, filled


def _distinct_objects(arr: np.ndarray) -> int:
    return len({id(x) for x in arr.tolist()})


def test_numpy_copies_a_string_per_element() -> None:
    # the behaviour the helpers exist for: if NumPy stops copying, they are no longer needed
    text = "matrix_bf16" + "_" * 20
    assert _distinct_objects(np.full(4, text, dtype=object)) == 4
    assert _distinct_objects(np.array([text, "x" * 30])[[0, 0, 0, 1]].astype(object)) == 4


@pytest.mark.parametrize("value", ["matrix_bf16_long_spec_name", None, 3.5, ("a", "b")])
def test_filled_equals_np_full_with_one_reference(value: object) -> None:
    out = filled(5, value)
    assert out.dtype == object and out.shape == (5,)
    assert out.tolist() == [value] * 5
    assert all(x is value for x in out.tolist())


def test_filled_empty() -> None:
    assert filled(0, "x").shape == (0,)


def test_as_objects_equals_astype_object_with_one_object_per_value() -> None:
    rng = np.random.default_rng(0)
    words = np.array(["forward_pass_kind", "backward_pass_kind", "decode_step_kind"])
    u = words[rng.integers(0, 3, 1000)]
    out = as_objects(u)
    assert out.dtype == object
    assert out.tolist() == u.astype(object).tolist()
    assert _distinct_objects(out) == 3


def test_as_objects_keeps_shape_and_other_dtypes() -> None:
    u = np.array([["ab", "cd"], ["ab", "ab"]])
    assert as_objects(u).tolist() == [["ab", "cd"], ["ab", "ab"]]
    assert as_objects(np.array([], dtype="U3")).dtype == object
    ints = np.array([1, 2, 3])
    assert as_objects(ints).tolist() == [1, 2, 3] and as_objects(ints).dtype == object
    mixed = np.array(["a", None], dtype=object)
    assert as_objects(mixed).tolist() == ["a", None]
