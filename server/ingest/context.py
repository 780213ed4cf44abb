"""Everything the attention passes share about one parsed trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from sdpa_analyzer.server.ingest.e2e import Baseline
from sdpa_analyzer.server.ingest.events import ANN, CPU, GPU_ANN, PY, RT, TraceEvents
from sdpa_analyzer.server.ingest.linking import Links
from sdpa_analyzer.server.ingest.tree import HostForest

_NO_SIGNATURE: tuple[Any, Any, Any, Any] = (None, None, None, None)


@dataclass
class TraceContext:
    path: Path
    ev: TraceEvents
    forest: HostForest
    links: Links
    baseline: Baseline
    header: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    # ---- name predicates over host nodes -------------------------------------------------------
    def name_mask(self, pred: Any, family: int | None = None) -> np.ndarray:
        """Boolean mask over host nodes whose name satisfies `pred` (evaluated once per distinct name)."""
        f = self.forest
        codes = f.name if family is None else f.name[f.fam == family]
        uniq = np.unique(codes)
        flags = np.zeros(len(self.ev.names), dtype=bool)  # per name code (a lookup table, not an inverse per node)
        flags[uniq] = np.fromiter((bool(pred(self.ev.names[c])) for c in uniq.tolist()), dtype=bool, count=len(uniq))
        if family is None:
            return flags[codes]
        out = np.zeros(len(f), dtype=bool)
        out[f.fam == family] = flags[codes]
        return out

    def node_name(self, node: int) -> str:
        return self.ev.names[int(self.forest.name[node])]

    def signature(self, node: int) -> tuple[Any, Any, Any, Any]:
        """(Input Dims, Input type, Input Strides, Concrete Inputs) of a cpu op as tuples; Nones if not kept."""
        if node < 0 or int(self.forest.fam[node]) != CPU:
            return _NO_SIGNATURE
        sid = self.ev.cpu_sig.get(self.forest.row(node))
        return _NO_SIGNATURE if sid is None else self.ev.signatures[sid]

    def node_ordinal(self, node: int) -> int:
        fam = int(self.forest.fam[node])
        table = {CPU: self.ev.cpu, RT: self.ev.rt, PY: self.ev.py, ANN: self.ev.ann}[fam]
        return int(table["ordinal"][self.forest.row(node)])

    # ---- GPU side ----------------------------------------------------------------------------------
    @cached_property
    def gpu_node(self) -> np.ndarray:
        """gpu row -> host node that launched it: the runtime call, else the op matched by External id."""
        f, links = self.forest, self.links
        out = np.full(len(links.launch), -1, dtype=np.int64)
        has_rt = links.launch >= 0
        out[has_rt] = f.offset[RT] + links.launch[has_rt]
        has_op = ~has_rt & (links.ext_op >= 0)
        out[has_op] = f.offset[CPU] + links.ext_op[has_op]
        return out

    def thread_tid(self, thread: int) -> Any:
        return self.ev.threads[thread][1]

    def thread_labels(self, thread: int) -> tuple[str, str, str]:
        """(process_name, process_label, thread_name) as the upstream CSV writes them."""
        pid, tid = self.ev.threads[thread]
        return (
            self.ev.process_names.get(pid, "Unknown"),
            self.ev.process_labels.get(pid, "Unknown"),
            self.ev.thread_names.get((pid, tid), "Unknown"),
        )

    # ---- launches by time ----------------------------------------------------------------------------
    @cached_property
    def _launch_index(self) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], np.ndarray]:
        """Per CPU thread: (launch times sorted, gpu rows in that order) for non-graph runtime launches."""
        links, ev = self.links, self.ev
        rows = np.flatnonzero((links.launch >= 0) & ~links.graph & (ev.gpu["kind"] != GPU_ANN))
        r = links.launch[rows]
        thr = ev.rt["thread"][r]
        ts = ev.rt["ts"][r]
        order = np.lexsort((ts, thr))
        rows, thr, ts = rows[order], thr[order], ts[order]
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if len(thr):
            cut = np.flatnonzero(np.diff(thr)) + 1
            for a, b in zip(np.concatenate([[0], cut]), np.concatenate([cut, [len(thr)]]), strict=True):
                out[int(thr[a])] = (ts[a:b], rows[a:b])
        return out, rows

    def gpu_rows_launched_between(self, thread: int, t0: float, t1: float) -> np.ndarray:
        """GPU rows whose runtime launch on `thread` happened within [t0, t1]."""
        got = self._launch_index[0].get(thread)
        if got is None:
            return np.zeros(0, dtype=np.int64)
        ts, rows = got
        lo = np.searchsorted(ts, t0, side="left")
        hi = np.searchsorted(ts, t1, side="right")
        return rows[lo:hi]
