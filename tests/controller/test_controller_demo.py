"""The local demo runs end to end against a rendered assignment and exits 0."""

from __future__ import annotations

import json
from pathlib import Path

import demo
import pytest
import yaml
from emulation import assignment_configmap

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


# controller/README.md's state machine (and README.md's): each edge the demo may print. A node with
# no MIG manager switches its device-plugin config in the write that enters Verifying
# (controller/reconciler/apply.py device_plugin_only), so Draining -> Verifying is an edge too.
EDGES = {
    ("Idle", "Cordoned"),
    ("Cordoned", "Draining"),
    ("Draining", "Applying"),
    ("Draining", "Verifying"),
    ("Applying", "Verifying"),
    ("Verifying", "Done"),
    ("Done", "Idle"),
}


@pytest.mark.slow
def test_demo_prints_every_phase_of_the_state_machine(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo reads the phases from the API server's request log, so no phase is skipped the way a
    sampling poll skipped short ones (issue 25, item 18): every printed transition is an edge of the
    documented state machine and every node goes Idle -> ... -> Done -> Idle."""
    assert demo.main(["--timeout", "60"]) == 0
    out = capsys.readouterr().out
    paths: dict[str, list[str]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0].endswith("s") and parts[3] == "->":
            node, before, after = parts[1], parts[2], parts[4]
            assert (before, after) in EDGES, line
            path = paths.setdefault(node, [before])
            assert path[-1] == before, (node, path, line)
            path.append(after)
    assert paths
    for node, path in paths.items():
        assert path[0] == "Idle" and path[-2:] == ["Done", "Idle"], (node, path)
        assert "Draining" in path and "Verifying" in path, (node, path)
