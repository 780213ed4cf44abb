"""Which built-in GPU a trace's `deviceProperties` entry denotes: its name, memory size, SM/CU count and architecture
together pick the part. A name alone does not: "NVIDIA A100-SXM4-40GB" and "...-80GB" share a die but not a
bandwidth, and an H100 with 94 GiB is not the 80 GB SXM.

`identify_device` returns one of
- a match: the only part the name denotes whose memory, SMs and arch all agree (or, unnamed, the only part whose
  properties agree: vLLM writes "" on ROCm);
- a stated best match: a name the table does not know whose properties fit exactly one part; `warning` says so;
- no match, with `reason`: one line naming the device, every candidate (with its memory and SMs) and why each one
  does not fit. The caller adds the fix (pass arch=...), since its wording depends on the tool.
Nothing falls back to a sibling silently.

Memory: `totalGlobalMem` is what the driver leaves after its reservation and ECC (H100 80 GB: 79.2 GiB, B200
180 GB: 178.4 GiB, L40S 48 GB with ECC: 45 GiB), so it must lie between 90 % and 102 % of the part's nominal size
read in GiB; siblings differ by more (80 / 94 / 96, 40 / 80, 192 / 256).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perf_models.hardware import GpuSpec, list_gpus, name_matches

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
    return f"{gpu.key} ({mem} GB, {sms}{unit}, {gpu.arch or '?'})"


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


def identify_device(props: Mapping[str, Any]) -> DeviceMatch:
    """The built-in part a deviceProperties entry denotes (module docstring)."""
    if not isinstance(props, Mapping):
        return DeviceMatch(None, "unknown device", "the deviceProperties entry is not an object")
    raw = props.get("name")
    name = raw.strip() if isinstance(raw, str) else ""
    described = describe_properties(props)
    label = f"{name} ({described})" if name else f"unnamed device ({described})"
    if not name:
        fits = _by_properties(props)
        if len(fits) == 1:
            return DeviceMatch(fits[0], label, candidates=(fits[0].key,))
        why = "its properties fit " + (" and ".join(_part(g) for g in fits) if fits else "no part in the GPU table")
        return DeviceMatch(None, label, f"GPU {label} has no name and {why}", candidates=tuple(g.key for g in fits))
    hits = name_matches(name)
    if not hits:
        fits = _by_properties(props)
        if len(fits) == 1:
            g = fits[0]
            return DeviceMatch(
                g, label, warning=(
                    f"GPU name {name!r} is not in the GPU table; its properties ({described}) fit only {_part(g)}: "
                    f"scored as {g.key} — pass arch= the GPU if it is another part"
                ), candidates=(g.key,),
            )  # fmt: skip
        arch = arch_from_properties(props)
        same_arch = [g for g in list_gpus() if arch and g.arch and g.arch.startswith(arch)]
        near = f"; parts of its architecture: {', '.join(_part(g) for g in same_arch)}" if same_arch else ""
        keys = tuple(g.key for g in same_arch)
        return DeviceMatch(None, label, f"GPU {label} is not in the GPU table{near}", candidates=keys)
    # the most specific name match decides: a weaker one ("H100" in "NVIDIA H100 PCIe") is a sibling, never taken
    # in its place; parts tied on it are told apart by their properties
    best = [g for g, span in hits if span == hits[0][1]]
    agree = [g for g in best if not disagreements(g, props)]
    keys = tuple(g.key for g, _ in hits)
    if len(agree) == 1:
        return DeviceMatch(agree[0], label, candidates=keys)
    if agree:
        return DeviceMatch(
            None, label, f"GPU {label} fits {' and '.join(_part(g) for g in agree)} equally: the table cannot tell "
            "which part it is", candidates=keys,
        )  # fmt: skip
    why = "; ".join(f"{_part(g)}: {', '.join(disagreements(g, props))}" for g in best)
    fits = _by_properties(props)
    hint = f"; its properties fit {' and '.join(_part(g) for g in fits)}" if fits else ""
    return DeviceMatch(
        None, label, f"GPU {label}: its name fits {', '.join(g.key for g in best)} but its properties do not ({why})"
        f"{hint}", candidates=keys + tuple(g.key for g in fits if g.key not in keys),
    )  # fmt: skip


def match_device_properties(props: Mapping[str, Any]) -> GpuSpec | None:
    """The part of `identify_device`, or None (its warning, when it is a stated best match, is the caller's to say)."""
    return identify_device(props).gpu
