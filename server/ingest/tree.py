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

import numpy as np

_EPS_US = 1e-3  # 1 ns: tolerance for "contains" on µs timestamps


def build_forest(thread: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Parent index of every interval (-1 for roots). Intervals of different threads never nest."""
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return parent
    dur = np.maximum(np.nan_to_num(np.asarray(dur, dtype=float), nan=0.0), 0.0)
    start = np.asarray(start, dtype=float)
    order = np.lexsort((-dur, start, thread))  # rank -> original index (stable: input order breaks ties)
    th, st = thread[order], start[order]
    en = st + dur[order]
    # what a container's end must reach: i's end (minus the tolerance), and strictly past i's start
    need = np.maximum(en - _EPS_US, np.nextafter(st, np.inf))
    cand = np.arange(-1, n - 1, dtype=np.int64)
    if n > 1:
        cand[1:][th[1:] != th[:-1]] = -1
    todo = np.flatnonzero(cand >= 0)
    todo = todo[en[cand[todo]] < need[todo]]
    while len(todo):
        nxt = cand[cand[todo]]
        cand[todo] = nxt
        still = nxt >= 0
        still[still] = en[nxt[still]] < need[todo[still]]
        todo = todo[still]
    parent[order] = np.where(cand >= 0, order[np.maximum(cand, 0)], -1)
    return parent


def nearest_marked_ancestor(parent: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """For every node, the nearest strict ancestor with mark=True (-1 if none), by pointer jumping."""
    n = len(parent)
    up = parent.copy()  # invariant: nodes strictly between i and up[i] are unmarked
    # `up[i]` walks towards the root; stop on a marked node (its answer is found)
    done = (up < 0) | mark[np.maximum(up, 0)]
    while True:
        todo = np.flatnonzero(~done)
        if len(todo) == 0:
            break
        nxt = up[up[todo]]
        up[todo] = nxt
        done[todo] = (nxt < 0) | mark[np.maximum(nxt, 0)]
    return up if n else up.copy()


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

    def __init__(self, families: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
        # families: (family code, thread, ts, dur, name) per family table, in node-id order
        self.offset: dict[int, int] = {}
        fam, thread, ts, dur, name = [], [], [], [], []
        start = 0
        for code, th, t, d, nm in families:
            self.offset[code] = start
            start += len(t)
            fam.append(np.full(len(t), code, dtype=np.int8))
            thread.append(th)
            ts.append(t)
            dur.append(np.maximum(np.nan_to_num(d, nan=0.0), 0.0))
            name.append(nm)
        self.fam = np.concatenate(fam) if fam else np.zeros(0, dtype=np.int8)
        self.thread = np.concatenate(thread) if thread else np.zeros(0, dtype=np.int64)
        self.ts = np.concatenate(ts) if ts else np.zeros(0)
        self.dur = np.concatenate(dur) if dur else np.zeros(0)
        self.end = self.ts + self.dur
        self.name = np.concatenate(name) if name else np.zeros(0, dtype=np.int64)
        self.parent = build_forest(self.thread, self.ts, self.dur)
        self._nma_cache: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.ts)

    def node(self, family: int, row: int | np.ndarray) -> int | np.ndarray:
        return self.offset[family] + row

    def row(self, node: int) -> int:
        return int(node - self.offset[int(self.fam[node])])

    def nearest(self, key: str, mark: np.ndarray) -> np.ndarray:
        """Nearest strict ancestor with mark=True for every node, cached under `key`."""
        got = self._nma_cache.get(key)
        if got is None:
            got = self._nma_cache[key] = nearest_marked_ancestor(self.parent, mark)
        return got

    def ancestors(self, node: int) -> list[int]:
        return ancestors(self.parent, node)
