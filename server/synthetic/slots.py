"""Argument slots of a CPU op as the profiler records them (``Input Dims`` / ``Input type`` /
``Input Strides`` / ``Concrete Inputs``), and the ATen spellings of each dtype.

One slot is (dims, type, strides, concrete value). The constructors have one-letter names because op trees
list many slots per line: ``T`` a tensor, ``TP`` a tensor from a (dims, strides) pair, ``S`` a scalar,
``L`` a scalar list, ``N`` an empty (None) slot.
"""

from __future__ import annotations

from collections.abc import Sequence

ATEN_TYPE = {"bf16": "c10::BFloat16", "fp16": "c10::Half", "fp32": "float"}  # ``Input type``, C++ kernel names
SCALAR_CODE = {"bf16": 15, "fp16": 5, "fp32": 6}  # c10::ScalarType as aten::empty prints it
ELEM_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}

Slot = tuple[list[int], str, list[int], str]


def row_major(dims: Sequence[int]) -> list[int]:
    """Strides of a contiguous tensor of shape ``dims``."""
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * int(dims[i + 1])
    return strides


def c10_double(x: float) -> str:
    """A double as the profiler prints it: 17 significant digits, integral values end with '.'."""
    text = f"{x:.17g}"
    if not any(ch in text for ch in ".en"):
        text += "."
    return text


def T(dims: Sequence[int], dtype: str, strides: Sequence[int] | None = None) -> Slot:
    """Tensor slot; contiguous unless ``strides`` are given."""
    return (list(dims), dtype, list(strides) if strides is not None else row_major(dims), "")


def TP(pair: tuple[list[int], list[int]], dtype: str) -> Slot:
    """Tensor slot from a (dims, strides) pair."""
    return T(pair[0], dtype, pair[1])


def S(value: bool | int | float) -> Slot:
    """Scalar slot, its concrete value printed as the profiler prints it."""
    if isinstance(value, bool):
        text = "True" if value else "False"
    elif isinstance(value, int):
        text = str(value)
    else:
        text = c10_double(value)
    return ([], "Scalar", [], text)


def L(values: Sequence[int | bool]) -> Slot:
    """Scalar-list slot (sizes, strides, dims)."""
    return ([], "ScalarList", [], "[" + ", ".join(str(v) for v in values) + "]")


def N() -> Slot:
    """Empty slot: an argument passed as None."""
    return ([], "", [], "")


def slot_args(slots: Sequence[Slot]) -> dict[str, list]:
    """The four per-slot argument lists of a ``cpu_op`` event, in the profiler's key order."""
    return {
        "Concrete Inputs": [s[3] for s in slots],
        "Input type": [s[1] for s in slots],
        "Input Strides": [s[2] for s in slots],
        "Input Dims": [s[0] for s in slots],
    }


def bnhd(b: int, n: int, h: int, d: int) -> tuple[list[int], list[int]]:
    """(dims, strides) of a contiguous (B, N, H, d) tensor."""
    dims = [b, n, h, d]
    return dims, row_major(dims)


def bhnd_view(b: int, n: int, h: int, d: int) -> tuple[list[int], list[int]]:
    """The (B, H, N, d) view of a contiguous (B, N, H, d) tensor: what ``.transpose(1, 2)`` gives."""
    s = row_major([b, n, h, d])
    return [b, h, n, d], [s[0], s[2], s[1], s[3]]
