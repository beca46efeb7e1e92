"""The shipped catalog: every file validates, and the geometry is internally consistent."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from compiler.catalog import CatalogError, GpuModel, load_catalog, parse_model

EXPECTED_MIG = {
    "A100-SXM4-40GB",
    "A100-SXM4-80GB",
    "A30-24GB",
    "H100-80GB",
    "H100-NVL-94GB",
    "H200-141GB",
    "GH200-96GB",
    "GH200-144GB",
    "B200-180GB",
}
EXPECTED_NON_MIG = {"L40S", "L4", "T4", "RTX-4090"}


def _mig_models() -> list[GpuModel]:
    return [m for m in load_catalog().models if m.mig_capable]


def test_expected_models_present() -> None:
    cat = load_catalog()
    names = {m.model for m in cat.models}
    assert names >= EXPECTED_MIG | EXPECTED_NON_MIG
    assert {m.model for m in cat.models if m.mig_capable} >= EXPECTED_MIG
    assert not {m.model for m in cat.models if m.mig_capable} & EXPECTED_NON_MIG


@pytest.mark.parametrize("model", sorted(EXPECTED_MIG))
def test_placements_fit_the_memory_axis(model: str) -> None:
    m = load_catalog().get(model)
    assert m is not None
    assert m.compute_slices in (4, 7) and m.memory_slices in (4, 8)
    for p in m.profiles:
        assert p.compute_slices <= m.compute_slices
        for start in p.placements:
            assert start >= 0 and start + p.memory_slices <= m.memory_slices, (p.name, start)
            # instances are aligned to their own size on every known part
            assert start % p.memory_slices == 0, (p.name, start)
        assert p.max_count <= len(p.placements)
        assert p.memory_gb <= m.memory_gb
        assert p.media_extensions == ("+me" in p.name)
        assert p.verified, f"{model} {p.name} has no provenance note"
    whole = [p for p in m.profiles if p.memory_slices == m.memory_slices]
    assert len(whole) == 1 and whole[0].compute_slices == m.compute_slices
    for name, count in m.balanced:
        prof = m.profile(name)
        assert prof is not None and count <= prof.max_count


def test_one_g_never_starts_at_the_last_slot() -> None:
    # MIG guide: size-1 instances use slots 0..6 only on 8-slot parts; slot 7 only joins larger blocks.
    for m in _mig_models():
        if m.memory_slices != 8:
            continue
        for p in m.profiles:
            if p.memory_slices == 1:
                assert max(p.placements) == 6, (m.model, p.name)


def test_h200_unverified_facts_are_flagged() -> None:
    m = load_catalog().get("H200-141GB")
    assert m is not None
    ids = {p.id: p for p in m.profiles}
    for pid in (15, 9, 5):
        assert "id UNVERIFIED" in ids[pid].verified
    assert all("placements UNVERIFIED" in p.verified for p in m.profiles)
    assert {"NVIDIA-H200", "NVIDIA-H200-NVL"} <= set(m.gpu_products)


def test_products_resolve_to_one_model() -> None:
    cat = load_catalog()
    seen: dict[str, str] = {}
    for m in cat.models:
        for product in (m.model, *m.gpu_products):
            resolved = cat.by_product(product)
            assert resolved is not None and resolved.model == m.model, product
            assert seen.setdefault(product, m.model) == m.model
    h100 = cat.by_product("NVIDIA-H100-80GB-HBM3-SHARED")
    assert h100 is not None and h100.model == "H100-80GB"
    l40s = cat.by_product("NVIDIA-L40S")
    assert l40s is not None and not l40s.mig_capable and l40s.memory_gb == 48


def _raw_a100() -> dict[str, Any]:
    return {
        "model": "X",
        "migCapable": True,
        "computeSlices": 7,
        "memorySlices": 8,
        "memoryGB": 80,
        "profiles": [
            {"name": "7g.80gb", "computeSlices": 7, "memorySlices": 8, "memoryGB": 80, "maxCount": 1,
             "placements": [0]}
        ],
    }


def test_unknown_field_is_rejected() -> None:
    raw = _raw_a100()
    parse_model(raw, "ok.yaml")
    bad = copy.deepcopy(raw)
    bad["profiles"][0]["placement"] = [0]
    with pytest.raises(CatalogError, match="placement"):
        parse_model(bad, "bad.yaml")


def test_mig_capable_needs_profiles_and_non_mig_has_none() -> None:
    raw = _raw_a100()
    del raw["profiles"]
    with pytest.raises(CatalogError):
        parse_model(raw, "bad.yaml")
    non_mig: dict[str, Any] = {"model": "Y", "migCapable": False, "memoryGB": 24}
    assert parse_model(non_mig, "ok.yaml").profiles == ()
    non_mig["profiles"] = _raw_a100()["profiles"]
    with pytest.raises(CatalogError):
        parse_model(non_mig, "bad.yaml")


def test_every_mig_model_has_its_own_pci_device_ids() -> None:
    # The rendered mig-parted configs pin each layout to its model with device-filter (PCI
    # device << 16 | vendor, mig-parted pkg/types/device.go); an id shared by two models, or a MIG
    # model without ids, would let a layout apply to the wrong GPU.
    owner: dict[int, str] = {}
    for model in load_catalog().models:
        if model.mig_capable:
            assert model.pci_device_ids, model.model
        for pci in model.pci_device_ids:
            value = int(pci, 16)
            assert value & 0xFFFF == 0x10DE, pci  # NVIDIA's PCI vendor id
            assert owner.setdefault(value, model.model) == model.model, (pci, owner[value], model.model)
