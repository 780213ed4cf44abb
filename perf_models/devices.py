"""Which built-in GPU a trace's `deviceProperties` entry denotes: its name, memory size, SM/CU count and architecture
together pick the part. A name alone does not: "NVIDIA A100-SXM4-40GB" and "...-80GB" share a die but not a
bandwidth, and an H100 with 94 GiB is not the 80 GB SXM.

`identify_device` returns one of
- a match: the only part the name denotes whose memory, SMs and arch all agree (or, unnamed, the only part whose
  properties agree: vLLM writes "" on ROCm);
- a stated resolution (`warning` says so): the name is not in the table, or it names a part the properties
  contradict (a 40 GB A100 recorded as "A100-SXM4-80GB"), and the parts the evidence allows — the parts whose arch,
  SM count and memory all agree, narrowed to the name's family when the name names one — all have the same roofs
  (dense datasheet peaks, bandwidth, clocks): it is scored as one of them. A100 40GB and A800 40GB, H100 PCIe and
  H800 PCIe differ only in NVLink, so either gives the same verdicts;
- no match, with `reason`: one line naming the device, the parts considered (keys `arch=` accepts, with their memory
  and SMs) and why none is the one, or which parts with different roofs it cannot tell apart (MI350X / MI355X,
  H100 NVL / GH200). The caller adds the fix (pass arch=...), since its wording depends on the tool.
Nothing falls back to a part with other roofs: a GH200 is not an H100 NVL, an L40 is not an L40S.

Memory: `totalGlobalMem` is what the driver leaves after its reservation and ECC (H100 80 GB: 79.2 GiB, B200
180 GB: 178.4 GiB, L40S 48 GB with ECC: 45 GiB), so it must lie between 90 % and 102 % of the part's nominal size
read in GiB; siblings differ by more (80 / 94 / 96, 40 / 80, 192 / 256).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sdpa_analyzer.perf_models.hardware import GpuSpec, list_gpus, name_matches

MEMORY_BELOW = 0.90  # the reported size may be this far below the nominal one (driver reservation, ECC)
MEMORY_ABOVE = 1.02


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**15 else None


def arch_from_properties(props: Mapping[str, Any]) -> str | None:
    """The architecture a Kineto `deviceProperties` entry describes: `sm_90` (NVIDIA, 32-wide warps) or a
    `gfx94` prefix (AMD, 64-wide wavefronts: computeMajor 9, computeMinor 4 is gfx942), None when unreadable."""
    major, minor, warp = (_int(props.get(k)) for k in ("computeMajor", "computeMinor", "warpSize"))
    if major is None or minor is None or major >= 1000 or minor >= 1000:
        return None
    if warp == 32:
        return f"sm_{major}{minor}"
    if warp == 64:
        return f"gfx{major}{minor}"
    return None


def memory_gib(props: Mapping[str, Any]) -> float | None:
    mem = props.get("totalGlobalMem")
    if isinstance(mem, bool) or not isinstance(mem, int | float) or not 0 < mem < 2**60:
        return None
    return float(mem) / 2**30


def describe_properties(props: Mapping[str, Any]) -> str:
    """`gfx94, 304 CUs, 192 GiB` — what a device's properties say, for messages."""
    arch = arch_from_properties(props) or "unknown arch"
    unit = "CUs" if arch.startswith("gfx") else "SMs"
    mem = memory_gib(props)
    sms = _int(props.get("numSms"))
    return f"{arch}, {'?' if sms is None else sms} {unit}, {'?' if mem is None else f'{mem:.1f}'} GiB"


def _part(gpu: GpuSpec) -> str:
    unit = "CUs" if gpu.vendor == "amd" else "SMs"
    sms = "? " if gpu.sm_count is None else f"{gpu.sm_count} "
    mem = "?" if gpu.memory_gb is None else f"{gpu.memory_gb:g}"
    return f"{gpu.key} ({mem} GB, {sms}{unit})"  # short: a message names a few of them within one line


def disagreements(gpu: GpuSpec, props: Mapping[str, Any]) -> list[str]:
    """What in `props` contradicts the part (only what both sides state is compared)."""
    out = []
    arch = arch_from_properties(props)
    if arch is not None and gpu.arch is not None and not gpu.arch.startswith(arch):
        out.append(f"arch {arch} is not {gpu.arch}")
    sms = _int(props.get("numSms"))
    if sms is not None and gpu.sm_count is not None and sms != gpu.sm_count:
        out.append(f"{sms} SMs/CUs are not {gpu.sm_count}")
    mem = memory_gib(props)
    if mem is not None and gpu.memory_gb is not None and not (
        MEMORY_BELOW * gpu.memory_gb <= mem <= MEMORY_ABOVE * gpu.memory_gb
    ):
        out.append(f"{mem:.1f} GiB is not {gpu.memory_gb:g} GB")
    return out


@dataclass(frozen=True, slots=True)
class DeviceMatch:
    """What a deviceProperties entry denotes (module docstring): `gpu` None means no match and `reason` says why."""

    gpu: GpuSpec | None
    label: str  # the device as the messages name it: its name, or what an unnamed device's properties say
    reason: str | None = None
    warning: str | None = None
    candidates: tuple[str, ...] = ()  # the keys considered (for the caller's message and tests)


def _fully_described(props: Mapping[str, Any]) -> bool:
    stated = (arch_from_properties(props), _int(props.get("numSms")), memory_gib(props))
    return all(x is not None for x in stated)


def _by_properties(props: Mapping[str, Any]) -> list[GpuSpec]:
    """Parts whose arch, SM count and memory all agree with a fully described device (all three stated)."""
    if not _fully_described(props):
        return []
    return [g for g in list_gpus() if g.arch is not None and g.sm_count is not None and not disagreements(g, props)]


def same_roofs(a: GpuSpec, b: GpuSpec) -> bool:
    """Whether two parts give every verdict alike: the same dense datasheet peak for every compute spec both state
    (bf16 among them; a spec one file leaves out, such as an H800's FP64, is unknown, not different), the same
    bandwidth and clocks."""
    common = set(a.tflops_datasheet) & set(b.tflops_datasheet)
    return ("matrix_bf16" in common and all(a.tflops_datasheet[s] == b.tflops_datasheet[s] for s in common)
            and a.hbm_tbs_datasheet == b.hbm_tbs_datasheet and a.clock_factor == b.clock_factor)


def _one_roof_set(parts: list[GpuSpec]) -> bool:
    return bool(parts) and all(same_roofs(parts[0], g) for g in parts[1:])


def _keys(parts: list[GpuSpec]) -> str:
    return " and ".join(_part(g) for g in parts)


def _allowed(fits: list[GpuSpec], named: list[GpuSpec]) -> list[GpuSpec]:
    """The parts the evidence allows: those whose properties fit, narrowed to what the name says — the parts it
    names, else their family (an A100 of another memory size) — when it names any."""
    if not named:
        return fits
    keys = {g.key for g in named}
    families = {g.part_family for g in named if g.part_family}
    return [g for g in fits if g.key in keys] or [g for g in fits if g.part_family in families]


def _resolved(parts: list[GpuSpec], named: list[GpuSpec]) -> GpuSpec:
    """One part of a set with the same roofs: one the name names, else the first by key (deterministic)."""
    keys = {g.key for g in named}
    return next((g for g in parts if g.key in keys), min(parts, key=lambda g: g.key))


def identify_device(props: Mapping[str, Any]) -> DeviceMatch:
    """The built-in part a deviceProperties entry denotes (module docstring)."""
    if not isinstance(props, Mapping):
        return DeviceMatch(None, "unknown device", "the deviceProperties entry is not an object")
    raw = props.get("name")
    name = raw.strip() if isinstance(raw, str) else ""
    described = describe_properties(props)
    label = f"{name} ({described})" if name else f"unnamed device ({described})"
    hits = name_matches(name) if name else []
    if hits:
        # the most specific name match decides: a weaker one ("H100" in "NVIDIA H100 PCIe") is a sibling, never
        # taken in its place; parts tied on it are told apart by their properties
        best = [g for g, span in hits if span == hits[0][1]]
        agree = [g for g in best if not disagreements(g, props)]
        keys = tuple(g.key for g, _ in hits)
        if len(agree) == 1 or _one_roof_set(agree):
            return DeviceMatch(agree[0], label, candidates=keys)
        if agree:
            return DeviceMatch(
                None, label, f"GPU {label} fits {_keys(agree)} equally and their roofs differ: the table cannot "
                "tell which part it is", candidates=keys,
            )  # fmt: skip
        return _by_properties_named(props, label, [g for g, _ in hits], best)
    fits = _by_properties(props)
    keys = tuple(g.key for g in fits)
    if _one_roof_set(fits):
        g = _resolved(fits, [])
        same = f" (with {', '.join(f.key for f in fits if f is not g)}: the same roofs)" if len(fits) > 1 else ""
        if not name:
            warning = f"unnamed GPU ({described}) scored as {g.key}{same}" if same else None
            return DeviceMatch(g, label, warning=warning, candidates=keys)
        return DeviceMatch(
            g, label, warning=(
                f"GPU name {name!r} is not in the GPU table; its properties ({described}) fit only {_part(g)}{same}: "
                f"scored as {g.key} — pass arch= the GPU if it is another part"
            ), candidates=keys,
        )  # fmt: skip
    if fits:
        why = f"its properties fit {_keys(fits)}, whose roofs differ"
    else:
        why = "its properties fit no part in the GPU table"
    if not name:
        return DeviceMatch(None, label, f"GPU {label} has no name and {why}", candidates=keys)
    arch = arch_from_properties(props)
    same_arch = [g for g in list_gpus() if arch and g.arch and g.arch.startswith(arch)]
    near = f"; parts of its architecture: {', '.join(g.key for g in same_arch)}" if same_arch and not fits else ""
    return DeviceMatch(None, label, f"GPU {label} is not in the GPU table: {why}{near}",
                       candidates=keys or tuple(g.key for g in same_arch))


def _by_properties_named(
    props: Mapping[str, Any], label: str, named: list[GpuSpec], best: list[GpuSpec]
) -> DeviceMatch:
    """A name the properties contradict: resolved to the parts of the name's family the properties fit when they
    all have the same roofs (module docstring), refused otherwise."""
    why = "; ".join(f"{g.key}: {', '.join(disagreements(g, props))}" for g in best)
    fits = _by_properties(props)
    allowed = _allowed(fits, named)
    keys = tuple(g.key for g in named) + tuple(g.key for g in fits if g.key not in {n.key for n in named})
    head = f"GPU {label}: its name fits {', '.join(g.key for g in best)} but its properties do not ({why})"
    if _one_roof_set(allowed):
        g = _resolved(allowed, named)
        return DeviceMatch(g, label, warning=(
            f"{head}; they fit {_keys(allowed)}: scored as {g.key} — pass arch= the GPU if it is another part"),
            candidates=keys)  # fmt: skip
    if allowed:
        hint = f"; they fit {_keys(allowed)}, whose roofs differ"
    elif fits:
        hint = f"; they fit {_keys(fits)}, of another family than the name"
    else:
        hint = ""
    return DeviceMatch(None, label, f"{head}{hint}", candidates=keys)


def match_device_properties(props: Mapping[str, Any]) -> GpuSpec | None:
    """The part of `identify_device`, or None (its warning, when it is a stated best match, is the caller's to say)."""
    return identify_device(props).gpu
