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
- gpu  : `kernel`, `gpu_memcpy`, `gpu_memset`, `gpu_user_annotation`
- flow : `ac2g` flow start/finish events (launch -> kernel arrows)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from server.ingest.errors import TraceError

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
    cpu_sig: dict[int, int]  # cpu row -> index into `signatures` (only the op families we read shapes of)
    signatures: list[tuple[Any, Any, Any, Any]]  # distinct (Input Dims, Input type, Input Strides, Concrete)
    process_names: dict[Any, str]
    process_labels: dict[Any, str]
    thread_names: dict[tuple[Any, Any], str]
    n_events: int

    def name(self, code: int) -> str:
        return self.names[code]


_GPU_BASE = 10  # encoded family codes: host families 0..3, GPU kinds 10..13, ignored -1
_COLS = {
    "cpu": ("name", "thread", "ts", "dur", "ext", "seq", "fwd_tid", "ordinal"),
    "rt": ("name", "thread", "ts", "dur", "corr", "ext", "ordinal", "kernel"),
    "py": ("name", "thread", "ts", "dur", "ordinal"),
    "ann": ("name", "thread", "ts", "dur", "ordinal"),
    "gpu": ("kind", "name", "thread", "ts", "dur", "corr", "ext", "stream", "device", "ordinal"),
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
        self._parts: dict[str, list[dict[str, np.ndarray]]] = {k: [] for k in _COLS}
        self._cpu_done = 0  # cpu rows already moved into `_parts`
        self._sig_ids: dict[bytes, int] = {}
        self.signatures: list[tuple[Any, Any, Any, Any]] = []
        self.cpu_sig: dict[int, int] = {}
        self.process_names: dict[Any, str] = {}
        self.process_labels: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.n = 0

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
        c = str(cat).lower() if cat is not None else ""
        if c in _HOST_CATS:
            r = _HOST_CATS[c]
        elif c in _GPU_CATS:
            r = _GPU_BASE + _GPU_CATS[c]
        else:
            r = -1
        self._cat_cache[cat] = r
        return r

    def add(self, chunk: Iterable[Any]) -> None:
        try:
            self._add(chunk)
        except (AttributeError, TypeError, orjson.JSONEncodeError) as exc:
            raise TraceError(f"traceEvents[{self.n - 1}] is malformed ({exc}) — re-export the trace") from None
        self._flush()

    def _signature(self, args: dict[str, Any]) -> int:
        fields = (
            args.get("Input Dims"),
            args.get("Input type"),
            args.get("Input Strides"),
            args.get("Concrete Inputs"),
        )
        key = orjson.dumps(fields)
        sid = self._sig_ids.get(key)
        if sid is None:
            sid = self._sig_ids[key] = len(self.signatures)
            self.signatures.append(tuple(_as_tuple(f) for f in fields))  # type: ignore[arg-type]
        return sid

    def _flush(self) -> None:
        """Move the pending row tuples of every family into numpy column chunks."""
        self._cpu_done += len(self.rows["cpu"])
        for family, spec in _SPECS.items():
            rows = self.rows[family]
            if not rows:
                continue
            self.rows[family] = []
            cols = dict(zip(_COLS[family], zip(*rows, strict=True), strict=True))
            del rows
            self._parts[family].append(_columns(cols, *spec))

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
        cpu_sig, signature, cpu_base = self.cpu_sig, self._signature, self._cpu_done
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
                            cpu_sig[cpu_base + len(cpu_rows) - 1] = signature(args)
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

    def _metadata(self, e: dict[str, Any]) -> None:
        nm = e.get("name")
        a = e.get("args") or {}
        if nm == "process_name":
            self.process_names[e.get("pid")] = str(a.get("name", ""))
        elif nm == "process_labels":
            self.process_labels[e.get("pid")] = str(a.get("labels", ""))
        elif nm == "thread_name":
            self.thread_names[(e.get("pid"), e.get("tid"))] = str(a.get("name", ""))

    def finish(self) -> TraceEvents:
        self._flush()
        threads = [None] * len(self._thread_ids)
        for key, i in self._thread_ids.items():
            threads[i] = key
        tables = {}
        for family, spec in _SPECS.items():
            parts = self._parts[family]
            self._parts[family] = []
            if not parts:
                tables[family] = Table(_columns({k: () for k in _COLS[family]}, *spec))
            else:
                tables[family] = Table({k: np.concatenate([p[k] for p in parts]) for k in _COLS[family]})
        return TraceEvents(
            names=self._names,
            threads=threads,  # type: ignore[arg-type]
            cpu=tables["cpu"],
            rt=tables["rt"],
            py=tables["py"],
            ann=tables["ann"],
            gpu=tables["gpu"],
            flow=tables["flow"],
            cpu_sig=self.cpu_sig,
            signatures=self.signatures,
            process_names=self.process_names,
            process_labels=self.process_labels,
            thread_names=self.thread_names,
            n_events=self.n,
        )


# per family: (int columns, id columns, bool columns); the rest are float
_SPECS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "cpu": (("name", "thread", "ordinal"), ("ext", "seq", "fwd_tid"), ()),
    "rt": (("name", "thread", "ordinal", "kernel"), ("corr", "ext"), ()),
    "py": (("name", "thread", "ordinal"), (), ()),
    "ann": (("name", "thread", "ordinal"), (), ()),
    "gpu": (("kind", "name", "thread", "ordinal"), ("corr", "ext", "stream", "device"), ()),
    "flow": (("thread",), ("id",), ("is_start",)),
}


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
) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for k, v in cols.items():
        if k in ints:
            out[k] = np.asarray(v, dtype=np.int64)
        elif k in ids:
            out[k] = _id_array(v)
        elif k in bools:
            out[k] = np.asarray(v, dtype=bool)
        else:
            out[k] = _float_array(v)
    return out


def _float_array(v: Any) -> np.ndarray:
    try:
        return np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        return np.asarray([_to_float(x) for x in v], dtype=np.float64)


def _to_float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return 0.0


def _id_array(v: Any) -> np.ndarray:
    """Integer ids; -1 where missing or not an integer."""
    try:
        return np.asarray(v, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.asarray([_to_id(x) for x in v], dtype=np.int64)


def _to_id(x: Any) -> int:
    if isinstance(x, bool) or x is None:
        return -1
    try:
        return int(x)
    except (TypeError, ValueError, OverflowError):
        return -1
