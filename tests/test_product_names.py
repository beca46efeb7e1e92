"""Unknown GPU products: one error, a suggestion of the same GPU family, the names migc accepts shown;
and every name migc accepts is one ``migc version --catalog`` lists (issue 25, item 11)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compiler.catalog import accepted_names, load_catalog
from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_a_product_of_another_form_factor_suggests_its_own_family_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "prod"
    shutil.copytree(ROOT / "examples" / "prod", policy)
    fleet = policy / "fleet.yaml"
    text = fleet.read_text().replace("gpuProduct: NVIDIA-H100-80GB-HBM3", "gpuProduct: NVIDIA-H100-SXM5-80GB")
    fleet.write_text(text)
    assert main(["validate", str(policy), "-o", "json"]) == 1
    diagnostics = json.loads(capsys.readouterr().out)["diagnostics"]
    assert [d["code"] for d in diagnostics] == ["MIGC100"]  # no MIGC107 cascade from the unknown pool
    message = diagnostics[0]["message"]
    assert "did you mean 'NVIDIA-H100-80GB-HBM3'?" in message
    assert "A100" not in message
    names = "NVIDIA-H100-80GB-HBM3, NVIDIA-H100-PCIe, H100-80GB, NVIDIA-H100-80GB"
    assert f"H100-80GB is accepted as: {names}" in message


def test_a_product_of_no_known_family_gets_no_guess() -> None:
    catalog = load_catalog()
    assert catalog.same_family("NVIDIA-A10G") == ()
    assert catalog.same_family("NVIDIA-L40") == ()  # an L40 is not an L40S
    assert catalog.same_family("NVIDIA-A100-SXM4-80G")[0].model == "A100-SXM4-80GB"


def test_every_accepted_name_is_listed_by_version_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "--catalog"]) == 0
    listing = capsys.readouterr().out
    catalog = load_catalog()
    for model in catalog.models:
        (line,) = [row for row in listing.splitlines() if row.strip().startswith(model.model + " ")]
        for name in accepted_names(model):
            assert name in line, (model.model, name)
            assert catalog.by_product(name) is model
    assert catalog.by_product("NVIDIA-H100-80GB") is not None and "NVIDIA-H100-80GB" in listing
