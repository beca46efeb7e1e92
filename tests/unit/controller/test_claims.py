"""controller/claims.py: which devices a pod holds through its ResourceClaims, read from the API
one by one and cached (the pods and claims: tests/unit/controller/test_claimstatus.py's)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.claims import Device, Held, HeldCache, held
from controller.errors import NotFoundError, PermanentError, TemporaryError
from controller.kube import Kube
from unit.controller.test_claimstatus import claim, pod


class ClaimsKube(Kube):
    """Only ``get_resource_claim``: claims by (namespace, name), or the error to raise; reads counted."""

    def __init__(self, claims: dict[tuple[str, str], dict[str, Any] | Exception]) -> None:
        self.claims = claims
        self.reads: list[str] = []

    def get_resource_claim(self, namespace: str, name: str, *, max_bytes: int = 1 << 20) -> dict[str, Any]:
        self.reads.append(f"{namespace}/{name}")
        got = self.claims.get((namespace, name), NotFoundError(f"resourceclaims {name} not found"))
        if isinstance(got, Exception):
            raise got
        return got


def test_held_reads_every_claim_and_gathers_its_devices() -> None:
    kube = ClaimsKube({("team-a", "c1"): claim(["gpu-0"]), ("team-a", "c2"): claim(["gpu-1-mig-3g40gb-9-4"])})
    got = held(kube, pod(a="c1", b="c2"))
    mig = Device("gpu.nvidia.com", "n1", "gpu-1-mig-3g40gb-9-4")
    assert got == Held((Device("gpu.nvidia.com", "n1", "gpu-0"), mig), None)
    assert kube.reads == ["team-a/c1", "team-a/c2"]


@pytest.mark.parametrize(
    ("error", "why"),
    [
        (NotFoundError("resourceclaims c1 not found"), "not found"),
        (PermanentError("get resourceclaim team-a/c1: forbidden"), "forbidden"),
    ],
)
def test_a_claim_that_cannot_be_read_leaves_the_pod_unknown(error: Exception, why: str) -> None:
    got = held(ClaimsKube({("team-a", "c1"): error}), pod(a="c1"))
    assert got.devices == () and got.unknown is not None and why in got.unknown


def test_a_temporary_error_is_raised_for_the_caller_to_retry() -> None:
    with pytest.raises(TemporaryError):
        held(ClaimsKube({("team-a", "c1"): TemporaryError("the server is busy", status=503)}), pod(a="c1"))


def test_a_claim_reserved_for_another_pod_leaves_the_pod_unknown() -> None:
    got = held(ClaimsKube({("team-a", "c1"): claim(["gpu-0"], reserved=("u-9",))}), pod(a="c1"))
    assert got.unknown == "ResourceClaim team-a/c1: not reserved for this pod"


def test_a_pod_without_a_namespace_is_unknown_before_any_read() -> None:
    kube = ClaimsKube({})
    the_pod = pod(a="c1")
    del the_pod["metadata"]["namespace"]
    assert held(kube, the_pod).unknown == "the pod has no namespace" and kube.reads == []


def test_the_cache_reads_a_running_pods_claims_once_and_an_unknown_answer_again() -> None:
    kube = ClaimsKube({("team-a", "c1"): claim(["gpu-0"])})
    cache = HeldCache()
    first = cache.held(kube, pod(a="c1"))
    assert cache.held(kube, pod(a="c1")) == first and kube.reads == ["team-a/c1"]
    # another pod (another uid) with the same claim name is read on its own
    cache.held(ClaimsKube({("team-a", "c1"): claim(["gpu-0"], reserved=("u-2",))}), pod("u-2", a="c1"))
    missing = ClaimsKube({})
    assert cache.held(missing, pod("u-3", a="gone")).unknown is not None
    assert cache.held(missing, pod("u-3", a="gone")).unknown is not None
    assert missing.reads == ["team-a/gone", "team-a/gone"]  # nothing kept: asked again


def test_the_cache_starts_over_at_its_limit() -> None:
    kube = ClaimsKube({("team-a", "c1"): claim(["gpu-0"], reserved=("u-1", "u-2", "u-3"))})
    cache = HeldCache(limit=2)
    for uid in ("u-1", "u-2", "u-3", "u-1"):
        cache.held(kube, pod(uid, a="c1"))
    # u-3 cleared the full cache (u-1, u-2), so u-1 is read a second time
    assert len(kube.reads) == 4
