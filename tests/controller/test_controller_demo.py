"""The local demo runs end to end against a rendered assignment and exits 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from controller import demo
from controller.emulation import assignment_configmap

DEMO_DATA = Path(demo.__file__).parent / "demo_data"


@pytest.mark.slow
def test_demo_rolls_out_a_rendered_assignment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((DEMO_DATA / "assignment-v2.json").read_text())
    target = tmp_path / "demo" / "migc-system" / "configmap-migc-assignment.yaml"
    target.parent.mkdir(parents=True)
    target.write_text(yaml.safe_dump(assignment_configmap(doc)))

    assert demo.main(["--output", str(tmp_path), "--timeout", "25"]) == 0
    out = capsys.readouterr().out
    assert f"target revision: {target}" in out
    assert "converged in" in out and "0 nodes drifting" in out
    assert "Idle -> Cordoned" in out
