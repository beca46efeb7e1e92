"""The profile-name rule in ``compiler.discover.derive_memory_gb`` against every documented name.

The rule: share of device memory rounded up to eighths, times device memory in whole GiB (rounded
up), rounded half up. Checked three ways: the -lgip sizes the reference quotes, every profile of
every MIG model in the shipped catalog, and the mig-parted config names of models the catalog
does not carry. Two plausible simpler rules are shown to fail, which is why this one is used.
Then the per-GPU summary ``migc discover`` writes on stderr, on hand-made captures.
"""

from __future__ import annotations

import math

import pytest

from compiler.catalog import load_catalog
from compiler.discover import (
    GIB,
    MIB,
    Capture,
    RawGpu,
    RawInstance,
    RawProfile,
    derive_memory_gb,
    format_pci_id,
    gpu_product,
    layout_lines,
)

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


# --- the per-GPU summary on stderr (hand-made captures) ---------------------------------------------


def _gpu(mig: int | None, instances: tuple[RawInstance, ...] | None = (), name: str | None = None) -> RawGpu:
    one = RawProfile(0, 19, 1, 7, 16, 9984, name, ((0, 1),))  # H100's 1g.10gb: 9,984 MiB, 1 slice
    return RawGpu(0, "NVIDIA H100 80GB HBM3", 0x233010DE, H100_TOTAL, mig, mig, 7, (one,), instances)


def test_the_pci_id_is_written_as_mig_parted_filters_it() -> None:
    assert format_pci_id(0x233010DE) == "0x233010DE"
    assert format_pci_id(0x20B210DE) == "0x20B210DE"
    assert format_pci_id(0x10DE) == "0x000010DE"  # zero-padded to eight digits


def test_the_summary_names_each_gpu_instance_by_the_derived_profile_name() -> None:
    head = "GPU 0: NVIDIA H100 80GB HBM3 (0x233010DE), 81559 MiB"
    on = Capture("550.54", (_gpu(1, (RawInstance(3, 19, 2, 1), RawInstance(4, 99, 0, 1))),))
    assert layout_lines(on) == [
        f"{head}, MIG enabled, 1 GPU-instance profiles, up to 7 MIG devices",
        "  GPU instance 3: 1g.10gb at 2:1",
        "  GPU instance 4: profile id 99 at 0:1",  # a profile NVML did not list
    ]
    assert layout_lines(Capture("550.54", (_gpu(1, ()),)))[1] == "  current layout: no GPU instances"
    assert layout_lines(Capture("550.54", (_gpu(1, None),)))[1] == "  current layout: not readable"
    assert layout_lines(Capture("550.54", (_gpu(0),))) == [
        f"{head}, MIG disabled, 1 GPU-instance profiles, up to 7 MIG devices"
    ]
    assert layout_lines(Capture("550.54", (_gpu(None),))) == [f"{head}, no MIG support"]


def test_a_name_the_driver_gives_wins_over_the_derived_one() -> None:
    named = _gpu(1, (RawInstance(1, 19, 0, 1),), name="MIG 1g.12gb")
    assert layout_lines(Capture("570.0", (named,)))[1] == "  GPU instance 1: 1g.12gb at 0:1"
