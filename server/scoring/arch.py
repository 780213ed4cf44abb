"""Which GPU scores a category: the caller's arch > the GPU the trace names > the metadata's platform or peaks.

The trace's GPU is read from its `deviceProperties`: name, memory size, SM/CU count and architecture pick the part
(`perf_models.devices`; an unnamed device — vLLM writes `""` on ROCm — by its properties alone; a name the table does
not know, or one its properties contradict, by the parts its properties fit when they all have the same roofs, said in
a warning), and a device no part fits is said with its candidates, never replaced by a part with other roofs. When
the trace cannot be used (no trace_path, outside the data roots, missing, no device entry, a GPU no part fits) the
result says why. The kernel names are a second
witness: an NVIDIA-only kernel name on an AMD GPU (or the reverse) is a contradiction. With an explicit arch or the
trace's own GPU it is a warning; when only the metadata names the GPU, the category is not scored, since every verdict
would be measured against the wrong roof.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sdpa_analyzer.perf_models.devices import identify_device
from sdpa_analyzer.perf_models.errors import PerfModelError, UnknownArchError
from sdpa_analyzer.perf_models.hardware import GpuSpec, get_gpu, gpu_from_arch_dict, known_keys
from sdpa_analyzer.perf_models.kernels import kernel_vendor
from sdpa_analyzer.server.errors import InputError, PathOutsideRootsError, shorten_message, shorten_middle
from sdpa_analyzer.server.roots import CONFIG_FILE_MAX_BYTES, DataRoots
from sdpa_analyzer.server.scoring.device import device_properties

SOURCES = ("argument", "arch_json", "trace", "metadata")
_VENDOR_WORDS = {"nvidia": "NVIDIA", "amd": "AMD"}


@dataclass
class ResolvedArch:
    gpu: GpuSpec
    source: str  # 'argument' | 'arch_json' | 'trace' | 'metadata'
    trace_gpu_name: str | None = None
    warnings: list[str] = field(default_factory=list)
    trace_note: str | None = None  # why the trace's GPU was not used (None when it was, or was not needed)

    def describe(self) -> str:
        """`trace (deviceProperties: NVIDIA H100 80GB HBM3)`, `metadata (trace_path is outside the data roots)`."""
        if self.source == "trace":
            return f"trace (deviceProperties: {self.trace_gpu_name})"
        if self.source == "metadata" and self.trace_note:
            return f"metadata ({self.trace_note})"
        return self.source


@dataclass(frozen=True)
class TraceGpu:
    gpu: GpuSpec | None
    label: str | None  # the device's name, or what its properties say when unnamed
    note: str | None  # why there is no GPU (None when there is one)
    warning: str | None = None  # said to the caller too: a trace_path that cannot be used as it stands
    refused: bool = False  # the trace's device was read and no part fits it: a platform naming a part is a guess


def known_arch_names() -> list[str]:
    return known_keys()


def gpu_by_name_or_file(arch: str, roots: DataRoots) -> tuple[GpuSpec, str]:
    """An explicit arch: a known GPU name, or a path to an arch JSON file under the data roots."""
    if arch.lower().endswith(".json"):
        return read_arch_file(arch, roots)[1], "arch_json"
    try:
        return get_gpu(arch), "argument"
    except UnknownArchError as exc:
        raise InputError(str(exc)) from None


def read_arch_file(arch: str, roots: DataRoots) -> tuple[dict[str, Any], GpuSpec]:
    """An arch JSON file read through the data roots: its content (plain data, e.g. for a rank worker) and the
    GPU it describes (checked: every bad field is one InputError naming the file)."""
    path = roots.resolve(arch, what="arch file")
    try:
        data: Any = orjson.loads(
            roots.read_bytes(path, what="arch file", limit=CONFIG_FILE_MAX_BYTES, fix="pass a GPU's arch JSON")
        )
    except FileNotFoundError:
        raise InputError(f"arch file not found: {path}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: arch file is not valid JSON ({exc.msg}); fix the file") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: arch file must hold a JSON object with mem_bw_gbps and max_achievable_tflops")
    try:
        return data, gpu_from_arch_dict(data, name=data.get("name") or path.stem)
    except PerfModelError as exc:
        raise InputError(f"{path}: {exc}") from None


def trace_gpu(metadata: dict[str, Any], output_dir: Path, roots: DataRoots) -> TraceGpu:
    """The GPU of the trace the metadata names, or why it cannot be had."""
    tp = metadata.get("trace_path") if isinstance(metadata, dict) else None
    if not isinstance(tp, str) or not tp.strip():
        return TraceGpu(None, None, "the metadata names no trace_path")
    # trace_path is written relative to the analysis folder (or absolute); an unusable one (outside the roots,
    # too long, a line break) only costs the trace's GPU: never an error, the arch may be given
    try:
        trace_file = roots.resolve_inside(output_dir, tp, what="metadata trace_path")
        present = roots.is_file(trace_file, what="metadata trace_path")
    except PathOutsideRootsError:
        return TraceGpu(
            None,
            None,
            "trace_path is outside the data roots",
            f"metadata trace_path {shorten_middle(tp, 60)!r} is outside the data roots (or links out of them): "
            "not read; the GPU comes from arch= or the metadata",
        )
    except (InputError, OSError) as exc:
        return TraceGpu(
            None, None, "trace_path is not a usable path", shorten_message(f"metadata trace_path not read: {exc}", 200)
        )
    if not present:
        return TraceGpu(None, None, "the trace file named by trace_path is missing")
    props = device_properties(trace_file, roots)
    if not props:
        return TraceGpu(None, None, "the trace has no deviceProperties")
    first = props[0]
    name = first.get("name") if isinstance(first.get("name"), str) else ""
    found = identify_device(first)  # name, memory, SMs and arch pick the part; no silent sibling
    label = name.strip() or found.label
    if found.gpu is None:
        return TraceGpu(None, label, f"the trace's {found.reason}", refused=True)
    return TraceGpu(found.gpu, label, None, found.warning)


def kernels_vendor(kernel_names: Iterable[str]) -> tuple[str | None, list[str]]:
    """The vendor the kernel names say (when they agree), and a few of the names that say it."""
    seen: Counter[str] = Counter()
    examples: dict[str, list[str]] = {"nvidia": [], "amd": []}
    for name in kernel_names:
        vendor = kernel_vendor(name)
        if vendor is not None:
            seen[vendor] += 1
            short = name.split("<")[0].split("(")[0].strip().removeprefix("void ").strip()[:48]
            if len(examples[vendor]) < 1 and short:
                examples[vendor].append(short)
    if len(seen) != 1:
        return None, []
    (vendor,) = seen
    return vendor, examples[vendor]


def _contradiction(gpu: GpuSpec, kernel_names: Iterable[str]) -> str | None:
    vendor, examples = kernels_vendor(kernel_names)
    if vendor is None or gpu.vendor not in _VENDOR_WORDS or vendor == gpu.vendor:
        return None
    return (
        f"the kernels are {_VENDOR_WORDS[vendor]}'s ({', '.join(examples)}) but {gpu.key} is an "
        f"{_VENDOR_WORDS[gpu.vendor]} GPU"
    )


def resolve_arch(
    arch: str | None,
    metadata: dict[str, Any],
    output_dir: Path,
    roots: DataRoots,
    kernel_names: Iterable[str] = (),
) -> ResolvedArch:
    names = list(kernel_names)
    warnings: list[str] = []
    found = trace_gpu(metadata, output_dir, roots)
    if found.warning is not None:
        warnings.append(found.warning)
    meta_platform = metadata.get("platform") if isinstance(metadata, dict) else None
    if meta_platform is not None and not isinstance(meta_platform, str):  # str() of a hostile nest recurses
        warnings.append(f"metadata platform is a {type(meta_platform).__name__}, not a GPU name: ignored")
        meta_platform = None

    if arch:
        gpu, source = gpu_by_name_or_file(arch, roots)
        if found.gpu is not None and found.gpu.key != gpu.key:
            warnings.append(f"arch {gpu.key} was requested; the trace was recorded on {found.label}")
        if (clash := _contradiction(gpu, names)) is not None:
            warnings.append(f"{clash}: check arch={arch}")
        return ResolvedArch(gpu, source, found.label, warnings)
    if found.gpu is not None:
        if meta_platform and not _same_gpu(meta_platform, found.gpu):
            warnings.append(
                f"metadata platform {meta_platform!r} disagrees with the trace's GPU {found.label!r}: "
                f"scoring against {found.gpu.key} (the trace's GPU)"
            )
        if (clash := _contradiction(found.gpu, names)) is not None:
            warnings.append(clash)
        return ResolvedArch(found.gpu, "trace", found.label, warnings)

    gpu = _metadata_gpu(metadata, meta_platform, warnings)
    if gpu is not None and found.refused and gpu.origin == "builtin":
        raise InputError(
            f"{output_dir.name} not scored: {found.note}; the metadata's platform {meta_platform!r} names {gpu.key}, "
            "which that device is not — pass arch= the GPU the trace ran on (see list_architectures)"
        )
    if gpu is None:
        raise InputError(
            f"{output_dir.name}: cannot tell which GPU ran this trace ({found.note}; the metadata has no usable "
            "platform or peaks) — pass arch= (see list_architectures)"
        )
    if (clash := _contradiction(gpu, names)) is not None:
        raise InputError(
            f"{output_dir.name} not scored: {clash} (the metadata's platform; {found.note}) — pass arch= the GPU "
            "the trace ran on, or give the server a data root that holds the trace"
        )
    return ResolvedArch(gpu, "metadata", found.label, warnings, trace_note=found.note)


def _metadata_gpu(metadata: dict[str, Any], platform: str | None, warnings: list[str]) -> GpuSpec | None:
    if metadata.get("max_achievable_tflops") and (metadata.get("peak_hbm_bw_tbs") or metadata.get("mem_bw_gbps")):
        try:
            return gpu_from_arch_dict(metadata, name=str(platform or "metadata"))
        except PerfModelError as exc:
            warnings.append(f"metadata peaks unusable ({exc})")
    if platform:
        try:
            return get_gpu(platform)
        except UnknownArchError:
            warnings.append(f"metadata platform {platform!r} is not in the GPU table")
    return None


def _same_gpu(platform: str, gpu: GpuSpec) -> bool:
    try:
        return get_gpu(platform).key == gpu.key
    except UnknownArchError:
        return False
