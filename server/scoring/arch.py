"""Which GPU peaks score a category: caller's arch > GPU named in the trace > metadata peaks.

Reading the GPU name from a trace does not parse the trace: Kineto writes `deviceProperties` either at
the start or at the very end, so the decompressed text is scanned in chunks for the key and the first
`"name"` after it.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from perf_models.errors import PerfModelError, UnknownArchError
from perf_models.hardware import GpuSpec, get_gpu, gpu_from_arch_dict, list_gpus, match_device_name
from server.errors import InputError, PathOutsideRootsError, shorten_message, shorten_middle
from server.roots import UNRESTRICTED, DataRoots

_DEVICE_NAME_RE = re.compile(rb'"deviceProperties"\s*:\s*\[\s*\{[^\]]*?"name"\s*:\s*"([^"]{1,200})"', re.S)
_CHUNK = 1 << 20


@dataclass
class ResolvedArch:
    gpu: GpuSpec
    source: str  # 'argument' | 'arch_json' | 'trace' | 'metadata'
    trace_gpu_name: str | None = None
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        bw, bw_kind = self.gpu.peak_tbs()
        return f"{self.gpu.name} ({self.gpu.key}) from {self.source}; HBM {bw:g} TB/s ({bw_kind})"


def known_arch_names() -> list[str]:
    return [g.key for g in list_gpus()]


@lru_cache(maxsize=64)
def _scan_device_name(path: str, mtime_ns: int, size: int, roots: DataRoots) -> str | None:
    tail = b""
    try:
        with roots.open_read(path, what="trace_path") as raw:
            fh: Any = gzip.GzipFile(fileobj=raw, mode="rb") if raw.read(2) == b"\x1f\x8b" else raw
            raw.seek(0)
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                buf = tail + chunk
                m = _DEVICE_NAME_RE.search(buf)
                if m:
                    return m.group(1).decode("utf-8", "replace")
                tail = buf[-4096:]
    except (OSError, EOFError, zlib.error, InputError):
        return None
    return None


def device_name_from_trace(path: Path, roots: DataRoots = UNRESTRICTED) -> str | None:
    """The first GPU's `deviceProperties` name, or None when the trace has none (or cannot be read)."""
    try:
        st = roots.stat(path, what="trace_path")
    except (OSError, InputError):
        return None
    if st is None:
        return None
    return _scan_device_name(str(path), st.st_mtime_ns, st.st_size, roots)


def gpu_by_name_or_file(arch: str, roots: DataRoots) -> tuple[GpuSpec, str]:
    """An explicit arch: a known GPU name, or a path to an arch JSON file under the data roots."""
    if arch.lower().endswith(".json"):
        path = roots.resolve(arch, what="arch file")
        try:
            data: Any = orjson.loads(roots.read_bytes(path, what="arch file"))
        except FileNotFoundError:
            raise InputError(f"arch file not found: {path}") from None
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{path}: arch file is not valid JSON ({exc.msg}); fix the file") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: arch file must hold a JSON object with mem_bw_gbps and max_achievable_tflops")
        try:
            return gpu_from_arch_dict(data, name=data.get("name") or path.stem), "arch_json"
        except PerfModelError as exc:
            raise InputError(f"{path}: {exc}") from None
    try:
        return get_gpu(arch), "argument"
    except UnknownArchError as exc:
        raise InputError(str(exc)) from None


def resolve_arch(arch: str | None, metadata: dict[str, Any], output_dir: Path, roots: DataRoots) -> ResolvedArch:
    warnings: list[str] = []
    trace_name: str | None = None
    trace_gpu: GpuSpec | None = None
    tp = metadata.get("trace_path") if isinstance(metadata, dict) else None
    if isinstance(tp, str) and tp:
        # trace_path is written relative to the analysis folder (or absolute); an unusable one (outside the
        # roots, too long, a line break) only costs the trace's GPU name: never an error, the arch may be given
        try:
            trace_file = roots.resolve_inside(output_dir, tp, what="metadata trace_path")
            if not roots.is_file(trace_file, what="metadata trace_path"):
                trace_file = None
        except PathOutsideRootsError:
            trace_file = None
            warnings.append(
                f"metadata trace_path {shorten_middle(tp, 60)!r} is outside the data roots (or links out of them): "
                "not read; the GPU comes from arch= or the metadata"
            )
        except (InputError, OSError) as exc:
            trace_file = None
            warnings.append(shorten_message(f"metadata trace_path not read: {exc}", 200))
        if trace_file is not None:
            trace_name = device_name_from_trace(trace_file, roots)
            if trace_name:
                trace_gpu = match_device_name(trace_name)
                if trace_gpu is None:
                    warnings.append(f"the trace's GPU {trace_name!r} is not in the GPU table; pass arch=")
    meta_platform = metadata.get("platform") if isinstance(metadata, dict) else None
    if meta_platform is not None and not isinstance(meta_platform, str):  # str() of a hostile nest recurses
        warnings.append(f"metadata platform is a {type(meta_platform).__name__}, not a GPU name: ignored")
        meta_platform = None

    if arch:
        gpu, source = gpu_by_name_or_file(arch, roots)
        if trace_gpu is not None and trace_gpu.key != gpu.key:
            warnings.append(f"arch {gpu.key} was requested; the trace was recorded on {trace_name}")
        return ResolvedArch(gpu, source, trace_name, warnings)
    if trace_gpu is not None:
        if meta_platform and not _same_gpu(str(meta_platform), trace_gpu):
            warnings.append(
                f"metadata platform {meta_platform!r} disagrees with the trace's GPU {trace_name!r}: "
                f"scoring against {trace_gpu.key} (the trace's GPU)"
            )
        return ResolvedArch(trace_gpu, "trace", trace_name, warnings)
    if meta_platform or metadata.get("max_achievable_tflops"):
        if metadata.get("max_achievable_tflops") and (metadata.get("peak_hbm_bw_tbs") or metadata.get("mem_bw_gbps")):
            try:
                gpu = gpu_from_arch_dict(metadata, name=str(meta_platform or "metadata"))
                return ResolvedArch(gpu, "metadata", trace_name, warnings)
            except PerfModelError as exc:
                warnings.append(f"metadata peaks unusable ({exc})")
        if meta_platform:
            try:
                return ResolvedArch(get_gpu(str(meta_platform)), "metadata", trace_name, warnings)
            except UnknownArchError:
                pass
    raise InputError(
        f"{output_dir}: cannot tell which GPU scored this trace (no reachable trace_path, no metadata peaks) — "
        f"pass arch= one of {', '.join(known_arch_names())} or an arch JSON file"
    )


def _same_gpu(platform: str, gpu: GpuSpec) -> bool:
    try:
        return get_gpu(platform).key == gpu.key
    except UnknownArchError:
        return False
