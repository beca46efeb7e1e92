"""`migc status --kubeconfig` against the API emulator over real HTTP (official client on both sides).

The emulator is the one the controller tests use (``EmulatorThread`` from
tests/controller/emulation.py, test code outside the installed package): kmock's in-memory
Kubernetes API served on 127.0.0.1. The fleet loaded into it is the example fleet's (``statusfleet``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import statusfleet as sf

from compiler.cli import main
from compiler.render.dra import claim_spec

sys.path.insert(0, str(Path(__file__).resolve().parent / "controller"))
import emulation  # tests/controller/emulation.py: the controller tests' API emulator

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def emulator() -> Iterator[object]:
    emu = emulation.EmulatorThread().start()
    try:
        yield emu
    finally:
        emu.stop()


def test_status_of_a_live_cluster(
    emulator: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    emu = emulator
    cluster = sf.fleet()
    cluster["items"].append(
        sf.pod(
            "waiting",
            "speech",
            "nvidia.com/mig-2g.20gb",
            created="2026-12-01T05:00:00Z",
            annotations={"migc.dev/max-wait-time": "30m", "migc.dev/profile-preference": "2g.20gb,2g.35gb"},
        )
    )
    # a pod that asks through a DRA claim (compiler/observe/dra.py): the live read lists the claims too
    claimed = sf.pod("claimed", "speech", None, created="2026-12-01T05:30:00Z")
    claimed["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "mig-1g.10gb"}]
    claimed["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "claimed-gpu"}]
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claimed-gpu", "namespace": "speech"},
        "spec": claim_spec(["1g.10gb"]),
    }
    pool = {"name": "gpu-a100-use1-01", "generation": 1, "resourceSliceCount": 1}
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "gpu-a100-use1-01-gpu.nvidia.com-abcde"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-a100-use1-01", "pool": pool, "devices": []},
    }
    cluster["items"] += [claimed, claim, slice_]
    applying = next(i for i in cluster["items"] if i["metadata"]["name"] == "gpu-a100-use1-02")
    applying["metadata"]["annotations"]["migc.dev/phase"] = "Draining"
    kinds = {
        "Node": emulation.NODES,
        "Pod": emulation.PODS,
        "ResourceClaim": emulation.RESOURCECLAIMS,
        "ResourceSlice": emulation.RESOURCESLICES,
    }
    for obj in cluster["items"]:
        meta = obj["metadata"]
        emu.upsert(kinds[obj["kind"]], meta.get("namespace"), meta["name"], obj)  # type: ignore[attr-defined]
    config = tmp_path / "kubeconfig"
    config.write_text(sf.kubeconfig(emu.url))  # type: ignore[attr-defined]
    rc = main(sf.status_argv("--kubeconfig", str(config), "-o", "json"))
    out, err = capsys.readouterr()
    assert rc == 0, err
    body = json.loads(out)
    assert body["source"].startswith("cluster http://127.0.0.1:")
    snap = sf.write_snapshot(tmp_path / "snap.json", cluster)
    assert main(sf.status_argv("--snapshot", str(snap), "-o", "json")) == 0
    offline = json.loads(capsys.readouterr().out)
    # the live read and the snapshot of the same objects describe the same fleet
    for key in ("nodes", "pools", "tenants", "pending", "cost", "missing_nodes", "unmanaged_nodes"):
        assert body[key] == offline[key], key
    assert [p["pod"] for p in body["pending"]] == ["speech/claimed", "speech/waiting"]
    assert body["pending"][1]["over_max_wait"] is True and body["pending"][1]["preference"] == [
        "2g.20gb",
        "2g.35gb",
    ]
    assert [n["name"] for n in body["nodes"] if n["rolling_out"]] == ["gpu-a100-use1-02"]
    # the reader only lists (read-only, cluster-wide) and asks for pages
    calls = emu.calls()  # type: ignore[attr-defined]
    assert {(c.verb, c.resource, c.namespace) for c in calls} == {
        ("list", "nodes", None),
        ("list", "pods", None),
        ("list", "resourceclaims", None),
        ("list", "resourceslices", None),
    }
    assert all(c.params.get("limit") == "500" for c in calls)
