"""Finding a GPU: by key / short name (get_gpu) and by a trace's deviceProperties name (match_device_name)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from perf_models.errors import UnknownArchError
from perf_models.hardware import get_gpu, list_gpus, match_device_name

# deviceProperties names as torch / the driver report them, and the table they must map to
DEVICE_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "H100 PCIe": "h100-pcie",
    "NVIDIA H200": "h200",
    "NVIDIA H200 NVL": "h200-nvl",
    "NVIDIA B200": "b200",
    "NVIDIA GB200": "gb200",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA A100-PCIE-40GB": "a100-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA L40S": "l40s",
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI300X VF": "mi300x",
    "AMD Instinct MI325X": "mi325x",
    "AMD Instinct MI350X": "mi350x",
    "AMD Instinct MI355X": "mi355x",
    # spellings not in the exact lists, resolved by the patterns
    "nvidia h100 80gb hbm3": "h100-sxm",
    "NVIDIA H100 SXM5 80GB": "h100-sxm",
    "NVIDIA H100-PCIE-80GB": "h100-pcie",
    "AMD Instinct MI300X HF": "mi300x",
    "SYNTHETIC (H100-like names)": "h100-sxm",
}
# names that must not be mistaken for a listed GPU
NOT_LISTED = [
    "NVIDIA GH200 480GB",  # Grace Hopper: different memory, not the H200
    "AMD Instinct MI300A",  # APU, 228 CUs
    "NVIDIA L40",
    "NVIDIA GeForce RTX 4090",
    "AMD Instinct MI250X/MI250",
    "",
    "   ",
]


@pytest.mark.parametrize(("device", "key"), sorted(DEVICE_NAMES.items()))
def test_match_device_name(device: str, key: str) -> None:
    gpu = match_device_name(device)
    assert gpu is not None and gpu.key == key


@pytest.mark.parametrize("device", NOT_LISTED)
def test_unlisted_device_names_do_not_match(device: str) -> None:
    assert match_device_name(device) is None


def test_match_device_name_rejects_non_strings() -> None:
    assert match_device_name(None) is None  # type: ignore[arg-type]
    assert match_device_name(132) is None  # type: ignore[arg-type]


def test_every_listed_device_name_maps_back_to_its_gpu() -> None:
    for gpu in list_gpus():
        for dev in gpu.device_names:
            assert match_device_name(dev) is gpu
            assert get_gpu(dev) is gpu


def _trace_devices(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh).get("deviceProperties") or []


def test_device_names_in_real_traces(traces_dir: Path) -> None:
    """Each GPU name in the shared traces maps to the expected table, and its SM/CU count agrees."""
    seen = 0
    for path in sorted(traces_dir.glob("*/*.json.gz")):
        for dev in _trace_devices(path):
            name = dev["name"]
            assert name in DEVICE_NAMES, f"{path.name}: new device name {name!r}; add its expected GPU here"
            gpu = match_device_name(name)
            assert gpu is not None and gpu.key == DEVICE_NAMES[name], f"{path.name}: {name!r}"
            if "numSms" in dev and not name.startswith("SYNTHETIC"):
                assert dev["numSms"] == gpu.sm_count, f"{path.name}: numSms {dev['numSms']} vs {gpu.sm_count}"
            seen += 1
    if seen == 0:
        pytest.skip("no deviceProperties in the shared traces")


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("H100", "h100-sxm"),
        ("h100", "h100-sxm"),
        ("h100-sxm", "h100-sxm"),
        ("H100_SXM5", "h100-sxm"),
        ("NVIDIA H100 SXM5 80GB", "h100-sxm"),
        ("h100-pcie", "h100-pcie"),
        ("H200", "h200"),
        ("B200", "b200"),
        ("b200", "b200"),
        ("A100", "a100-sxm-80gb"),
        ("a100-40gb", "a100-40gb"),
        ("L40S", "l40s"),
        ("MI300X", "mi300x"),
        ("mi300x", "mi300x"),
        ("AMD Instinct MI300X", "mi300x"),
        ("mi325x", "mi325x"),
        ("MI355X", "mi355x"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # a device name works too
    ],
)
def test_get_gpu_names(name: str, key: str) -> None:
    assert get_gpu(name).key == key


@pytest.mark.parametrize("name", ["tpu-v5", "MI300", "", "H1000", "gfx942"])
def test_get_gpu_unknown_lists_known_names(name: str) -> None:
    with pytest.raises(UnknownArchError) as exc:
        get_gpu(name)
    msg = str(exc.value)
    assert repr(name) in msg
    for key in ("h100-sxm", "mi300x", "b200", "a100-sxm-80gb", "l40s"):
        assert key in msg
    assert exc.value.known == sorted(g.key for g in list_gpus())


def test_names_are_unambiguous() -> None:
    """No alias, display name or device name is claimed by two GPUs (the registry refuses it at load)."""
    seen: dict[str, str] = {}
    for gpu in list_gpus():
        for label in (gpu.key, gpu.name, *gpu.aliases, *gpu.device_names):
            compact = "".join(ch for ch in label.lower() if ch.isalnum())
            assert seen.setdefault(compact, gpu.key) == gpu.key, f"{label!r}: {seen[compact]} and {gpu.key}"
