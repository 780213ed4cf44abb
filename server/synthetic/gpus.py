"""The device side of a synthetic trace: the GPUs it can name, their ``deviceProperties`` and runtime
versions, and the launch / runtime API names and callback ids of each vendor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from server.errors import InputError

DEFAULT_GPU = "NVIDIA H100 80GB HBM3"


_NV_LIMITS = {"maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
              "warpSize": 32, "sharedMemPerBlock": 49152}
_AMD_LIMITS = {"maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048}


def _nv_props(name: str, mem: int, major: int, minor: int, sms: int, optin: int, per_sm: int) -> dict:
    return {"name": name, "totalGlobalMem": mem, "computeMajor": major, "computeMinor": minor, **_NV_LIMITS,
            "numSms": sms, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": optin,
            "sharedMemPerMultiprocessor": per_sm}


def _amd_props(name: str, mem: int, regs_per_block: int) -> dict:
    return {"name": name, "totalGlobalMem": mem, "computeMajor": 9, "computeMinor": 4, **_AMD_LIMITS,
            "regsPerBlock": regs_per_block, "warpSize": 64, "sharedMemPerBlock": 65536, "numSms": 304,
            "maxSharedMemoryPerMultiProcessor": 65536}


@dataclass(frozen=True)
class Gpu:
    name: str
    vendor: str  # "nvidia" | "amd"
    arch: str  # "sm80" | "sm90" | "sm100" | "gfx942"
    props: dict[str, Any] = field(hash=False, compare=False)
    versions: dict[str, Any] = field(hash=False, compare=False)

    @property
    def num_sms(self) -> int:
        return int(self.props["numSms"])

    @property
    def stream(self) -> int:
        return 7 if self.vendor == "nvidia" else 0

    @property
    def amd(self) -> bool:
        return self.vendor == "amd"


_NV_VERSIONS = {"cupti_version": 22, "cuda_runtime_version": 12040, "cuda_driver_version": 12090}
_AMD_VERSIONS = {"roctracer_version": 4.1, "hip_runtime_version": 60443483, "hip_driver_version": 60443483}

_GPUS: dict[str, Gpu] = {
    g.name: g
    for g in (
        Gpu("NVIDIA H100 80GB HBM3", "nvidia", "sm90",
            _nv_props("NVIDIA H100 80GB HBM3", 85018279936, 9, 0, 132, 232448, 233472), _NV_VERSIONS),
        Gpu("NVIDIA H200", "nvidia", "sm90",
            _nv_props("NVIDIA H200", 150754820096, 9, 0, 132, 232448, 233472), _NV_VERSIONS),
        Gpu("NVIDIA A100-SXM4-80GB", "nvidia", "sm80",
            _nv_props("NVIDIA A100-SXM4-80GB", 85097971712, 8, 0, 108, 166912, 167936), _NV_VERSIONS),
        Gpu("NVIDIA B200", "nvidia", "sm100",
            _nv_props("NVIDIA B200", 191503138816, 10, 0, 148, 232448, 233472),
            {"cupti_version": 28, "cuda_runtime_version": 12090, "cuda_driver_version": 13000}),
        Gpu("AMD Instinct MI300X", "amd", "gfx942",
            _amd_props("AMD Instinct MI300X", 206141652992, 131072), _AMD_VERSIONS),
        Gpu("AMD Instinct MI300X VF", "amd", "gfx942",
            _amd_props("AMD Instinct MI300X VF", 205571227648, 65536), _AMD_VERSIONS),
        Gpu("AMD Instinct MI325X", "amd", "gfx942",
            _amd_props("AMD Instinct MI325X", 274877906944, 131072), _AMD_VERSIONS),
    )
}


def known_gpus() -> list[str]:
    """Device names build_trace can write into deviceProperties."""
    return sorted(_GPUS)


def lookup_gpu(name: str) -> Gpu:
    try:
        return _GPUS[name]
    except KeyError:
        raise InputError(f"gpu_name={name!r} is unknown: expected one of {', '.join(known_gpus())}") from None


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
NV_CBID = {"cudaStreamIsCapturing": 317, "cudaFuncSetAttribute": 273, "cudaMemcpyAsync": 41,
           "cudaMemsetAsync": 51, "cudaDeviceSynchronize": 165}
AMD_CID = {"hipStreamGetDevice": 363, "hipMemcpyWithStream": 153, "hipDeviceSynchronize": 48}
