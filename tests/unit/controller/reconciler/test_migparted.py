"""controller/reconciler/migparted.py: which configs the MIG manager and the device plugin know."""

from __future__ import annotations

import types

import pytest

from controller.reconciler import migparted
from controller.reconciler.migparted import MigPartedError, MountedConfigs, config_names, device_plugin_names
from unit.controller.support import FakeKube, configmap

REF = {"namespace": "gpu-operator", "name": "mig-parted"}


def _kube(text: str | None) -> FakeKube:
    data = {} if text is None else {"config.yaml": text}
    return FakeKube(configmaps=[configmap("gpu-operator", "mig-parted", data)])


def test_config_names_are_the_mig_configs_keys() -> None:
    text = "version: v1\nmig-configs:\n  all-1g.10gb:\n    - devices: all\n  all-disabled: []\n"
    assert config_names(_kube(text), REF) == {"all-1g.10gb", "all-disabled"}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (None, "has no key config.yaml"),
        ("mig-configs: [unclosed", "is not YAML"),
        ("version: v1\n", "has no mig-configs mapping"),
        ("- a\n- b\n", "has no mig-configs mapping"),
        ("mig-configs: [a, b]\n", "has no mig-configs mapping"),
        ("x" * (migparted.MAX_BYTES + 1), "larger than"),
    ],
)
def test_config_names_refuses(text: str | None, match: str) -> None:
    with pytest.raises(MigPartedError, match=match):
        config_names(_kube(text), REF)


def test_a_missing_configmap_is_a_mig_parted_error() -> None:
    with pytest.raises(MigPartedError, match="mig-parted ConfigMap gpu-operator/mig-parted not found"):
        config_names(FakeKube(), REF)
    with pytest.raises(MigPartedError, match="device-plugin ConfigMap ns/dp not found"):
        device_plugin_names(FakeKube(), "ns/dp")


def test_device_plugin_names_are_the_keys() -> None:
    kube = FakeKube(configmaps=[configmap("ns", "dp", {"mixed": "", "migc-whole-gpus": ""})])
    assert device_plugin_names(kube, "ns/dp") == {"mixed", "migc-whole-gpus"}


def test_mounted_configs_wait_the_sync_delay_from_first_sight(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [500.0]
    monkeypatch.setattr(migparted, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    kube = _kube("mig-configs: {a: [], b: []}\n")
    m = MountedConfigs(90.0)
    assert m.wait_left(REF, "a") == 90.0  # never read: the whole delay
    assert m.read(kube, REF) == {"a", "b"}
    clock[0] += 60.0
    assert m.wait_left(REF, "a") == 30.0
    m.read(kube, REF)  # a second read does not restart the clock
    clock[0] += 40.0
    assert m.wait_left(REF, "a") == 0.0
    kube.configmaps[("gpu-operator", "mig-parted")]["data"]["config.yaml"] = "mig-configs: {b: []}\n"
    m.read(kube, REF)
    kube.configmaps[("gpu-operator", "mig-parted")]["data"]["config.yaml"] = "mig-configs: {a: [], b: []}\n"
    m.read(kube, REF)
    assert m.wait_left(REF, "a") == 90.0  # removed and back: the kubelet's copy may lag again
    assert m.wait_left(REF, "b") == 0.0
    assert m.wait_left({"namespace": "other", "name": "mig-parted"}, "b") == 90.0
