"""Nesting of host events (ops, Python frames, runtime calls, annotations) per thread, by time.

`build_forest` finds each interval's parent without a per-event Python loop. Sort the intervals by
(thread, start, longest first); then the parent of interval i is the nearest earlier interval j of
the same thread that still contains it: end_j >= end_i (1 ns tolerance for clock rounding) and
end_j > start_i (a zero-length interval contains nothing). That is the "previous greater element"
of the end times, found by pointer jumping: start every candidate at the previous interval, and while
a candidate does not contain i, jump to the candidate's own candidate. Every interval skipped that
way ends before the candidate does, so it cannot contain i either; the jumps double like list
ranking, so a few dozen vectorized passes settle a million events. Partially overlapping siblings
(clock rounding in real traces) get the innermost interval that really contains them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_EPS_US = 1e-3  # 1 ns: tolerance for "contains" on µs timestamps
_BLOCK = 1 << 18  # nodes per block of a pointer-jumping pass


def build_forest(thread: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Parent index of every interval (-1 for roots; int32 below 2^31 intervals). Intervals of different threads
    never nest."""
    n = len(start)
    if n == 0:
        return np.full(0, -1, dtype=np.int32)
    idx = np.int32 if n < 2**31 else np.int64  # rank indices: half the bytes of the working arrays
    dur = np.asarray(dur, dtype=float)
    if np.isnan(dur).any() or (dur < 0).any():
        dur = np.maximum(np.nan_to_num(dur, nan=0.0), 0.0)
    start = np.asarray(start, dtype=float)
    order = np.lexsort((-dur, start, thread)).astype(idx)  # rank -> original index (stable: input order breaks ties)
    cand = np.arange(-1, n - 1, dtype=idx)
    if n > 1:
        th = thread[order]
        cand[1:][th[1:] != th[:-1]] = -1
        del th
    st = start[order]
    en = dur[order]
    en += st
    # what a container's end must reach: i's end (minus the tolerance), and strictly past i's start
    need = en - _EPS_US
    np.maximum(need, np.nextafter(st, np.inf, out=st), out=need)
    del st

    def not_contained(ranks: np.ndarray) -> np.ndarray:
        """The ranks whose candidate exists and does not contain them (they jump again)."""
        c = cand[ranks]
        has = c >= 0
        ranks, c = ranks[has], c[has]
        return ranks[en[c] < need[ranks]]

    def jump(ranks: np.ndarray) -> np.ndarray:
        cand[ranks] = cand[cand[ranks]]
        return not_contained(ranks)

    todo = _in_blocks(np.arange(n, dtype=idx), not_contained)
    while len(todo):
        todo = _in_blocks(todo, jump)
    parent = np.full(n, -1, dtype=idx)  # node ids as int32 when they fit: 4 bytes a host event less, held to the end
    for lo in range(0, n, _BLOCK):  # ranks back to node ids
        c = cand[lo : lo + _BLOCK]
        parent[order[lo : lo + _BLOCK]] = np.where(c >= 0, order[np.maximum(c, 0)], -1)
    return parent


def _clean_dur(d: np.ndarray) -> np.ndarray:
    """Durations as the forest reads them: NaN -> 0, negative -> 0 (the array itself when there is none)."""
    d = np.asarray(d, dtype=float)
    if np.isnan(d).any() or np.signbit(d).any():  # signbit: -0.0 too, which np.maximum may turn into 0.0
        return np.maximum(np.nan_to_num(d, nan=0.0), 0.0)
    return d


def nearest_marked_ancestor(parent: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """For every node, the nearest strict ancestor with mark=True (-1 if none), by pointer jumping; node ids as int32
    when they fit (these arrays are per host event: half the bytes)."""
    idx = np.int32 if len(parent) < 2**31 else np.int64
    up = parent.astype(idx)  # invariant: nodes strictly between i and up[i] are unmarked
    # `up[i]` walks towards the root; stop on a marked node (its answer is found)

    def unsettled(nodes: np.ndarray) -> np.ndarray:
        u = up[nodes]
        return nodes[(u >= 0) & ~mark[np.maximum(u, 0)]]

    def jump(nodes: np.ndarray) -> np.ndarray:
        up[nodes] = up[up[nodes]]
        return unsettled(nodes)

    todo = _in_blocks(np.arange(len(up), dtype=idx), unsettled)
    while len(todo):
        todo = _in_blocks(todo, jump)
    return up


def _in_blocks(items: np.ndarray, step: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """`step` over `items` a block at a time, the blocks' results joined. A pointer-jumping pass updates its
    pointers in place, block after block: a later block may read pointers that already jumped this pass, which
    only skips further over nodes that cannot be the answer (the loops' invariants hold). The point is memory: a
    pass over every node at once held ~20 bytes a node of temporaries, the analysis's peak on large traces."""
    if len(items) <= _BLOCK:
        return step(items)
    return np.concatenate([step(items[lo : lo + _BLOCK]) for lo in range(0, len(items), _BLOCK)])


def ancestors(parent: np.ndarray, i: int) -> list[int]:
    """Root-first list of the ancestors of node i (not including i). For a few nodes only."""
    chain: list[int] = []
    p = int(parent[i])
    while p >= 0:
        chain.append(p)
        p = int(parent[p])
    chain.reverse()
    return chain


class HostForest:
    """All host events of a trace (ops, runtime calls, Python frames, annotations) as one forest.

    Node ids: family offset + row in that family's table (cpu, rt, py, ann, in this order).
    """

    @classmethod
    def over_tables(cls, families: list[tuple[int, dict[str, np.ndarray]]]) -> HostForest:
        """The forest of (family code, columns) tables. Each table's thread, ts, dur and name columns are replaced,
        one column at a time as the forest's is built, by views of the forest's (equal) array: a trace's host events
        are held once, not twice."""
        forest = cls.__new__(cls)
        sizes = [len(cols["ts"]) for _, cols in families]
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64).tolist()
        offset = {code: bounds[i] for i, (code, _) in enumerate(families)}
        whole: dict[str, np.ndarray] = {}
        for key in ("thread", "ts", "dur", "name"):
            parts = [cols[key] for _, cols in families]
            if key == "dur":
                parts = [_clean_dur(d) for d in parts]
            whole[key] = np.concatenate(parts) if parts else np.zeros(0)
            del parts
            for i, (_, cols) in enumerate(families):
                mine, view = cols[key], whole[key][bounds[i] : bounds[i + 1]]
                if mine.dtype == view.dtype and np.array_equal(mine.view(np.uint8), view.view(np.uint8)):
                    cols[key] = view  # bit for bit the same values (a negative or NaN dur keeps its own)
        fam = np.concatenate([np.full(n, code, dtype=np.int8) for (code, _), n in zip(families, sizes, strict=True)])
        forest._build(offset, fam, whole["thread"], whole["ts"], whole["dur"], whole["name"])
        return forest

    def __init__(self, families: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
        # families: (family code, thread, ts, dur, name) per family table, in node-id order
        offset: dict[int, int] = {}
        fam, thread, ts, dur, name = [], [], [], [], []
        start = 0
        for code, th, t, d, nm in families:
            offset[code] = start
            start += len(t)
            fam.append(np.full(len(t), code, dtype=np.int8))
            thread.append(th)
            ts.append(t)
            dur.append(_clean_dur(d))
            name.append(nm)
        self._build(
            offset,
            np.concatenate(fam) if fam else np.zeros(0, dtype=np.int8),
            np.concatenate(thread) if thread else np.zeros(0, dtype=np.int64),
            np.concatenate(ts) if ts else np.zeros(0),
            np.concatenate(dur) if dur else np.zeros(0),
            np.concatenate(name) if name else np.zeros(0, dtype=np.int64),
        )

    def _build(self, offset: dict[int, int], fam: np.ndarray, thread: np.ndarray, ts: np.ndarray, dur: np.ndarray,
               name: np.ndarray) -> None:  # fmt: skip
        self.offset = offset
        self.fam, self.thread, self.ts, self.dur, self.name = fam, thread, ts, dur, name
        self.parent = build_forest(self.thread, self.ts, self.dur)
        self.end = self.ts + self.dur

    def __len__(self) -> int:
        return len(self.ts)

    def node(self, family: int, row: int | np.ndarray) -> int | np.ndarray:
        return self.offset[family] + row

    def row(self, node: int) -> int:
        return int(node - self.offset[int(self.fam[node])])

    def nearest(self, mark: np.ndarray) -> np.ndarray:
        """Nearest strict ancestor with mark=True for every node. Not cached: no analysis asks twice for the same
        marks, and each answer is 4 bytes a host node (~40 MB for a 4 GB trace), which a cache would hold to the end
        of the analysis."""
        return nearest_marked_ancestor(self.parent, mark)

    def ancestors(self, node: int) -> list[int]:
        return ancestors(self.parent, node)
