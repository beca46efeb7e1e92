"""The profile-name rule in ``compiler.discover.derive_memory_gb`` against every documented name.

The rule: share of device memory rounded up to eighths, times device memory in whole GiB (rounded
up), rounded half up. Checked three ways: the -lgip sizes the reference quotes, every profile of
every MIG model in the shipped catalog, and the mig-parted config names of models the catalog
does not carry. Two plausible simpler rules are shown to fail, which is why this one is used.
"""

from __future__ import annotations

import math

import pytest

from compiler.catalog import load_catalog
from compiler.discover import GIB, MIB, derive_memory_gb, gpu_product

H100_TOTAL = 81559 * MIB  # nvidia.com/gpu.memory on H100 80GB HBM3 (GPU Operator docs)
H200_TOTAL = 143771 * MIB  # nvidia-smi on an H200 141GB


@pytest.mark.parametrize(
    ("gib", "total", "expected"),
    [
        (9.75, H100_TOTAL, 10),  # 1g.10gb, public -lgip capture
        (19.625, H100_TOTAL, 20),  # 1g.20gb / 2g.20gb ("19.62")
        (39.5, H100_TOTAL, 40),  # 3g.40gb / 4g.40gb
        (79.25, H100_TOTAL, 80),  # 7g.80gb
        (16.0, H200_TOTAL, 18),  # H200 1g.18gb, partial public -lgip capture
    ],
)
def test_documented_lgip_sizes_give_documented_names(gib: float, total: int, expected: int) -> None:
    assert derive_memory_gb(round(gib * 1024), total) == expected


def _catalog_cases() -> list[tuple[str, str, int, int, int, int]]:
    cases = []
    for model in load_catalog().models:
        for p in model.profiles:
            total_gb, expected = int(model.memory_gb), int(p.memory_gb)
            cases.append((model.model, p.name, p.memory_slices, model.memory_slices, total_gb, expected))
    return cases


@pytest.mark.parametrize(("model", "name", "slices", "of", "total_gb", "expected"), _catalog_cases())
def test_every_catalog_profile_name_follows_from_its_memory_share(
    model: str, name: str, slices: int, of: int, total_gb: int, expected: int
) -> None:
    # A device a little under its nominal GiB, a profile a little under its exact share (the driver
    # keeps some memory back): the rule must still land on the catalog's name.
    total = total_gb * GIB - 300 * MIB
    memory_mb = math.floor(total / MIB * slices / of * 0.97)
    assert derive_memory_gb(memory_mb, total) == expected, f"{model} {name}"


def test_the_catalog_has_the_half_way_cases_that_need_rounding_half_up() -> None:
    names = {name for _, name, *_ in _catalog_cases()}
    assert {"3g.71gb", "1g.23gb", "1g.24gb"} <= names  # 70.5, 22.5 and 23.5 before rounding


@pytest.mark.parametrize(
    ("full_gb", "slices", "expected"),
    [
        # Names from mig-parted's default config for models the catalog does not ship (mig-facts.md 1.4).
        (186, 1, 23), (186, 2, 47), (186, 4, 93),  # GB200
        (269, 1, 34), (269, 2, 67), (269, 4, 135),  # B300
        (278, 1, 35), (278, 2, 70), (278, 4, 139),  # GB300
        (96, 1, 12), (96, 2, 24), (96, 4, 48),  # H100 96GB / GH200 96GB / H20
    ],
)  # fmt: skip
def test_mig_parted_names_of_uncatalogued_models(full_gb: int, slices: int, expected: int) -> None:
    total = full_gb * GIB - 300 * MIB
    assert derive_memory_gb(math.floor(total / MIB * slices / 8 * 0.97), total) == expected


def test_simpler_rules_do_not_reproduce_the_names() -> None:
    # Rounding the profile's own size up to whole GB (1e9 bytes) names H100's 1g.10gb "1g.11gb"; in
    # GiB it names H200's 1g.18gb "1g.16gb". Banker's rounding of the share names H200's 3g.71gb "3g.70gb".
    assert math.ceil(9984 * MIB / 1e9) == 11
    assert math.ceil(16384 * MIB / GIB) == 16
    assert round(141 * 4 / 8) == 70
    assert derive_memory_gb(9984, H100_TOTAL) == 10 and derive_memory_gb(16384, H200_TOTAL) == 18


@pytest.mark.parametrize(
    ("nvml_name", "label"),
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"),
        ("NVIDIA A100 (PCIe) 80GB", "NVIDIA-A100-PCIe-80GB"),
        ("  NVIDIA  A30 ", "NVIDIA-A30"),
    ],
)
def test_gpu_product_label_is_sanitised_like_gpu_feature_discovery(nvml_name: str, label: str) -> None:
    assert gpu_product(nvml_name) == label
