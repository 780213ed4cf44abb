"""The device side of a synthetic trace: the GPUs it can name, their ``deviceProperties`` and runtime
versions, and the launch / runtime API names and callback ids of each vendor.

What a GPU is (vendor, architecture, SM/CU count, the device names traces give it) comes from perf_models'
GPU tables, the data the analysis scores traces with, so writer and analyzer agree on every device. Kept
here are only the ``deviceProperties`` and header fields perf_models has no notion of: the memory size in
bytes as the runtime reports it, per-block / per-SM limits, register files, shared memory, and the
profiler / runtime versions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from sdpa_analyzer.perf_models.hardware import GpuSpec, match_device_name
from sdpa_analyzer.server.errors import InputError

DEFAULT_GPU = "NVIDIA H100 80GB HBM3"

# The devices the writer can name, with ``totalGlobalMem`` in bytes as the runtime reports it: perf_models'
# memory_gb is the nominal size (80 for the H100's 85018279936 bytes), not what a trace prints.
_TOTAL_GLOBAL_MEM = {
    "NVIDIA H100 80GB HBM3": 85018279936,
    "NVIDIA H200": 150754820096,
    "NVIDIA A100-SXM4-80GB": 85097971712,
    "NVIDIA B200": 191503138816,
    "AMD Instinct MI300X": 206141652992,
    "AMD Instinct MI300X VF": 205571227648,
    "AMD Instinct MI325X": 274877906944,
}

_NV_LIMITS = {"maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
              "warpSize": 32, "sharedMemPerBlock": 49152}
_NV_REGS_PER_SM = 65536
# (sharedMemPerBlockOptin, sharedMemPerMultiprocessor) per architecture
_NV_SHARED_MEM = {"sm80": (166912, 167936), "sm90": (232448, 233472), "sm100": (232448, 233472)}

_AMD_LIMITS = {"maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048}
_AMD_WARP_SIZE = 64  # CDNA wavefronts
_AMD_LDS_BYTES = 65536  # sharedMemPerBlock and maxSharedMemoryPerMultiProcessor: 64 KiB LDS per CU
# regsPerBlock differs between devices of one architecture: the VF (SR-IOV guest) reports half
_AMD_REGS_PER_BLOCK = {"AMD Instinct MI300X": 131072, "AMD Instinct MI300X VF": 65536, "AMD Instinct MI325X": 131072}

# header fields: profiler and runtime versions of the stack that recorded the trace
_NV_VERSIONS = {"cupti_version": 22, "cuda_runtime_version": 12040, "cuda_driver_version": 12090}
_AMD_VERSIONS = {"roctracer_version": 4.1, "hip_runtime_version": 60443483, "hip_driver_version": 60443483}
# Blackwell needs CUDA 12.8+, so its traces come from a newer stack
_VERSIONS_BY_ARCH = {"sm100": {"cupti_version": 28, "cuda_runtime_version": 12090, "cuda_driver_version": 13000}}


@dataclass(frozen=True)
class Gpu:
    """One device as a trace shows it: perf_models' identity of the GPU plus its Kineto-only fields."""

    name: str  # the deviceProperties name
    vendor: str  # "nvidia" | "amd"
    arch: str  # as kernel names spell it: "sm80" | "sm90" | "sm100" | "gfx942"
    num_sms: int  # SMs (NVIDIA) or CUs (AMD)
    props: dict[str, Any] = field(hash=False, compare=False)  # the deviceProperties entry, less its "id"
    versions: dict[str, Any] = field(hash=False, compare=False)  # header fields

    @property
    def stream(self) -> int:
        """The GPU stream (Kineto tid) kernels run on: what the real traces of each vendor show."""
        return 7 if self.vendor == "nvidia" else 0

    @property
    def amd(self) -> bool:
        return self.vendor == "amd"


def known_gpus() -> list[str]:
    """Device names build_trace can write into deviceProperties."""
    return sorted(_TOTAL_GLOBAL_MEM)


def lookup_gpu(name: str) -> Gpu:
    """The device named ``name`` (one of known_gpus()); InputError otherwise."""
    if name not in _TOTAL_GLOBAL_MEM:
        raise InputError(f"gpu_name={name!r} is unknown: expected one of {', '.join(known_gpus())}")
    return _build(name)


def _perf_models_identity(name: str) -> tuple[str, str, int]:
    """(vendor, arch, SM/CU count) perf_models knows for the device name, e.g. ("nvidia", "sm_90", 132)."""
    spec: GpuSpec | None = match_device_name(name)
    if spec is None or name not in spec.device_names or spec.sm_count is None or spec.arch is None:
        # a packaging mismatch, not a user error: every device of _TOTAL_GLOBAL_MEM must be in perf_models
        raise RuntimeError(f"perf_models has no GPU with device name {name!r}, SM count and arch")
    return spec.vendor, spec.arch, spec.sm_count


def _compute_capability(arch: str) -> tuple[int, int]:
    """(computeMajor, computeMinor) of an architecture: sm_90 -> (9, 0), sm_100 -> (10, 0), gfx942 -> (9, 4).

    HIP reports gfx<major><minor><stepping> with the stepping dropped; minor and stepping are hex digits.
    """
    if arch.startswith("sm_"):
        digits = arch.removeprefix("sm_")
        return int(digits[:-1]), int(digits[-1])
    if arch.startswith("gfx"):
        digits = arch.removeprefix("gfx")
        return int(digits[:-2]), int(digits[-2], 16)
    raise RuntimeError(f"perf_models arch {arch!r} is neither sm_* nor gfx*")


@cache
def _build(name: str) -> Gpu:
    vendor, pm_arch, sms = _perf_models_identity(name)
    arch = pm_arch.replace("_", "")  # perf_models' "sm_90" is "sm90" in kernel names
    major, minor = _compute_capability(pm_arch)
    props: dict[str, Any] = {"name": name, "totalGlobalMem": _TOTAL_GLOBAL_MEM[name], "computeMajor": major,
                             "computeMinor": minor}
    # key order is the order Kineto writes them in, per vendor
    if vendor == "nvidia":
        optin, per_sm = _NV_SHARED_MEM[arch]
        props.update({**_NV_LIMITS, "numSms": sms, "regsPerMultiprocessor": _NV_REGS_PER_SM,
                      "sharedMemPerBlockOptin": optin, "sharedMemPerMultiprocessor": per_sm})
        versions = _VERSIONS_BY_ARCH.get(arch, _NV_VERSIONS)
    elif vendor == "amd":
        props.update({**_AMD_LIMITS, "regsPerBlock": _AMD_REGS_PER_BLOCK[name], "warpSize": _AMD_WARP_SIZE,
                      "sharedMemPerBlock": _AMD_LDS_BYTES, "numSms": sms,
                      "maxSharedMemoryPerMultiProcessor": _AMD_LDS_BYTES})
        versions = _AMD_VERSIONS
    else:
        raise RuntimeError(f"perf_models vendor {vendor!r} of {name!r} is neither nvidia nor amd")
    return Gpu(name, vendor, arch, sms, props, versions)


# launch API per (vendor, kernel launch kind): (event name, category, cbid/cid)
LAUNCH_API: dict[tuple[str, str], tuple[str, str, int]] = {
    ("nvidia", "native"): ("cudaLaunchKernel", "cuda_runtime", 211),
    ("nvidia", "gemm"): ("cudaLaunchKernelExC", "cuda_runtime", 430),
    ("nvidia", "triton"): ("cuLaunchKernel", "cuda_driver", 307),
    ("nvidia", "driver_ex"): ("cuLaunchKernelEx", "cuda_driver", 652),
    ("amd", "native"): ("hipLaunchKernel", "cuda_runtime", 107),
    ("amd", "gemm"): ("hipExtModuleLaunchKernel", "cuda_runtime", 65),
    ("amd", "triton"): ("hipModuleLaunchKernel", "cuda_runtime", 169),
    ("amd", "driver_ex"): ("hipModuleLaunchKernel", "cuda_runtime", 169),
}
# the graph calls' cbids (capture, instantiate, launch) are not taken from a real NVIDIA trace: none here has them
NV_CBID = {"cudaStreamIsCapturing": 317, "cudaFuncSetAttribute": 273, "cudaMemcpyAsync": 41,
           "cudaMemsetAsync": 51, "cudaDeviceSynchronize": 165, "cudaStreamBeginCapture": 306,
           "cudaStreamEndCapture": 307, "cudaGraphInstantiateWithFlags": 428, "cudaGraphLaunch": 311}
# the graph calls' cids as the real SGLang capture and replay traces (MI300X) show them
AMD_CID = {"hipStreamGetDevice": 363, "hipMemcpyWithStream": 153, "hipDeviceSynchronize": 48,
           "hipStreamBeginCapture": 219, "hipStreamEndCapture": 220, "hipGraphInstantiateWithFlags": 279,
           "hipGraphLaunch": 215}
