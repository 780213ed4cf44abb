"""GPU peak tables: datasheet and achievable peaks per GPU, and finding a GPU by name or trace device name.

The tables are data files (`perf_models/data/gpus/<key>.json`, one per GPU), each number with its source.
Peaks are dense (no 2:4 sparsity) TFLOPS keyed by compute spec (`matrix_bf16`, `matrix_fp8`, `vector_fp32`,
… — the keys TraceLens arch files use) and HBM bandwidth in TB/s.

One roof kind per ratio: every efficiency, anomaly and band is scored against the **datasheet** dense peak of
the row's dtype (`peak_tflops()` / `peak_tbs()` / `compute_roof()` / `bandwidth_roof()` return it by default). A
measured *achievable* figure (`achievable_method` in the file: AMD's MAF measurements for MI300X/MI325X) is kept
beside it (`Roof.achievable`, `achievable_tflops()`), labelled, and never divided into a time or compared with a
datasheet figure: MI300X bf16 against the 708 MAF figure and fp16 against the 1307.4 datasheet made one kernel time
read 124 % in bf16 and 67 % in fp16, and an fp8 lever compared a bf16 achievable roof with an fp8 datasheet one.
Numbers without a method are kept as `*_unverified` for reference only.

A part that runs above its rated boost clock (GeForce cards: GPU Boost takes an RTX 4090 rated at 2.52 GHz to
2.7-2.85 GHz at stock) states both clocks with sources (`boost_clock_ghz`, `sustained_clock_ghz`): its compute roofs
are the datasheet per-clock rates at the sustained clock (kind `sustained`), since the rated figure is below what
the best published kernels reach there (FlashAttention-2 forward at 169.3 TFLOPS = 102 % of 165.2). Memory
bandwidth does not follow the SM clock and stays the datasheet figure.

Compute-spec decision for fp32 on NVIDIA: `matrix_fp32` is the CUDA-core (non-tensor) FP32 peak, equal to
`vector_fp32`, because PyTorch runs fp32 GEMMs and unfused attention without TF32 unless the user opts in
(`torch.backends.cuda.matmul.allow_tf32` is False by default). The TF32 tensor-core peak is the separate
`matrix_tf32` key. PyTorch's memory-efficient attention kernel, however, computes fp32 on sm_80+ with
CUTLASS 3xTF32 (`OpMultiplyAddFastF32`, three TF32 MMAs per product), so NVIDIA tables also carry
`matrix_fp32_3xtf32` = `matrix_tf32` / 3 for a caller that knows the kernel. On AMD, `matrix_fp32` is the
MFMA FP32 peak ("FP32 matrix" on the datasheet).

User-supplied peaks (a TraceLens arch JSON or the analysis metadata) come in through `gpu_from_arch_dict`;
this module never reads user files.
"""

from __future__ import annotations

import difflib
import json
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from sdpa_analyzer.perf_models.errors import ConfigError, PerfModelError, UnknownArchError

PREFER_CHOICES = ("datasheet", "achievable")
ROOF_KINDS = ("datasheet", "sustained", "achievable")  # achievable is a roof only for user peaks without a datasheet

# A user's number within this relative distance of the datasheet value is the datasheet value.
_SAME_AS_DATASHEET = 0.01
# Bandwidths outside this range are almost certainly in the wrong unit (GB/s given as TB/s or back).
_PLAUSIBLE_TBS = (0.01, 100.0)
_SPEC_RE = re.compile(r"^(matrix|vector)_[a-z0-9_]+$")
_FP8_SPEC_RE = re.compile(r"^(matrix|vector)_(fp8|float8)(_?e[45]m[23](fnuz|fn)?)?$")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's peaks. TFLOPS are dense; `sources` maps every number's field name to where it came from.

    Source keys: `sm_count`, `l2_cache_mb`, `llc_mb`, `memory_gb`, `hbm_tbs_datasheet`,
    `hbm_tbs_achievable`, `boost_clock_ghz`, `sustained_clock_ghz`, `tflops_datasheet.<spec>`,
    `tflops_achievable.<spec>`.
    """

    key: str
    name: str
    vendor: str  # 'nvidia' | 'amd' | 'unknown'
    device_names: tuple[str, ...]
    sm_count: int | None  # SMs (NVIDIA) or CUs (AMD)
    l2_cache_mb: float | None  # AMD MI300-class: sum of the per-XCD L2s (4 MB each)
    memory_gb: float | None
    hbm_tbs_datasheet: float
    hbm_tbs_achievable: float | None
    tflops_datasheet: Mapping[str, float] = field(hash=False)
    tflops_achievable: Mapping[str, float] = field(hash=False)
    sources: Mapping[str, str] = field(hash=False)
    achievable_method: str | None = None  # how the achievable numbers were measured (required when any exist)
    hbm_tbs_unverified: float | None = None  # reference only: never a roof
    tflops_unverified: Mapping[str, float] = field(default_factory=dict, hash=False)
    origin: str = "builtin"  # 'builtin' | 'arch_json' | 'metadata'
    arch: str | None = None  # e.g. sm_90, gfx942
    llc_mb: float | None = None  # memory-side last-level cache (AMD Infinity Cache)
    aliases: tuple[str, ...] = ()
    device_patterns: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # what a published band or measurement on one part says about another (`relation`): parts of one family share
    # their die and memory system and differ in power, clocks or memory (h100: SXM, PCIe, NVL)
    part_family: str | None = None  # 'h100', 'h200', 'a100', 'b200', 'mi300x', ... (None for user-supplied peaks)
    form_factor: str | None = None  # 'sxm' | 'pcie' | 'nvl' | 'oam' | 'superchip' | 'pcie-card' | 'sxm-or-pcie'
    boost_clock_ghz: float | None = None  # the clock the datasheet rates are quoted at (stated with the next one)
    sustained_clock_ghz: float | None = None  # the clock the part holds under load when above the rated boost

    def relation(self, other: GpuSpec) -> str:
        """How a number measured on `other` carries over to this part:
        'same' (the same part), 'sibling' (same family and arch, another form factor or memory: clocks, power and
        bandwidth differ, so a band is borrowed), 'same_arch' (another product of the architecture), 'other'."""
        if self.part_family is not None and self.key == other.key:
            return "same"
        if self.arch is not None and self.arch == other.arch:
            if self.part_family is not None and self.part_family == other.part_family:
                return "sibling"
            return "same_arch"
        return "other"

    def specs(self) -> list[str]:
        """Every compute spec this GPU has a peak for."""
        return sorted(set(self.tflops_datasheet) | set(self.tflops_achievable))

    @property
    def clock_factor(self) -> float:
        """Sustained / rated boost clock (1.0 unless the file states both): what the datasheet rates scale by."""
        if self.boost_clock_ghz is None or self.sustained_clock_ghz is None:
            return 1.0
        return self.sustained_clock_ghz / self.boost_clock_ghz

    def peak_tflops(self, spec: str, prefer: str = "datasheet") -> tuple[float, str]:
        """(TFLOPS, kind) for a compute spec such as `matrix_bf16` or `matrix_fp8`.

        `datasheet` (the default, the roof of every ratio): the datasheet dense peak, kind 'datasheet', or at the
        part's sustained clock, kind 'sustained' (module docstring). `achievable`: the measured figure, kind
        'achievable' — shown beside the roof, never a roof of a built-in part. Either falls back to the other when
        it has no number for the spec (a user's arch JSON with no built-in match has only its own figures).
        """
        _check_prefer(prefer)
        key = normalize_spec(spec)
        if prefer == "datasheet" and key in self.tflops_datasheet:
            return self._at_clock(self.tflops_datasheet[key])
        if key in self.tflops_achievable:
            return float(self.tflops_achievable[key]), "achievable"
        if key in self.tflops_datasheet:
            return self._at_clock(self.tflops_datasheet[key])
        raise ConfigError("spec", spec, f"one of the compute specs of {self.key}: {', '.join(self.specs())}")

    def _at_clock(self, datasheet: float) -> tuple[float, str]:
        factor = self.clock_factor
        return (float(datasheet) * factor, "sustained") if factor != 1.0 else (float(datasheet), "datasheet")

    def achievable_tflops(self, spec: str) -> float | None:
        """The measured achievable figure of a spec (shown beside the roof; never a ratio's roof), None if none."""
        value = self.tflops_achievable.get(normalize_spec(spec))
        return float(value) if value is not None else None

    def peak_tbs(self, prefer: str = "datasheet") -> tuple[float, str]:
        """(memory TB/s, 'datasheet' | 'achievable'); the datasheet by default (the roof of every ratio)."""
        _check_prefer(prefer)
        if prefer == "achievable" and self.hbm_tbs_achievable is not None:
            return float(self.hbm_tbs_achievable), "achievable"
        return float(self.hbm_tbs_datasheet), "datasheet"

    def compute_roof(self, spec: str) -> Roof:
        """The compute roof of a spec (datasheet dense, or at the sustained clock), with its source and the
        measured achievable figure beside it."""
        value, kind = self.peak_tflops(spec)
        key = normalize_spec(spec)
        source = self.sources.get(f"tflops_{'achievable' if kind == 'achievable' else 'datasheet'}.{key}", "")
        if kind == "sustained":
            source = (
                f"datasheet {self.tflops_datasheet[key]:g} at the sustained clock {self.sustained_clock_ghz:g} GHz "
                f"(rated boost {self.boost_clock_ghz:g} GHz: {self.sources.get('sustained_clock_ghz', '')}); {source}"
            )
        achievable = self.achievable_tflops(key) if kind != "achievable" else None
        return Roof(value, kind, source, self.tflops_datasheet.get(key), achievable,
                    self._achievable_source(f"tflops_achievable.{key}") if achievable is not None else None)

    def bandwidth_roof(self) -> Roof:
        """The memory bandwidth roof (datasheet), with its source and the measured achievable figure beside it."""
        value, kind = self.peak_tbs()
        achievable = self.hbm_tbs_achievable
        return Roof(value, kind, self.sources.get("hbm_tbs_datasheet", ""), self.hbm_tbs_datasheet, achievable,
                    self._achievable_source("hbm_tbs_achievable") if achievable is not None else None)

    def _achievable_source(self, field_name: str) -> str:
        source = self.sources.get(field_name, "")
        return f"{self.achievable_method}; {source}" if self.achievable_method else source

    def source(self, field_name: str) -> str:
        """Where one number came from (see the class docstring for the keys)."""
        if field_name not in self.sources:
            raise ConfigError("field", field_name, f"one of {', '.join(sorted(self.sources))}")
        return self.sources[field_name]


@dataclass(frozen=True)
class Roof:
    """One roof: its value (TFLOP/s or TB/s), its kind (datasheet | sustained | achievable: `ROOF_KINDS`), where
    it comes from, the datasheet value of the same quantity, and a measured achievable figure shown beside it
    (never part of a ratio with the roof)."""

    value: float
    kind: str
    source: str
    datasheet: float | None
    achievable: float | None = None
    achievable_source: str | None = None


def normalize_spec(spec: str) -> str:
    """Canonical compute-spec key: lower case; any fp8 flavour (e4m3, e5m2, fnuz) is `<kind>_fp8`."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("spec", spec, "a compute spec name such as matrix_bf16 or vector_fp32")
    key = spec.strip().lower()
    m = _FP8_SPEC_RE.match(key)
    if m:
        return f"{m.group(1)}_fp8"
    return key


def _check_prefer(prefer: str) -> None:
    if prefer not in PREFER_CHOICES:
        raise ConfigError("prefer", prefer, " or ".join(PREFER_CHOICES))


# ---------------------------------------------------------------- name matching


def _compact(text: str) -> str:
    """'H100-SXM5 80GB' -> 'h100sxm580gb': the form aliases are compared in."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _words(text: str) -> str:
    """'NVIDIA A100-SXM4-80GB' -> 'nvidia a100 sxm4 80gb': the form device patterns are searched in."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


@dataclass(frozen=True)
class _Registry:
    gpus: tuple[GpuSpec, ...]
    by_name: Mapping[str, GpuSpec]  # compact key / display name / alias / device name -> GPU
    by_device: Mapping[str, GpuSpec]  # compact device name -> GPU
    patterns: tuple[tuple[re.Pattern[str], GpuSpec], ...]


@cache
def _registry() -> _Registry:
    folder = resources.files("perf_models").joinpath("data", "gpus")
    gpus = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            gpus.append(_load_builtin(entry.name, entry.read_text(encoding="utf-8")))
    if not gpus:
        raise PerfModelError(f"no GPU tables found in {folder}; the package data is missing")
    gpus.sort(key=lambda g: (g.vendor, g.key))

    by_name: dict[str, GpuSpec] = {}
    by_device: dict[str, GpuSpec] = {}
    patterns: list[tuple[re.Pattern[str], GpuSpec]] = []
    for gpu in gpus:
        for label in (gpu.key, gpu.name, *gpu.aliases, *gpu.device_names):
            c = _compact(label)
            if c in by_name and by_name[c].key != gpu.key:
                raise PerfModelError(f"GPU name {label!r} is claimed by both {by_name[c].key} and {gpu.key}")
            by_name[c] = gpu
        for dev in gpu.device_names:
            by_device[_compact(dev)] = gpu
        patterns.extend((re.compile(p), gpu) for p in gpu.device_patterns)
    return _Registry(tuple(gpus), MappingProxyType(by_name), MappingProxyType(by_device), tuple(patterns))


def list_gpus() -> list[GpuSpec]:
    """Every built-in GPU, sorted by vendor then key (loaded once)."""
    return list(_registry().gpus)


def known_keys() -> list[str]:
    return sorted(g.key for g in _registry().gpus)


_EXACT = 1 << 20  # the "span" of an exact device-name hit: beats any pattern


def name_matches(device_name: str) -> list[tuple[GpuSpec, int]]:
    """Every built-in GPU a device name can denote, with how much of the name says so: an exact device name seen in
    real traces, or the longest stretch of the name one of the GPU's patterns matches ('NVIDIA H100 PCIe' fits
    the generic H100 pattern and the PCIe one; the PCIe stretch is longer). Best first."""
    if not isinstance(device_name, str) or not device_name.strip():
        return []
    reg = _registry()
    exact = reg.by_device.get(_compact(device_name))
    words = _words(device_name)
    spans: dict[str, tuple[GpuSpec, int]] = {}
    if exact is not None:
        spans[exact.key] = (exact, _EXACT)
    for pattern, gpu in reg.patterns:
        m = pattern.search(words)
        if m is not None and m.end() - m.start() > spans.get(gpu.key, (gpu, -1))[1]:
            spans[gpu.key] = (gpu, m.end() - m.start())
    return sorted(spans.values(), key=lambda hit: (-hit[1], hit[0].key))


def match_device_name(device_name: str) -> GpuSpec | None:
    """The built-in GPU a device name alone denotes (the best of `name_matches`), or None when none fits or two fit
    equally well. A trace's deviceProperties say more than the name: `perf_models.devices.identify_device`."""
    hits = name_matches(device_name)
    if not hits or (len(hits) > 1 and hits[1][1] == hits[0][1]):
        return None  # two GPUs matching equally well means the name does not say which one it is
    return hits[0][0]


def _lookup(name: str) -> GpuSpec | None:
    if not isinstance(name, str) or not name.strip():
        return None
    hit = _registry().by_name.get(_compact(name))
    return hit if hit is not None else match_device_name(name)


def get_gpu(name: str) -> GpuSpec:
    """A built-in GPU by key ('h100-sxm'), display name, short name ('H100', 'mi300x') or device name.

    Case and punctuation do not matter. Raises UnknownArchError listing the known keys otherwise.
    """
    gpu = _lookup(name)
    if gpu is None:
        keys = known_keys()
        if len(", ".join(keys)) <= _KEYS_IN_A_MESSAGE:
            raise UnknownArchError(str(name), keys)
        raise UnknownArchError(str(name), nearest_keys(str(name)), total=len(keys))
    return gpu


_KEYS_IN_A_MESSAGE = 160  # characters of keys an unknown-GPU message lists (it is one line of at most 300)


def nearest_keys(name: str, limit: int = 6) -> list[str]:
    """The keys whose key, name or aliases are spelled most like `name` (a hint `get_gpu` accepts), best first."""
    reg = _registry()
    scored: dict[str, float] = {}
    target = _compact(name)
    for label, gpu in reg.by_name.items():
        ratio = difflib.SequenceMatcher(None, target, label).ratio()
        scored[gpu.key] = max(scored.get(gpu.key, 0.0), ratio)
    return [k for k, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


# ---------------------------------------------------------------- built-in tables


_BUILTIN_NUMBERS = (
    "sm_count", "l2_cache_mb", "llc_mb", "memory_gb", "hbm_tbs_datasheet", "hbm_tbs_achievable", "hbm_tbs_unverified",
)
# numbers a file may give as null (unknown): never used for matching or a roof then
_OPTIONAL_NUMBERS = frozenset({"sm_count", "l2_cache_mb", "llc_mb", "hbm_tbs_achievable", "hbm_tbs_unverified"})
_CLOCK_NUMBERS = ("boost_clock_ghz", "sustained_clock_ghz")  # optional: only parts that run above their rated boost
FORM_FACTORS = frozenset({"sxm", "pcie", "nvl", "oam", "superchip", "pcie-card", "sxm-or-pcie"})


def _load_builtin(filename: str, text: str) -> GpuSpec:
    """Parse and check one packaged GPU file; a broken file is a packaging bug, reported with its name."""
    where = f"perf_models/data/gpus/{filename}"
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PerfModelError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise PerfModelError(f"{where}: expected a JSON object")

    def need(name: str, kind: type | tuple[type, ...]) -> Any:
        if name not in raw or not isinstance(raw[name], kind) or isinstance(raw[name], bool):
            raise PerfModelError(f"{where}: field {name!r} is missing or not a {kind}")
        return raw[name]

    def number(name: str, value: Any, optional: bool) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
            raise PerfModelError(f"{where}: {name}={value!r} must be a positive number")
        return float(value)

    key = need("key", str)
    if filename != f"{key}.json":
        raise PerfModelError(f"{where}: key {key!r} must match the file name")
    vendor = need("vendor", str)
    if vendor not in ("nvidia", "amd"):
        raise PerfModelError(f"{where}: vendor={vendor!r} must be 'nvidia' or 'amd'")
    values: dict[str, float | None] = {}
    for name in _BUILTIN_NUMBERS:
        optional = name in _OPTIONAL_NUMBERS
        if name not in raw:
            raise PerfModelError(f"{where}: field {name!r} is missing (use null when unknown)")
        values[name] = number(name, raw[name], optional)
    tables: dict[str, dict[str, float]] = {}
    for table in ("tflops_datasheet", "tflops_achievable", "tflops_unverified"):
        entries = need(table, dict)
        for spec, v in entries.items():
            if not _SPEC_RE.match(spec):
                raise PerfModelError(f"{where}: {table} key {spec!r} is not a compute spec like matrix_bf16")
            number(f"{table}.{spec}", v, optional=False)
        tables[table] = {spec: float(v) for spec, v in entries.items()}
    if not tables["tflops_datasheet"]:
        raise PerfModelError(f"{where}: tflops_datasheet is empty")
    method = raw.get("achievable_method")
    if (tables["tflops_achievable"] or values["hbm_tbs_achievable"] is not None) and not (
        isinstance(method, str) and method.strip()
    ):
        # an achievable roof without a stated method is not a default roof: put it under *_unverified
        raise PerfModelError(f"{where}: achievable numbers need achievable_method (how they were measured)")

    clocks: dict[str, float | None] = {
        name: number(name, raw.get(name), optional=True) for name in _CLOCK_NUMBERS
    }  # absent or null: the part holds its rated clock (no scaling)
    if (clocks["boost_clock_ghz"] is None) != (clocks["sustained_clock_ghz"] is None):
        raise PerfModelError(f"{where}: boost_clock_ghz and sustained_clock_ghz come together (or neither)")
    boost, sustained = clocks["boost_clock_ghz"], clocks["sustained_clock_ghz"]
    if boost is not None and sustained is not None and sustained < boost:
        raise PerfModelError(f"{where}: sustained_clock_ghz is below boost_clock_ghz: the datasheet is the roof then")
    sources = _expand_sources(where, need("sources", dict), {**values, **clocks}, tables)
    patterns = tuple(need("device_patterns", list))
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            raise PerfModelError(f"{where}: device pattern {p!r} is not a regex ({exc})") from None
    sm = values["sm_count"]
    form_factor = need("form_factor", str)
    if form_factor not in FORM_FACTORS:
        raise PerfModelError(f"{where}: form_factor={form_factor!r} must be one of {', '.join(sorted(FORM_FACTORS))}")
    return GpuSpec(
        key=key,
        name=need("name", str),
        vendor=vendor,
        device_names=tuple(need("device_names", list)),
        sm_count=int(sm) if sm is not None else None,
        l2_cache_mb=values["l2_cache_mb"],
        memory_gb=values["memory_gb"],
        hbm_tbs_datasheet=float(values["hbm_tbs_datasheet"] or 0.0),
        hbm_tbs_achievable=values["hbm_tbs_achievable"],
        tflops_datasheet=MappingProxyType(tables["tflops_datasheet"]),
        tflops_achievable=MappingProxyType(tables["tflops_achievable"]),
        sources=MappingProxyType(sources),
        achievable_method=method if isinstance(method, str) else None,
        hbm_tbs_unverified=values["hbm_tbs_unverified"],
        tflops_unverified=MappingProxyType(tables["tflops_unverified"]),
        origin="builtin",
        arch=raw.get("arch"),
        llc_mb=values["llc_mb"],
        aliases=tuple(need("aliases", list)),
        device_patterns=patterns,
        notes=tuple(raw.get("notes", [])),
        part_family=need("part_family", str),
        form_factor=form_factor,
        boost_clock_ghz=clocks["boost_clock_ghz"],
        sustained_clock_ghz=clocks["sustained_clock_ghz"],
    )


def _expand_sources(
    where: str, raw: dict[str, Any], values: dict[str, float | None], tables: dict[str, dict[str, float]]
) -> dict[str, str]:
    """Explicit source per number; `tflops_datasheet.*` / `tflops_achievable.*` cover the rest of a table."""
    out: dict[str, str] = {}
    for name, v in values.items():
        if v is None:
            continue
        text = raw.get(name)
        if not isinstance(text, str) or not text.strip():
            raise PerfModelError(f"{where}: no source for {name}")
        out[name] = text
    for table, entries in tables.items():
        default = raw.get(f"{table}.*")
        for spec in entries:
            text = raw.get(f"{table}.{spec}", default)
            if not isinstance(text, str) or not text.strip():
                raise PerfModelError(f"{where}: no source for {table}.{spec}")
            out[f"{table}.{spec}"] = text
    return out


# ---------------------------------------------------------------- user-supplied peaks


def _positive(value: Any, field_name: str, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(field_name, value, f"a positive number ({unit})")
    f = float(value)
    if not math.isfinite(f) or f <= 0:
        raise ConfigError(field_name, value, f"a positive number ({unit})")
    return f


def _bandwidth_tbs(d: Mapping[str, Any]) -> tuple[float, str]:
    """(TB/s, the field it came from) from mem_bw_gbps (GB/s) and/or peak_hbm_bw_tbs (TB/s)."""
    gbps = tbs = None
    if "mem_bw_gbps" in d:
        gbps = _positive(d["mem_bw_gbps"], "mem_bw_gbps", "GB/s, e.g. 5300") / 1000.0
        if not _PLAUSIBLE_TBS[0] <= gbps <= _PLAUSIBLE_TBS[1]:
            raise ConfigError("mem_bw_gbps", d["mem_bw_gbps"], "a bandwidth in GB/s (e.g. 5300 for 5.3 TB/s)")
    if "peak_hbm_bw_tbs" in d:
        tbs = _positive(d["peak_hbm_bw_tbs"], "peak_hbm_bw_tbs", "TB/s, e.g. 5.3")
        if not _PLAUSIBLE_TBS[0] <= tbs <= _PLAUSIBLE_TBS[1]:
            raise ConfigError("peak_hbm_bw_tbs", d["peak_hbm_bw_tbs"], "a bandwidth in TB/s (e.g. 5.3, not 5300)")
    if gbps is None and tbs is None:
        raise ConfigError(
            "mem_bw_gbps",
            None,
            "a memory bandwidth: mem_bw_gbps in GB/s (TraceLens arch JSON) or peak_hbm_bw_tbs in TB/s "
            "(analysis metadata); the field is missing",
        )
    if gbps is not None and tbs is not None and abs(gbps - tbs) > _SAME_AS_DATASHEET * max(gbps, tbs):
        raise ConfigError("peak_hbm_bw_tbs", d["peak_hbm_bw_tbs"], f"to agree with mem_bw_gbps={d['mem_bw_gbps']}")
    if gbps is not None:
        return gbps, f"mem_bw_gbps={d['mem_bw_gbps']}"
    assert tbs is not None
    return tbs, f"peak_hbm_bw_tbs={d['peak_hbm_bw_tbs']}"


# A user's compute peak outside this range (TFLOPS) is in another unit. The built-in GPUs span 1 TFLOPS (H20 FP64)
# to 10,066 (MI355X dense FP4): the range leaves 100x below (a consumer part's FP64 at 1/64 rate is about 1) and
# 10x above for parts to come, while a value in FLOPS (7.08e14), in GFLOPS (a tensor peak of 708 -> 708000),
# an overflow (1e308) or a near-zero (1e-9) falls outside.
_PLAUSIBLE_TFLOPS = (0.01, 100_000.0)


def _plausible_tflops(value: Any, field_name: str) -> float:
    tflops = _positive(value, field_name, "TFLOPS")
    low, high = _PLAUSIBLE_TFLOPS
    if not low <= tflops <= high:
        raise ConfigError(
            field_name,
            value,
            f"a peak in TFLOPS between {low:g} and {high:,.0f} (the built-in GPUs span 1 to 10,066; a value outside "
            "is in another unit, e.g. FLOPS or GFLOPS)",
        )
    return tflops


def _user_tflops(d: Mapping[str, Any]) -> tuple[dict[str, float], list[str]]:
    """Validated {spec: TFLOPS} and the specs dropped because the file gives 0 (TraceLens' 'not measured')."""
    raw = d.get("max_achievable_tflops")
    if raw is None and "peak_bf16_maf_tflops" in d:  # older metadata carried only the bf16 roof
        raw = {"matrix_bf16": d["peak_bf16_maf_tflops"]}
    example = 'an object of compute spec -> TFLOPS, e.g. {"matrix_bf16": 708, "matrix_fp8": 1273}'
    if raw is None:
        raise ConfigError("max_achievable_tflops", None, f"{example}; the field is missing")
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError("max_achievable_tflops", raw, example)
    out: dict[str, float] = {}
    dropped: list[str] = []
    for spec, value in raw.items():
        name = f"max_achievable_tflops.{spec}"
        if not isinstance(spec, str) or not _SPEC_RE.match(spec.strip().lower()):
            raise ConfigError(name, spec, "a compute spec name such as matrix_bf16 or vector_fp32")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(name, value, "a positive number (TFLOPS)")
        if value == 0:
            dropped.append(spec)
            continue
        out[normalize_spec(spec)] = _plausible_tflops(value, name)
    if not out:
        raise ConfigError("max_achievable_tflops", raw, f"{example} with at least one non-zero value")
    return out, dropped


def _exceeds_datasheet(base: GpuSpec, tflops: Mapping[str, float], tbs: float) -> bool:
    """True when a user number is above the built-in roof (datasheet, at the sustained clock where the part has
    one): then the file is not that GPU."""
    limit = 1.0 + _SAME_AS_DATASHEET
    if tbs > base.hbm_tbs_datasheet * limit:
        return True
    return any(v > base.peak_tflops(s)[0] * limit for s, v in tflops.items() if s in base.tflops_datasheet)


def _custom_key(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return "custom" if slug in ("", "custom") else f"custom-{slug}"


def gpu_from_arch_dict(d: Mapping[str, Any], name: str | None = None) -> GpuSpec:
    """A GpuSpec from user-supplied peaks, taken as-is in either format.

    (a) TraceLens arch JSON: `{"name", "mem_bw_gbps", "max_achievable_tflops": {...}}` (other keys such as
        `memory_gb`, `num_cus`, `freq_mhz`, `_reference` are allowed);
    (b) our analysis metadata: `{"platform", "peak_hbm_bw_tbs", "max_achievable_tflops": {...}, ...}`.

    The file's TFLOPS are achievable figures (a 0 entry means "not measured" and is skipped). When the name
    is a built-in GPU (and no number exceeds that GPU's roof), its datasheet peaks are the roofs, with SM count,
    caches and clocks, and the user's numbers are shown beside them (one roof kind per ratio); a user number within
    1 % of the datasheet is labelled 'datasheet' (TraceLens' MI300X 5300 GB/s is the spec value, for example).
    With no built-in match the file's numbers are the only figures, so they are the roofs (kind 'achievable').
    The bandwidth is labelled 'achievable' only when it differs from a matched datasheet; otherwise a "peak
    bandwidth" field is read as the spec value. Bad fields raise ConfigError naming the field.
    """
    if not isinstance(d, Mapping):
        raise ConfigError("arch", type(d).__name__, "a JSON object (TraceLens arch JSON or analysis metadata)")
    origin = "arch_json" if "mem_bw_gbps" in d else "metadata"
    label = "arch JSON" if origin == "arch_json" else "analysis metadata"
    if name is None:
        order = ("name", "platform") if origin == "arch_json" else ("platform", "name")
        name = next((d[k] for k in order if d.get(k) is not None), "custom")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("name", name, "a GPU name string (e.g. MI300X)")
    name = name.strip()

    tbs, bw_field = _bandwidth_tbs(d)
    tflops, dropped = _user_tflops(d)
    memory_gb = _positive(d["memory_gb"], "memory_gb", "GB") if d.get("memory_gb") is not None else None
    num_cus = None
    if d.get("num_cus") is not None:
        num_cus = int(_positive(d["num_cus"], "num_cus", "compute units"))
    reference = next(
        (d[k] for k in ("_reference", "reference", "source", "_source") if isinstance(d.get(k), str)), None
    )
    cite = f" (file reference: {reference})" if reference else ""

    base = _lookup(name)
    notes = [f"peaks from {label} {name!r}"]
    if base is not None and _exceeds_datasheet(base, tflops, tbs):
        notes.append(f"some numbers exceed the {base.key} datasheet, so the built-in table was not used")
        base = None
    elif base is not None:
        notes.append(f"matched to built-in {base.key}")
    sources: dict[str, str] = {}
    datasheet: dict[str, float] = {}
    achievable: dict[str, float] = {}
    if base is not None:
        datasheet = dict(base.tflops_datasheet)
        sources.update({k: v for k, v in base.sources.items() if k.startswith("tflops_datasheet.")})
    for spec, value in tflops.items():
        ds = datasheet.get(spec)
        if ds is not None and abs(value - ds) <= _SAME_AS_DATASHEET * ds:
            datasheet[spec] = value
            sources[f"tflops_datasheet.{spec}"] = (
                f"{label} max_achievable_tflops.{spec}={value:g}, equal to the built-in datasheet value{cite}"
            )
        else:
            achievable[spec] = value
            sources[f"tflops_achievable.{spec}"] = f"{label} max_achievable_tflops.{spec}={value:g}{cite}"
    for spec in dropped:
        sources[f"dropped.{spec}"] = f"{label} max_achievable_tflops.{spec}=0 (not measured), left out"

    hbm_ach: float | None = None
    if base is not None and abs(tbs - base.hbm_tbs_datasheet) > _SAME_AS_DATASHEET * base.hbm_tbs_datasheet:
        hbm_ds = base.hbm_tbs_datasheet
        sources["hbm_tbs_datasheet"] = base.sources["hbm_tbs_datasheet"]
        hbm_ach = tbs
        sources["hbm_tbs_achievable"] = f"{label} {bw_field} (differs from the {base.key} datasheet){cite}"
    else:
        hbm_ds = tbs
        sources["hbm_tbs_datasheet"] = f"{label} {bw_field}{cite}"

    if base is not None:
        for k in ("sm_count", "l2_cache_mb", "llc_mb", *_CLOCK_NUMBERS):
            if k in base.sources:
                sources[k] = f"built-in table {base.key} (name {name!r} matched): {base.sources[k]}"
    sm_count = num_cus if num_cus is not None else (base.sm_count if base else None)
    if num_cus is not None:
        sources["sm_count"] = f"{label} num_cus={num_cus}"
    if memory_gb is not None:
        sources["memory_gb"] = f"{label} memory_gb={d['memory_gb']}"
    elif base is not None and base.memory_gb is not None:
        memory_gb = base.memory_gb
        sources["memory_gb"] = f"built-in table {base.key}: {base.sources['memory_gb']}"

    return GpuSpec(
        key=base.key if base is not None else _custom_key(name),
        name=name,
        vendor=base.vendor if base is not None else "unknown",
        device_names=base.device_names if base is not None else (),
        sm_count=sm_count,
        l2_cache_mb=base.l2_cache_mb if base is not None else None,
        memory_gb=memory_gb,
        hbm_tbs_datasheet=hbm_ds,
        hbm_tbs_achievable=hbm_ach,
        tflops_datasheet=MappingProxyType(datasheet),
        tflops_achievable=MappingProxyType(achievable),
        sources=MappingProxyType(sources),
        origin=origin,
        arch=base.arch if base is not None else None,
        llc_mb=base.llc_mb if base is not None else None,
        notes=tuple(notes),
        part_family=base.part_family if base is not None else None,
        form_factor=base.form_factor if base is not None else None,
        boost_clock_ghz=base.boost_clock_ghz if base is not None else None,
        sustained_clock_ghz=base.sustained_clock_ghz if base is not None else None,
    )
