"""Host nesting by time (vectorized) against a plain stack walk, and nearest-marked-ancestor by brute force."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from sdpa_analyzer.server.ingest import tree
from sdpa_analyzer.server.ingest.tree import build_forest, nearest_marked_ancestor


def stack_parents(thread, start, dur) -> np.ndarray:
    """The obvious algorithm: sort by (thread, start, longest first), keep a stack of open intervals.

    An interval is open for a later one when it has not ended before that one starts; a zero-length
    interval never contains anything. On a partial overlap the innermost open interval that still
    contains the new one is its parent.
    """
    n = len(start)
    end = [s + d for s, d in zip(start, dur, strict=True)]
    order = sorted(range(n), key=lambda i: (thread[i], start[i], -dur[i], i))
    parent = [-1] * n
    stack: list[int] = []
    for i in order:
        while stack and (thread[stack[-1]] != thread[i] or end[stack[-1]] <= start[i] or dur[stack[-1]] == 0):
            stack.pop()
        # partial overlap: skip open intervals that end before this one does
        k = len(stack) - 1
        while k >= 0 and end[stack[k]] + 1e-3 < end[i]:
            k -= 1
        parent[i] = stack[k] if k >= 0 else -1
        stack.append(i)
    return np.array(parent)


def nested_intervals(rng: np.random.Generator, n: int, threads: int = 3) -> tuple[np.ndarray, ...]:
    out: list[tuple[int, int, int]] = []

    def rec(s: int, e: int, depth: int, th: int) -> None:
        t = s
        while t < e and len(out) < n:
            length = int(rng.integers(0, max(1, (e - t) // 2) + 1))
            if t + length > e:
                break
            out.append((th, t, length))
            if depth < 6 and length > 2:
                rec(t, t + length, depth + 1, th)
            t += length + int(rng.integers(0, 3))

    for th in range(threads):
        rec(0, 100_000, 0, th)
    a = np.array(out[:n])
    return a[:, 0], a[:, 1].astype(float), a[:, 2].astype(float)


# the pointer-jumping passes work a block of nodes at a time (server.ingest.tree._BLOCK, 2^18): tiny blocks make
# every pass span many blocks, whose in-place updates must give the same answers
BLOCKS = [None, 1, 7, 1000]


@pytest.fixture(params=BLOCKS, ids=lambda b: "default-block" if b is None else f"block-{b}")
def block(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param is not None:
        monkeypatch.setattr(tree, "_BLOCK", request.param)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forest_matches_stack_walk(seed: int, block: None) -> None:
    rng = np.random.default_rng(seed)
    th, st, du = nested_intervals(rng, 5000)
    # shuffle: the input order must not matter
    perm = rng.permutation(len(st))
    th, st, du = th[perm], st[perm], du[perm]
    got = build_forest(th, st, du)
    assert np.array_equal(got, stack_parents(th.tolist(), st.tolist(), du.tolist()))


def test_ties_zero_length_and_partial_overlap(block: None) -> None:
    # id: 0 [0,10]  1 [0,10] (same span: 1 nests in 0 by input order)  2 [2,2] zero-length at 2
    #     3 [2,5] longer, so it sorts before 2 and contains it  4 [4,12] runs past 0/1's end (partial
    #     overlap): nothing contains it  5 [5,6] starts when 3 ends -> innermost container is 4
    #     6 [10,11]: 0/1 are closed at 10, 4 contains it
    start = np.array([0, 0, 2, 2, 4, 5, 10], dtype=float)
    dur = np.array([10, 10, 0, 3, 8, 1, 1], dtype=float)
    th = np.zeros(7, dtype=np.int64)
    got = build_forest(th, start, dur).tolist()
    assert got[1] == 0
    assert got[3] == 1 and got[2] == 3  # the zero-length event at 2 sits inside [2, 5]
    assert got[5] == 4  # innermost open interval that contains [5, 6]
    assert got[4] == -1  # partial overlap of 0/1's end: no interval contains [4, 12]
    assert got[6] == 4  # 4 is still open at 10 and contains [10, 11]
    assert got == stack_parents(th.tolist(), start.tolist(), dur.tolist()).tolist()


def test_nearest_marked_ancestor_brute_force(block: None) -> None:
    rng = np.random.default_rng(5)
    th, st, du = nested_intervals(rng, 4000)
    parent = build_forest(th, st, du)
    mark = rng.random(len(parent)) < 0.15
    got = nearest_marked_ancestor(parent, mark)
    for i in range(len(parent)):
        p = parent[i]
        while p >= 0 and not mark[p]:
            p = parent[p]
        assert got[i] == p


def test_real_trace_thread_matches_stack_walk(traces_dir: Path) -> None:
    path = traces_dir / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    if not path.exists():
        pytest.skip("Qwen H100 trace not available")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    host = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") in ("cpu_op", "python_function", "user_annotation", "cuda_runtime", "cuda_driver")
    ]
    tid_codes = {t: i for i, t in enumerate(sorted({(e["pid"], e["tid"]) for e in host}, key=str))}
    th = [tid_codes[(e["pid"], e["tid"])] for e in host]
    st = [float(e["ts"]) for e in host]
    du = [float(e.get("dur", 0.0)) for e in host]
    got = build_forest(np.array(th), np.array(st), np.array(du))
    expected = stack_parents(th, st, du)
    assert np.array_equal(got, expected)
