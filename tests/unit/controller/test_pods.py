"""controller/pods.py: which pods block a repartition, and which GPU DaemonSets nothing stops."""

from __future__ import annotations

from typing import Any

import pytest

from controller import pods
from unit.controller.support import pod


def test_gpu_use_is_read_from_requests_limits_and_init_containers() -> None:
    assert pods.uses_gpu(pod("a", "n0", resource="nvidia.com/gpu"))
    assert pods.uses_gpu(pod("b", "n0", resource="nvidia.com/mig-1g.10gb"))
    assert not pods.uses_gpu(pod("c", "n0", resource="cpu"))
    assert not pods.uses_gpu(pod("d", "n0", resource="nvidia.com/gpu-ish"))  # not the resource name
    # renameByDefault: a time-sliced GPU is asked as nvidia.com/gpu.shared, and is held all the same
    assert pods.uses_gpu(pod("e", "n0", resource="nvidia.com/gpu.shared"))
    assert pods.uses_gpu(pod("f", "n0", resource="nvidia.com/mig-1g.10gb.shared"))
    init: dict[str, Any] = {
        "spec": {"initContainers": [{"resources": {"requests": {"nvidia.com/mig-3g.40gb": "1"}}}]}
    }
    assert pods.uses_gpu(init)
    assert not pods.uses_gpu({})  # no spec at all: nothing to hold


@pytest.mark.parametrize(
    ("kwargs", "dra", "blocks"),
    [
        ({}, False, True),
        ({"daemonset": True}, False, False),  # comes straight back; the MIG manager stops operands
        ({"phase": "Succeeded"}, False, False),
        ({"phase": "Failed"}, False, False),
        ({"resource": None}, False, False),
        ({"resource": None}, True, False),  # no claim either
    ],
)
def test_blocking(kwargs: dict[str, Any], dra: bool, blocks: bool) -> None:
    assert pods.blocking(pod("p", "n0", **kwargs), dra=dra) is blocks


def test_a_resource_claim_blocks_only_on_a_dra_node() -> None:
    p = pod("p", "n0", resource=None)
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c"}]
    assert pods.claims_devices(p)
    assert pods.blocking(p, dra=True)
    assert not pods.blocking(p)
    p["spec"]["resourceClaims"] = []
    assert not pods.claims_devices(p)


def test_unmanaged_gpu_daemon_needs_the_gpu_client_selector_to_be_managed() -> None:
    ds = pod("exporter", "n0", daemonset=True)
    assert pods.unmanaged_gpu_daemon(ds)
    ds["spec"]["nodeSelector"] = {pods.GPU_CLIENT_KEY: "true"}
    assert not pods.unmanaged_gpu_daemon(ds)  # the MIG manager pauses it
    assert not pods.unmanaged_gpu_daemon(pod("job", "n0"))  # not a DaemonSet: a drain evicts it
    assert not pods.unmanaged_gpu_daemon(pod("cpu-ds", "n0", daemonset=True, resource="cpu"))


def test_terminating_finished_and_ref() -> None:
    p = pod("p", "n0", namespace="team", deletionTimestamp="2026-12-01T00:00:00Z")
    assert pods.terminating(p) and not pods.terminating(pod("q", "n0"))
    assert pods.finished(pod("r", "n0", phase="Succeeded")) and not pods.finished(pod("s", "n0"))
    assert pods.ref(p) == ("team", "p")
    assert pods.ref({}) == ("", "")
