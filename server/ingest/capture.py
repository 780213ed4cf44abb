"""A serving profiler's capture folder: the shapes of graph-replayed attention calls.

vLLM and SGLang save, beside the trace of a step that replays CUDA/HIP graphs, the traces of the runs that
captured those graphs (docs/formats.md, serving-traces):

    <run>/graph_execution.json.gz                    the replay (kernel times, no shapes)
    <run>/capture_traces/execution_details.json      [{"file": "bs_32_rank0.json.gz", "batch_size": 32, "mode": "FULL"}]
    <run>/capture_traces/<capture trace>.json.gz     the captured calls, with their shapes and dtypes

A replayed graph launch is matched with the capture of its batch size (the step's `execute_<tokens>_...` token count,
else the smallest captured batch size that holds the step's tokens), then layer by layer: the k-th attention call
replayed by the launch takes the shapes of the k-th attention call captured into that graph (their kernel names are
compared where the capture's runtime events name them, as ROCm's do). Times stay the replay's; token counts come from
the replay's step annotation. A PIECEWISE capture runs attention outside its graphs: the replay then has the shapes
itself and the folder adds nothing (a warning says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sdpa_analyzer.perf_models.devices import match_device_properties
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ingest.attention import find_fused_calls
from sdpa_analyzer.server.ingest.calls import Call
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.ingest.events import ANN
from sdpa_analyzer.server.ingest.load import load_trace
from sdpa_analyzer.server.ingest.serving import attach_side_ops, mark_captured, match_replays
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots

DETAILS = "execution_details.json"
CAPTURE_SUBDIR = "capture_traces"  # where a serving run's folder keeps its capture traces


@dataclass
class CaptureEntry:
    file: str
    batch_size: int
    mode: str
    path: Path
    roots: DataRoots = field(default=UNRESTRICTED, repr=False)
    _regions: list[list[Call]] | None = field(default=None, repr=False)
    _ctx: TraceContext | None = field(default=None, repr=False)

    def regions(self) -> list[list[Call]]:
        """The attention calls captured in this trace, by capture region (loaded on first use)."""
        if self._regions is None:
            self._ctx = load_trace(self.path, roots=self.roots, require_gpu=False)
            fused = find_fused_calls(self._ctx)
            attach_side_ops(self._ctx, fused)
            self._regions = mark_captured(self._ctx, fused)
        return self._regions

    @property
    def label(self) -> str:
        return f"{self.file} (batch size {self.batch_size}, mode {self.mode})"


@dataclass
class CaptureSet:
    folder: Path
    entries: list[CaptureEntry]

    def apply(self, ctx: TraceContext, replays: dict[int, list[Call]]) -> list[str]:
        """Adopt the captured shapes for every graph launch of `ctx` that has a capture; returns warnings."""
        modes = ", ".join(sorted({e.mode for e in self.entries}))
        if not replays:
            return [
                f"capture_dir {self.folder}: the trace replays no attention kernel from a graph (capture modes: "
                f"{modes}); nothing to take from the capture traces (PIECEWISE graphs run attention outside the "
                "graphs, where its op records its own shapes)"
            ]
        warnings: list[str] = []
        steps = _launch_steps(ctx, list(replays))
        matched = 0
        for launch, replay in replays.items():
            tokens = steps.get(launch)
            entry = self._entry_for(tokens)
            if entry is None:
                sizes = sorted(e.batch_size for e in self.entries)
                warnings.append(
                    f"capture_dir {self.folder}: no capture for a replay of {tokens or 'unknown'} tokens (captured "
                    f"batch sizes {sizes}): its {len(replay)} attention calls keep no shapes"
                )
                continue
            _check_device(ctx, entry, warnings)
            used, warns = match_replays(ctx, {launch: replay}, entry.regions(), entry.label)
            warnings.extend(warns)
            matched += bool(used)
        if matched:
            warnings.append(
                f"capture_dir {self.folder}: shapes of {matched} of {len(replays)} graph replays taken from the "
                "capture traces, times from the replay, token counts from the replay's step annotation"
            )
        return warnings

    def _entry_for(self, tokens: tuple[int | None, int | None] | None) -> CaptureEntry | None:
        if not self.entries:
            return None
        if tokens is None:
            return self.entries[0] if len(self.entries) == 1 else None
        padded, total = tokens
        exact = [e for e in self.entries if padded is not None and e.batch_size == padded]
        if exact:
            return exact[0]
        need = total if total is not None else padded
        if need is None:
            return None
        fits = sorted((e for e in self.entries if e.batch_size >= need), key=lambda e: e.batch_size)
        return fits[0] if fits else None


def _launch_steps(ctx: TraceContext, launches: list[int]) -> dict[int, tuple[int | None, int | None]]:
    """(padded token count, Σ q) of the step annotation around each graph launch."""
    from sdpa_analyzer.server.ingest.paged import parse_step_annotation

    is_step = ctx.name_mask(lambda n: parse_step_annotation(n) is not None, ANN)
    if not is_step.any():
        return {}
    nma = ctx.forest.nearest(is_step)
    out: dict[int, tuple[int | None, int | None]] = {}
    for launch in launches:
        a = int(nma[launch]) if launch >= 0 else -1
        if a < 0:
            continue
        p = parse_step_annotation(ctx.node_name(a)) or {}
        total = p.get("c_sq", 0) + p.get("g_sq", 0)
        out[launch] = (p.get("step_tokens"), total or None)
    return out


def _check_device(ctx: TraceContext, entry: CaptureEntry, warnings: list[str]) -> None:
    entry.regions()
    cap = entry._ctx
    if cap is None:
        return
    a, b = _gpu_key(ctx), _gpu_key(cap)
    if a and b and a != b:
        msg = f"capture trace {entry.file} was recorded on {b}, the replay on {a}: not the same run?"
        if msg not in warnings:
            warnings.append(msg)


def _gpu_key(ctx: TraceContext) -> str | None:
    props = ctx.header.get("deviceProperties")
    first = next((p for p in props if isinstance(p, dict)), None) if isinstance(props, list) else None
    gpu = match_device_properties(first) if first is not None else None  # unnamed AMD devices included
    return gpu.key if gpu is not None else None


def load_capture_dir(folder: Path, roots: DataRoots = UNRESTRICTED) -> CaptureSet:
    """Read `<folder>/execution_details.json` and check every capture trace it names (one-line errors); every file
    is opened through `roots`, and a capture trace must lie in the folder itself."""
    folder = Path(folder)
    if not roots.is_dir(folder, what="capture_dir"):
        raise TraceError(
            f"capture_dir {folder} is not a folder — pass the serving profiler's capture_traces/ folder "
            f"(it holds {DETAILS} and the capture traces)"
        )
    details = folder / DETAILS
    if not roots.is_file(details, what="capture details") and roots.is_file(
        folder / CAPTURE_SUBDIR / DETAILS, what="capture details"
    ):  # the serving run's folder, which holds capture_traces/: take that
        folder, details = folder / CAPTURE_SUBDIR, folder / CAPTURE_SUBDIR / DETAILS
    if not roots.is_file(details, what="capture details"):
        raise TraceError(
            f"{details}: not found — capture_dir must be the serving profiler's capture_traces/ folder, which holds "
            f"{DETAILS} and the capture traces"
        )
    try:
        raw: Any = orjson.loads(roots.read_bytes(details, what="capture details"))
    except orjson.JSONDecodeError as exc:
        raise TraceError(f"{details}: not readable JSON ({exc.msg}) — rewrite it as a list of "
                         '{"file", "batch_size", "mode"} objects') from None
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise TraceError(f'{details}: expected a non-empty list of {{"file", "batch_size", "mode"}} objects')
    entries = []
    root = roots.resolve(folder, what="capture_dir")
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise TraceError(
                f"{details}: entry {i} is {type(item).__name__}: expected an object with file, batch_size, mode"
            )
        file, bs, mode = item.get("file"), item.get("batch_size"), item.get("mode", "FULL")
        if not isinstance(file, str) or not file.strip():
            raise TraceError(f"{details}: entry {i} field 'file' is {file!r}: expected the capture trace's file name")
        if isinstance(bs, bool) or not isinstance(bs, int) or bs <= 0:
            raise TraceError(f"{details}: entry {i} field 'batch_size' is {bs!r}: expected a positive integer")
        if not isinstance(mode, str):
            raise TraceError(f"{details}: entry {i} field 'mode' is {mode!r}: expected a string such as FULL")
        what = f"capture trace ({DETAILS} entry {i} 'file')"
        try:
            real = roots.resolve_inside(root, file, what=what)
        except InputError as exc:  # outside the roots (or a link out of them), a line break, too long
            raise TraceError(str(exc)) from None
        if not real.is_relative_to(root):
            raise TraceError(
                f"{details}: entry {i} field 'file' {file!r} leaves the capture folder — name a file in it"
            )
        if not roots.is_file(real, what=what):
            raise TraceError(f"{details}: entry {i} field 'file': {real} not found — put the capture trace beside it")
        entries.append(CaptureEntry(file, bs, mode.upper(), real, roots))
    return CaptureSet(root, entries)


def sibling_capture_dir(trace: Path, roots: DataRoots = UNRESTRICTED) -> Path | None:
    """The capture_traces/ folder beside a replay trace, when there is one (only looked at, never read)."""
    cand = Path(trace).parent / CAPTURE_SUBDIR
    try:
        return cand if roots.is_file(cand / DETAILS, what="capture details") else None
    except InputError:  # a link out of the roots: not ours to mention
        return None
