"""Columnar tables of the events analyze_trace needs, built chunk by chunk while the trace streams in.

One pass over the raw event objects copies a handful of fields into Python lists (then numpy arrays)
per event family; the raw objects are dropped with their chunk. Names and threads become integer
codes into `names` / `threads`. The `args` of the few op families we read shapes from (attention,
matmul/softmax, copies, vLLM) are kept by reference; everything else is discarded.

Families:
- cpu  : `cpu_op` (ops / autograd nodes)          name, thread, ts, dur, External id, Sequence number, Fwd thread id
- rt   : `cuda_runtime` / `cuda_driver` (launches) name, thread, ts, dur, correlation, External id, the kernel
         a launch names (`args.kernel`, ROCm: graph captures launch no kernel event, only this name; -1 absent)
- py   : `python_function` (Python frames)         name, thread, ts, dur
- ann  : `user_annotation` (ProfilerStep#, vLLM)  name, thread, ts, dur
- gpu  : `kernel`, `gpu_memcpy`, `gpu_memset`, `gpu_user_annotation` kind, name, stream, ts, dur, correlation,
         External id, device, the launch grid (packed: server.ingest.grids; -1 absent)
- flow : `ac2g` flow start/finish events (launch -> kernel arrows)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from sdpa_analyzer.perf_models.literals import MAX_NESTING
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.ingest.fast_decode import (
    NO_ARGS,
    Event,
    FastPiece,
    PieceDecoder,
    PreparedSignature,
    Signature,
)
from sdpa_analyzer.server.ingest.grids import pack_grid, pack_grids

# event families (host side)
CPU, RT, PY, ANN = 0, 1, 2, 3
# GPU-side kinds
KERNEL, MEMCPY, MEMSET, GPU_ANN = 0, 1, 2, 3

_HOST_CATS = {
    "cpu_op": CPU,
    "operator": CPU,
    "cuda_runtime": RT,
    "cuda_driver": RT,
    "runtime": RT,
    "driver": RT,
    "python_function": PY,
    "user_annotation": ANN,
}
_GPU_CATS = {
    "kernel": KERNEL,
    "gpu_memcpy": MEMCPY,
    "memcpy": MEMCPY,
    "gpu_memset": MEMSET,
    "memset": MEMSET,
    "gpu_user_annotation": GPU_ANN,
}


@dataclass
class Table:
    """Equal-length numpy columns."""

    cols: dict[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, key: str) -> np.ndarray:
        return self.cols[key]

    def __len__(self) -> int:
        return len(next(iter(self.cols.values()))) if self.cols else 0


class _Growing:
    """Columns appended a piece at a time into arrays that grow by doubling. A large numpy array is mapped memory whose
    untouched tail costs nothing, and the old one is unmapped when it grows: the columns are held once, never as
    thousands of small heap blocks (which the allocator keeps after they are freed) plus their concatenation."""

    _FIRST = 1 << 15

    def __init__(self) -> None:
        self.cols: dict[str, np.ndarray] = {}
        self.n = 0

    def append(self, part: dict[str, np.ndarray]) -> None:
        k = len(next(iter(part.values()))) if part else 0
        if not k:
            return
        need = self.n + k
        for key, values in part.items():
            col = self.cols.get(key)
            if col is None or len(col) < need:
                cap = max(self._FIRST, need, 2 * (len(col) if col is not None else 0))
                grown = np.empty(cap, dtype=values.dtype)
                if col is not None:
                    grown[: self.n] = col[: self.n]
                col = self.cols[key] = grown
            elif col.dtype != values.dtype:
                raise TypeError(f"column {key}: {values.dtype} after {col.dtype}")
            col[self.n : need] = values
        self.n = need

    def columns(self) -> dict[str, np.ndarray]:
        return {key: col[: self.n] for key, col in self.cols.items()}


class RowSignatures:
    """cpu row -> index into `signatures`, for the rows that have one (the op families we read shapes of), as two
    sorted arrays: a dict held ~70 bytes an entry, ~70 MB for a 4 GB trace's million kept ops."""

    __hash__ = None  # type: ignore[assignment]  # mutable arrays: compared by value, not hashed

    def __init__(self, rows: np.ndarray, ids: np.ndarray) -> None:
        self.rows = np.asarray(rows, dtype=np.int64)
        self.ids = np.asarray(ids, dtype=np.int32)
        if len(self.rows) > 1 and not (self.rows[1:] > self.rows[:-1]).all():  # the builder's rows come in order
            order = np.argsort(self.rows, kind="stable")
            self.rows, self.ids = self.rows[order], self.ids[order]

    @classmethod
    def empty(cls) -> RowSignatures:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))

    def get(self, row: int, default: int | None = None) -> int | None:
        i = int(np.searchsorted(self.rows, row))
        return int(self.ids[i]) if i < len(self.rows) and int(self.rows[i]) == row else default

    def __getitem__(self, row: int) -> int:
        sid = self.get(row)
        if sid is None:
            raise KeyError(row)
        return sid

    def __contains__(self, row: object) -> bool:
        return isinstance(row, (int, np.integer)) and self.get(int(row)) is not None

    def __len__(self) -> int:
        return len(self.rows)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowSignatures):
            return NotImplemented
        return np.array_equal(self.rows, other.rows) and np.array_equal(self.ids, other.ids)

    def kept(self, usable: np.ndarray) -> RowSignatures:
        """The map after dropping the cpu rows where `usable` is False (the kept rows renumbered in order)."""
        keep = usable[self.rows]
        new_index = np.cumsum(usable) - 1
        return RowSignatures(new_index[self.rows[keep]], self.ids[keep])


@dataclass
class TraceEvents:
    names: list[str]
    threads: list[tuple[Any, Any]]  # (pid, tid) per thread code
    cpu: Table
    rt: Table
    py: Table
    ann: Table
    gpu: Table
    flow: Table
    cpu_sig: RowSignatures  # cpu row -> index into `signatures` (only the op families we read shapes of)
    signatures: list[tuple[Any, Any, Any, Any]]  # distinct (Input Dims, Input type, Input Strides, Concrete)
    process_names: dict[Any, str]
    process_labels: dict[Any, str]
    thread_names: dict[tuple[Any, Any], str]
    n_events: int
    excluded: int = 0  # events dropped for an unusable ts/dur (see EventTablesBuilder.finish)
    excluded_example: str | None = None
    bad_ids: int = 0  # ids (External id, correlation, flow id, Sequence number) that are not int64 integers
    deep_args: int = 0  # ops whose Input Dims/type/Strides/Concrete Inputs nest too deep: kept without them

    def name(self, code: int) -> str:
        return self.names[code]


_GPU_BASE = 10  # encoded family codes: host families 0..3, GPU kinds 10..13, ignored -1
_COLS = {
    "cpu": ("name", "thread", "ts", "dur", "ext", "seq", "fwd_tid", "ordinal"),
    "rt": ("name", "thread", "ts", "dur", "corr", "ext", "ordinal", "kernel"),
    "py": ("name", "thread", "ts", "dur", "ordinal"),
    "ann": ("name", "thread", "ts", "dur", "ordinal"),
    "gpu": ("kind", "name", "thread", "ts", "dur", "corr", "ext", "stream", "device", "ordinal", "grid"),
    "flow": ("is_start", "id", "thread", "ts"),
}
_EMPTY: dict[str, Any] = {}


class EventTablesBuilder:
    """Feed `add(chunk)` with raw event lists, then `finish()`.

    Rows are appended as tuples (one append per event) and turned into numpy columns after every chunk,
    so the raw values die with their chunk. `keep_args(name)` decides (once per distinct name) whether
    a cpu_op's shape fields are kept; identical signatures are stored once (interned by their JSON).
    """

    def __init__(self, keep_args: Callable[[str], bool]) -> None:
        self._keep_args = keep_args
        self._name_ids: dict[Any, int] = {}
        self._names: list[str] = []
        self._keep: list[bool] = []
        self._thread_ids: dict[tuple[Any, Any], int] = {}
        self._cat_cache: dict[Any, int] = {}
        self.rows: dict[str, list[tuple[Any, ...]]] = {k: [] for k in _COLS}
        self._parts: dict[str, _Growing] = {k: _Growing() for k in _COLS}
        self._cpu_done = 0  # cpu rows already moved into `_parts`
        self._sig_ids: dict[bytes, int] = {}
        self.signatures: list[tuple[Any, Any, Any, Any]] = []
        self._sig_rows: list[int] = []  # (cpu row, signature id) of the rows not yet moved into `_sig_parts`
        self._sig_of_row: list[int] = []
        self._sig_parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.process_names: dict[Any, str] = {}
        self.process_labels: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.n = 0
        self._pair_codes = _PairCodes()
        self.bad_ids = [0]  # a counter _columns adds to
        self.deep_args = 0  # ops whose shape arguments nest deeper than MAX_NESTING (kept without them)

    def _name(self, raw: Any) -> int:
        name = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
        i = self._name_ids.get(name)
        if i is None:
            i = len(self._names)
            self._name_ids[name] = i
            self._names.append(name)
            self._keep.append(bool(self._keep_args(name)))
        if raw is not name:
            self._name_ids[raw] = i
        return i

    def _thread(self, key: tuple[Any, Any]) -> int:
        i = self._thread_ids.get(key)
        if i is None:
            i = self._thread_ids[key] = len(self._thread_ids)
        return i

    def _cat(self, cat: Any) -> int:
        r = _family(cat)
        self._cat_cache[cat] = r
        return r

    def decoder(self) -> PieceDecoder:
        """The reader's piece decoder for this builder: typed events (see fast_decode) whose kept shape fields are
        prepared the way `_signature` prepares them."""
        return PieceDecoder(self._keep_args, _prepare_signature, self._pair_codes, CPU)

    def add(self, chunk: Iterable[Any] | FastPiece) -> None:
        if isinstance(chunk, FastPiece):
            self._add_fast(chunk)
            return
        start = self.n
        try:
            self._add(chunk)
        except (AttributeError, TypeError, orjson.JSONEncodeError) as exc:
            at = self.n - 1
            event = chunk[at - start] if isinstance(chunk, list) and 0 <= at - start < len(chunk) else None
            raise TraceError(f"traceEvents[{at}]{_malformed_field(event, exc)} — re-export the trace") from None
        self._flush()

    def _signature(self, args: dict[str, Any]) -> int:
        fields = (
            args.get("Input Dims"),
            args.get("Input type"),
            args.get("Input Strides"),
            args.get("Concrete Inputs"),
        )
        return self._intern(_prepare_signature(fields))

    def _intern(self, sig: PreparedSignature) -> int:
        """The id of a signature (identical ones stored once, numbered in order of first appearance)."""
        if sig.deep:
            self.deep_args += 1
        sid = self._sig_ids.get(sig.key)
        if sid is None:
            sid = self._sig_ids[sig.key] = len(self.signatures)
            self.signatures.append(tuple(_as_tuple(f) for f in sig.fields))  # type: ignore[arg-type]
        return sid

    def _flush(self) -> None:
        """Move the pending row tuples of every family into numpy column chunks."""
        self._cpu_done += len(self.rows["cpu"])
        self._flush_signatures()
        for family, spec in _SPECS.items():
            rows = self.rows[family]
            if not rows:
                continue
            self.rows[family] = []
            cols = dict(zip(_COLS[family], zip(*rows, strict=True), strict=True))
            del rows
            self._parts[family].append(_columns(cols, *spec, bad_ids=self.bad_ids))

    def _add(self, chunk: Iterable[Any]) -> None:
        name_ids, name_miss = self._name_ids, self._name
        thread_ids, thread_miss = self._thread_ids, self._thread
        cat_cache, cat_miss = self._cat_cache, self._cat
        keep = self._keep
        rows = self.rows
        cpu_rows, rt_rows, py_rows, ann_rows, gpu_rows, flow_rows = (
            rows["cpu"],
            rows["rt"],
            rows["py"],
            rows["ann"],
            rows["gpu"],
            rows["flow"],
        )
        sig_rows, sig_of_row, signature, cpu_base = self._sig_rows, self._sig_of_row, self._signature, self._cpu_done
        n = self.n
        try:
            for e in chunk:
                o = n  # this event's index in traceEvents
                n += 1
                ph = e.get("ph")
                if ph == "X":
                    cat = e.get("cat")
                    fam = cat_cache.get(cat)
                    if fam is None:
                        fam = cat_miss(cat)
                    if fam < 0:
                        continue
                    ts = e.get("ts")
                    if ts is None:
                        continue
                    raw = e.get("name")
                    nm = name_ids.get(raw)
                    if nm is None:
                        nm = name_miss(raw)
                    key = (e.get("pid"), e.get("tid"))
                    thr = thread_ids.get(key)
                    if thr is None:
                        thr = thread_miss(key)
                    dur = e.get("dur") or 0.0
                    if fam == PY:
                        py_rows.append((nm, thr, ts, dur, o))
                    elif fam == CPU:
                        args = e.get("args") or _EMPTY
                        cpu_rows.append(
                            (
                                nm,
                                thr,
                                ts,
                                dur,
                                args.get("External id", -1),
                                args.get("Sequence number", -1),
                                args.get("Fwd thread id", -1),
                                o,
                            )
                        )
                        if keep[nm]:
                            sig_rows.append(cpu_base + len(cpu_rows) - 1)
                            sig_of_row.append(signature(args))
                    elif fam == RT:
                        args = e.get("args") or _EMPTY
                        kn = args.get("kernel")
                        kc = -1 if kn is None else (name_ids.get(kn) if kn in name_ids else name_miss(kn))
                        rt_rows.append(
                            (nm, thr, ts, dur, args.get("correlation", -1), args.get("External id", -1), o, kc)
                        )
                    elif fam == ANN:
                        ann_rows.append((nm, thr, ts, dur, o))
                    else:
                        args = e.get("args") or _EMPTY
                        gpu_rows.append(
                            (
                                fam - _GPU_BASE,
                                nm,
                                thr,
                                ts,
                                dur,
                                args.get("correlation", -1),
                                args.get("External id", -1),
                                args.get("stream", -1),
                                args.get("device", -1),
                                o,
                                pack_grid(args.get("grid")),
                            )
                        )
                elif ph == "s" or ph == "f":
                    ts = e.get("ts")
                    if e.get("cat") != "ac2g" or ts is None:
                        continue
                    key = (e.get("pid"), e.get("tid"))
                    thr = thread_ids.get(key)
                    if thr is None:
                        thr = thread_miss(key)
                    flow_rows.append((ph == "s", e.get("id", -1), thr, ts))
                elif ph == "M":
                    self._metadata(e)
        finally:
            self.n = n

    def _add_fast(self, piece: FastPiece) -> None:
        """The typed events of one piece (fast_decode), with the same rows, codes and counters as `_add` gives for
        the same events: name and thread codes are handed out in event order, as `_add` does one event at a time."""
        evs, base, code = piece.events, self.n, piece.codes
        x_at = np.flatnonzero((code >= 0) & (code < _FLOW))  # X events of a family we keep
        flow_at = np.flatnonzero(code == _FLOW)
        x_at, xs, x_ts = _with_times(evs, x_at)
        flow_at, fs, flow_ts = _with_times(evs, flow_at)
        x_code = code[x_at]
        rt_sel = np.flatnonzero(x_code == RT)
        kernels = [(xs[j].args or NO_ARGS).kernel for j in rt_sel.tolist()]
        has_kernel = np.flatnonzero(np.array([k is not None for k in kernels], dtype=bool))
        name_codes, kernel_codes = _encode(
            [
                ([e.name for e in xs], 2 * x_at),
                ([kernels[j] for j in has_kernel.tolist()], 2 * x_at[rt_sel[has_kernel]] + 1),
            ],
            self._name_ids,
            self._name,
        )
        x_threads, flow_threads = _encode_threads(xs, x_at, fs, flow_at, self._thread_ids, self._thread)
        rt_kernel = np.full(len(rt_sel), -1, dtype=np.int64)
        rt_kernel[has_kernel] = kernel_codes
        for family, fam_code in (("cpu", CPU), ("rt", RT), ("py", PY), ("ann", ANN), ("gpu", _GPU_BASE)):
            if fam_code == RT:
                sel = rt_sel
            else:
                sel = np.flatnonzero(x_code == fam_code if fam_code < _GPU_BASE else x_code >= fam_code)
            if not len(sel):
                continue
            picked = sel.tolist()
            sub = [xs[j] for j in picked]
            cols: dict[str, Any] = {
                "name": name_codes[sel],
                "thread": x_threads[sel],
                "ts": [x_ts[j] for j in picked],
                "dur": [e.dur or 0.0 for e in sub],
                "ordinal": base + x_at[sel],
            }
            if family in ("cpu", "rt", "gpu"):
                args = [e.args or NO_ARGS for e in sub]
                cols["ext"] = [a.ext for a in args]
                if family == "cpu":
                    cols["seq"] = [a.seq for a in args]
                    cols["fwd_tid"] = [a.fwd_tid for a in args]
                    self._fast_signatures(piece, x_at[sel])
                else:
                    cols["corr"] = [a.corr for a in args]
                if family == "rt":
                    cols["kernel"] = rt_kernel
                elif family == "gpu":
                    cols["kind"] = x_code[sel] - _GPU_BASE
                    cols["stream"] = [a.stream for a in args]
                    cols["device"] = [a.device for a in args]
                    cols["grid"] = pack_grids([a.grid for a in args])
            self._parts[family].append(_columns({k: cols[k] for k in _COLS[family]}, *_SPECS[family], self.bad_ids))
        if len(flow_at):
            cols = {"is_start": [e.ph == "s" for e in fs], "id": [e.id for e in fs], "thread": flow_threads,
                    "ts": flow_ts}
            self._parts["flow"].append(_columns(cols, *_SPECS["flow"], self.bad_ids))
        for i in np.flatnonzero(code == _META).tolist():
            e = evs[i]
            self._metadata_fields(e.name, e.pid, e.tid, (e.args or NO_ARGS).name, (e.args or NO_ARGS).labels)
        self.n = base + len(evs)

    def _fast_signatures(self, piece: FastPiece, at: np.ndarray) -> None:
        """Shape signatures of this piece's cpu rows at event positions `at` whose names keep their shapes."""
        cpu_base = self._cpu_done
        self._cpu_done += len(at)
        prepared = piece.signatures
        for row, i in enumerate(at.tolist()):
            sig = prepared.get(i)
            if sig is not None:
                self._sig_rows.append(cpu_base + row)
                self._sig_of_row.append(self._intern(sig))
        self._flush_signatures()

    def _flush_signatures(self) -> None:
        if self._sig_rows:
            self._sig_parts.append((np.asarray(self._sig_rows, dtype=np.int64), np.asarray(self._sig_of_row, np.int32)))
            self._sig_rows, self._sig_of_row = [], []

    def _metadata(self, e: dict[str, Any]) -> None:
        a = e.get("args") or {}
        self._metadata_fields(e.get("name"), e.get("pid"), e.get("tid"), a.get("name", ""), a.get("labels", ""))

    def _metadata_fields(self, nm: Any, pid: Any, tid: Any, name: Any, labels: Any) -> None:
        if nm == "process_name":
            self.process_names[pid] = str(name)
        elif nm == "process_labels":
            self.process_labels[pid] = str(labels)
        elif nm == "thread_name":
            self.thread_names[(pid, tid)] = str(name)

    def finish(self) -> TraceEvents:
        self._flush()
        threads = [None] * len(self._thread_ids)
        for key, i in self._thread_ids.items():
            threads[i] = key
        tables = {}
        for family, spec in _SPECS.items():
            grown = self._parts.pop(family).columns()
            tables[family] = Table(grown if grown else _columns({k: () for k in _COLS[family]}, *spec))
        self._flush_signatures()
        parts = self._sig_parts
        row_sigs = (
            RowSignatures(np.concatenate([r for r, _ in parts]), np.concatenate([i for _, i in parts]))
            if parts
            else RowSignatures.empty()
        )
        excluded, example, cpu_sig = _drop_unusable_times(tables, row_sigs, self._names)
        return TraceEvents(
            names=self._names,
            threads=threads,  # type: ignore[arg-type]
            cpu=tables["cpu"],
            rt=tables["rt"],
            py=tables["py"],
            ann=tables["ann"],
            gpu=tables["gpu"],
            flow=tables["flow"],
            cpu_sig=cpu_sig,
            signatures=self.signatures,
            process_names=self.process_names,
            process_labels=self.process_labels,
            thread_names=self.thread_names,
            n_events=self.n,
            excluded=excluded,
            excluded_example=example,
            bad_ids=self.bad_ids[0],
            deep_args=self.deep_args,
        )


_FLOW, _META = 20, 30  # fast-path codes of (ph, cat) pairs beside the families (0..3 host, 10..13 GPU, -1 ignored)


def _family(cat: Any) -> int:
    """The encoded family of an X event's category (host 0..3, GPU 10..13), -1 for the ones we ignore."""
    c = str(cat).lower() if cat is not None else ""
    if c in _HOST_CATS:
        return _HOST_CATS[c]
    if c in _GPU_CATS:
        return _GPU_BASE + _GPU_CATS[c]
    return -1


class _PairCodes(dict[tuple[Any, Any], int]):
    """(ph, cat) -> what `_add` does with such an event: its family, _FLOW, _META, or -1."""

    def __missing__(self, key: tuple[Any, Any]) -> int:
        ph, cat = key
        if ph == "X":
            code = _family(cat)
        elif ph in ("s", "f"):
            code = _FLOW if cat == "ac2g" else -1
        else:
            code = _META if ph == "M" else -1
        self[key] = code
        return code


def _with_times(evs: list[Event], at: np.ndarray) -> tuple[np.ndarray, list[Event], list[float]]:
    """The events at `at` that have a `ts` (`_add` skips the others): their positions, the events, their times."""
    sub = [evs[i] for i in at.tolist()]
    ts = [e.ts for e in sub]
    if None in ts:
        keep = np.array([t is not None for t in ts], dtype=bool)
        at = at[keep]
        sub = [e for e in sub if e.ts is not None]
        ts = [e.ts for e in sub]
    return at, sub, ts  # type: ignore[return-value]


def _encode(
    sources: list[tuple[list[Any], np.ndarray]], table: dict[Any, int], assign: Callable[[Any], int]
) -> list[np.ndarray]:
    """Codes of the keys of each source (keys, their positions in event order): known keys looked up, new ones
    assigned by `assign` in position order, so every code is the one a one-event-at-a-time pass would give."""
    out: list[np.ndarray] = []
    misses: list[tuple[int, int, int]] = []
    get = table.get
    for s, (keys, pos) in enumerate(sources):
        codes = np.array([get(k, -1) for k in keys], dtype=np.int64)
        out.append(codes)
        misses.extend((int(pos[j]), s, j) for j in np.flatnonzero(codes < 0).tolist())
    misses.sort()
    for _, s, j in misses:
        key = sources[s][0][j]
        got = get(key)
        out[s][j] = assign(key) if got is None else got
    return out


def _encode_threads(
    xs: list[Event], x_at: np.ndarray, fs: list[Event], flow_at: np.ndarray, table: dict[Any, int],
    assign: Callable[[Any], int],
) -> list[np.ndarray]:
    """Thread codes of the X events and the flow events, as `_encode` gives for their (pid, tid) keys; integer pids
    and tids (Kineto's) are grouped by numpy, so only each distinct pair of a piece is looked up."""
    evs = xs + fs
    order = np.argsort(np.concatenate([x_at, flow_at]), kind="stable")
    pids = np.array([evs[i].pid for i in order.tolist()])
    tids = np.array([evs[i].tid for i in order.tolist()])
    if pids.dtype != np.int64 or tids.dtype != np.int64 or not len(evs):  # str or None ids: one key at a time
        return _encode([([(e.pid, e.tid) for e in xs], x_at), ([(e.pid, e.tid) for e in fs], flow_at)], table, assign)
    _, pinv = np.unique(pids, return_inverse=True)
    tu, tinv = np.unique(tids, return_inverse=True)
    _, first, inv = np.unique(pinv * len(tu) + tinv, return_index=True, return_inverse=True)
    pair_codes = np.empty(len(first), dtype=np.int64)
    for k in np.argsort(first, kind="stable").tolist():  # distinct pairs in order of first appearance
        i = int(first[k])
        key = (int(pids[i]), int(tids[i]))
        got = table.get(key)
        pair_codes[k] = assign(key) if got is None else got
    codes = np.empty(len(evs), dtype=np.int64)
    codes[order] = pair_codes[inv.reshape(-1)]
    return [codes[: len(xs)], codes[len(xs) :]]


def _prepare_signature(fields: Signature) -> PreparedSignature:
    """Shape fields as `_signature` interns them: too deep -> Nones (everything downstream recurses once per level)."""
    deep = not _nesting_within(fields, MAX_NESTING)
    if deep:
        fields = (None, None, None, None)
    return PreparedSignature(orjson.dumps(fields), fields, deep)


# per family: (int columns, id columns, bool columns); the rest are float
# codes into `names` / `threads` and the GPU kind fit narrower integers (the limit on a trace's size keeps a code below
# 2**31); every other integer column is int64
_NARROW: dict[str, type[np.integer[Any]]] = {"name": np.int32, "thread": np.int32, "kernel": np.int32, "kind": np.int8}
_SPECS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "cpu": (("name", "thread", "ordinal"), ("ext", "seq", "fwd_tid"), ()),
    "rt": (("name", "thread", "ordinal", "kernel"), ("corr", "ext"), ()),
    "py": (("name", "thread", "ordinal"), (), ()),
    "ann": (("name", "thread", "ordinal"), (), ()),
    "gpu": (("kind", "name", "thread", "ordinal", "grid"), ("corr", "ext", "stream", "device"), ()),
    "flow": (("thread",), ("id",), ("is_start",)),
}


_SCALAR_FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id")


def _malformed_field(event: Any, exc: Exception) -> str:
    """What is wrong with the event that stopped the read, naming its field where one is the cause."""
    if not isinstance(event, dict):
        return f" is not an event object ({type(event).__name__})" if event is not None else f" is malformed ({exc})"
    for key in _SCALAR_FIELDS:
        value = event.get(key)
        if isinstance(value, dict | list):
            kind = "an object" if isinstance(value, dict) else "an array"
            return f".{key} is {kind}, expected a string or a number"
    if "args" in event and not isinstance(event["args"], dict | type(None)):
        return f".args is {type(event['args']).__name__}, expected an object"
    return f" is malformed ({exc})"


def _nesting_within(values: Any, limit: int) -> bool:
    """Whether no list or dict inside `values` (a tuple of arg fields) lies more than `limit` levels deep;
    iterative, and it stops at the first container too deep."""
    stack = [(v, 1) for v in values if isinstance(v, list | dict)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return False
        items = value.values() if isinstance(value, dict) else value
        stack.extend((x, depth + 1) for x in items if isinstance(x, list | dict))
    return True


def _as_tuple(x: Any) -> Any:
    """A shape field as the CSV writes it: lists -> tuples (recursively); a scalar -> a 1-tuple."""
    if x is None:
        return None
    if type(x) is list:
        return tuple([_as_tuple(v) if type(v) is list else v for v in x])
    return (x,)


def _columns(
    cols: dict[str, Any],
    ints: tuple[str, ...] = (),
    ids: tuple[str, ...] = (),
    bools: tuple[str, ...] = (),
    bad_ids: list[int] | None = None,
) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for k, v in cols.items():
        if k in ints:
            out[k] = np.asarray(v, dtype=_NARROW.get(k, np.int64))
        elif k in ids:
            out[k] = _id_array(v, bad_ids)
        elif k in bools:
            out[k] = np.asarray(v, dtype=bool)
        else:
            out[k] = _float_array(v)
    return out


def _float_array(v: Any) -> np.ndarray:
    try:
        arr = np.asarray(v, dtype=np.float64)
        if arr.ndim == 1:  # equal-length lists as times would make a 2-D array
            return arr
    except (TypeError, ValueError, OverflowError):
        pass
    return np.asarray([_to_float(x) for x in v], dtype=np.float64)


def _to_float(x: Any) -> float:
    """A time as float; NaN when it is not a number (the event is then dropped with a warning, never read as 0)."""
    if isinstance(x, bool):
        return math.nan
    try:
        return float(x)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _id_array(v: Any, bad_ids: list[int] | None = None) -> np.ndarray:
    """Integer ids; -1 where missing, not an integer, or beyond int64 (a 1e300 or 2**64 id links nothing; those
    present but unusable are counted in `bad_ids[0]`)."""
    try:
        arr = np.asarray(v, dtype=np.int64)
        if arr.ndim == 1:  # equal-length lists as ids would make a 2-D array
            return arr
    except (TypeError, ValueError, OverflowError):
        pass
    ids = [_to_id(x) for x in v]
    if bad_ids is not None:
        bad_ids[0] += sum(1 for x, i in zip(v, ids, strict=True) if i == -1 and x is not None and x != -1)
    return np.asarray(ids, dtype=np.int64)


_SPREAD_FLOOR_US = 1e6  # 1 s: the least spread the trace's time stamps are judged against
_OUTLIER_SPREADS = 1000.0  # an event this many spreads from the trace's median time lies outside the trace
_MAX_TIME_US = float(2**53)  # beyond it float64 no longer holds every µs: no real clock is there


def _drop_unusable_times(
    tables: dict[str, Table], cpu_sig: RowSignatures, names: list[str]
) -> tuple[int, str | None, RowSignatures]:
    """Drop the events whose time cannot be used: ts or dur not a finite number, a negative dur, or a start or
    end far outside the trace (beyond 2^53 µs, or more than _OUTLIER_SPREADS times the central 98 % spread of
    all the trace's time stamps, at least 1 s, from their median). One kernel at ts=1e30 would otherwise push
    every interval computation into float64 rounding and zero every kernel time. Returns how many went, one
    example, and the cpu signature map renumbered for the kept cpu rows."""
    stamps = [t["ts"][np.abs(t["ts"]) <= _MAX_TIME_US] for t in tables.values() if len(t)]  # finite, and not far
    every = np.concatenate(stamps) if stamps else np.zeros(0)
    del stamps
    if len(every):
        lo, mid, hi = np.quantile(every, [0.01, 0.5, 0.99], overwrite_input=True)  # the same values, no copy
        reach = min(_OUTLIER_SPREADS * max(float(hi - lo), _SPREAD_FLOOR_US), _MAX_TIME_US)
    else:
        mid, reach = 0.0, _MAX_TIME_US
    del every
    excluded = 0
    example: str | None = None
    for family, table in tables.items():
        if not len(table):
            continue
        ts = table["ts"]
        dur = table.cols.get("dur")
        with np.errstate(invalid="ignore", over="ignore"):
            end = ts if dur is None else ts + np.where(np.isfinite(dur), dur, 0.0)
            usable = np.isfinite(ts) if dur is None else np.isfinite(ts) & np.isfinite(dur) & (dur >= 0)
            usable &= (np.abs(ts - mid) <= reach) & (np.abs(end - mid) <= reach)
        if usable.all():
            continue
        bad = np.flatnonzero(~usable)
        excluded += len(bad)
        if example is None:
            i = int(bad[0])
            what = names[int(table["name"][i])] if "name" in table.cols else "flow arrow"
            detail = f"ts={float(ts[i])!r}" + ("" if dur is None else f", dur={float(dur[i])!r}")
            ordinal = f"traceEvents[{int(table['ordinal'][i])}] " if "ordinal" in table.cols else ""
            example = f"{ordinal}{family} event {what[:60]!r}: {detail}"
        tables[family] = Table({k: v[usable] for k, v in table.cols.items()})
        if family == "cpu":
            cpu_sig = cpu_sig.kept(usable)
    return excluded, example, cpu_sig


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _to_id(x: Any) -> int:
    if isinstance(x, bool) or x is None:
        return -1
    try:
        i = int(x)
    except (TypeError, ValueError, OverflowError):
        return -1
    return i if _INT64_MIN <= i <= _INT64_MAX else -1
