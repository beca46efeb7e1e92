"""compiler/observe/model.py: resource names of the device plugin and the observed records' helpers.

Resource naming from NVIDIA/k8s-device-plugin's mixed MIG strategy: ``nvidia.com/mig-<profile>``
with the ``+`` of a profile written ``.`` (``nvidia.com/mig-1g.10gb.me``), and
``nvidia.com/gpu.shared`` under ``renameByDefault``.
"""

from __future__ import annotations

import datetime as dt

import pytest

from compiler.observe.model import (
    Observation,
    ObservedNode,
    ObservedPod,
    Rollout,
    is_gpu_resource,
    profile_of,
    resource_of,
)


@pytest.mark.parametrize(
    ("resource", "managed"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/gpu.shared", True),
        ("nvidia.com/mig-1g.10gb", True),
        ("nvidia.com/mig-1g.10gb.me", True),
        ("nvidia.com/gpu.other", False),
        ("nvidia.com/gpumem", False),  # HAMi's memory resource is not a GPU count
        ("cpu", False),
        ("amd.com/gpu", False),
    ],
)
def test_which_resources_are_gpus(resource: str, managed: bool) -> None:
    assert is_gpu_resource(resource) is managed


def test_profile_and_resource_names_are_inverse() -> None:
    assert profile_of("nvidia.com/mig-1g.10gb.me") == "1g.10gb+me"
    assert profile_of("nvidia.com/mig-3g.40gb") == "3g.40gb"
    assert profile_of("nvidia.com/gpu") is None
    assert profile_of("nvidia.com/gpu.shared") is None
    assert resource_of("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"
    assert resource_of("gpu") == "nvidia.com/gpu"
    for profile in ("1g.5gb", "1g.10gb+me", "7g.80gb", "gpu"):
        resource = resource_of(profile)
        assert is_gpu_resource(resource)
        assert profile_of(resource) == (None if profile == "gpu" else profile)


def _node(**kw: object) -> ObservedNode:
    base: dict[str, object] = {
        "name": "n1",
        "labels": (("a", "1"), ("pool", "train")),
        "allocatable": (),
        "mig_config": None,
        "mig_state": None,
        "applied_config": None,
        "gpu_product": None,
        "gpu_count": None,
        "rollout": Rollout("Idle"),
    }
    base.update(kw)
    return ObservedNode(**base)  # type: ignore[arg-type]


def test_a_node_s_config_is_the_mig_manager_label_else_migc_s_annotation() -> None:
    assert _node().config is None
    assert _node(applied_config="whole").config == "whole"
    assert _node(mig_config="all-1g", applied_config="whole").config == "all-1g"
    assert _node().label("pool") == "train" and _node().label("missing") is None


def test_a_rollout_is_in_progress_outside_idle() -> None:
    assert not Rollout("Idle").in_progress and not Rollout("").in_progress
    assert all(Rollout(p).in_progress for p in ("Cordoned", "Draining", "Applying", "Failed"))


T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _pod(
    name: str,
    node: str | None,
    phase: str = "Pending",
    pending_seconds: float | None = None,
    max_wait_seconds: int | None = None,
) -> ObservedPod:
    requests = (("nvidia.com/gpu", 1),)
    return ObservedPod(
        "ns", name, phase, node, requests, T0, pending_seconds, max_wait_seconds=max_wait_seconds
    )


def test_a_pod_waited_too_long_only_while_pending_past_its_max_wait() -> None:
    assert _pod("p", None, pending_seconds=61.0, max_wait_seconds=60).waited_too_long
    assert not _pod("p", None, pending_seconds=60.0, max_wait_seconds=60).waited_too_long  # not yet over
    assert not _pod("p", None, pending_seconds=600.0).waited_too_long  # no max wait asked for
    assert not _pod("p", "n1", "Running", pending_seconds=600.0, max_wait_seconds=60).waited_too_long
    assert not _pod("p", None, "Unknown", pending_seconds=600.0, max_wait_seconds=60).pending


def test_an_observation_lists_pods_per_node_and_the_pending_ones() -> None:
    pods = (_pod("a", "n1", "Running"), _pod("b", None), _pod("c", "n2", "Running"), _pod("d", "n1"))
    obs = Observation(T0, "snapshot x.json", pods=pods)
    assert [p.key for p in obs.pods_on("n1")] == ["ns/a", "ns/d"]
    assert [p.key for p in obs.pending] == ["ns/b"]  # d is bound to a node: not pending
    assert obs.pods_on("nowhere") == ()
