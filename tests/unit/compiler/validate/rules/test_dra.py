"""compiler/validate/rules/dra.py: the DRA pool and cluster rules alone, on Contexts built by hand.

Each case is one upstream behaviour the module docstring cites (dra-driver-nvidia-gpu feature gates,
isDynamicMIGCapable, Ampere's MIG mode toggle; resource.k8s.io/v1 from Kubernetes 1.34, partitionable
devices on by default from 1.36); the cluster default is Kubernetes 1.31.
"""

from __future__ import annotations

import pytest
from validate_support import context, fleet

from compiler.validate.rules import dra


def _pool(name: str, product: str, extra: str = "") -> str:
    return (
        f"- name: {name}\n  gpuProduct: {product}\n  gpusPerNode: 8\n  nodes: {{names: [{name}-1]}}\n{extra}"
    )


H100 = "NVIDIA-H100-80GB-HBM3"


def _pool_findings(pool: str, version: str = "1.36") -> list[tuple[str, str]]:
    ctx = context(
        fleet(pool).replace("    - name: c\n", f"    - name: c\n      kubernetesVersion: '{version}'\n")
    )
    dra.check_pool_settings(ctx)
    return [(d.code, d.message) for d in ctx.diags]


def test_defaults_are_the_device_plugin_and_static_mig() -> None:
    ctx = context(fleet(_pool("p", H100)))
    (info,) = ctx.pool_list
    assert (dra.allocation(info), dra.dra_mig(info), dra.is_dynamic(info)) == (
        "device-plugin",
        "static",
        False,
    )


@pytest.mark.parametrize(
    ("product", "extra", "code"),
    [
        (H100, "  dra: {mig: dynamic}\n", "MIGC160"),  # dra settings without allocation: dra
        (
            H100,
            "  allocation: dra\n  partitioning: none\n  sharing: {mode: time-slicing, replicas: 2}\n",
            "MIGC163",
        ),
        (H100, "  allocation: dra\n  dra: {mig: dynamic}\n  sharing: {mode: mps, replicas: 2}\n", "MIGC164"),
        ("NVIDIA-L40S", "  allocation: dra\n  dra: {mig: dynamic}\n", "MIGC165"),
        ("NVIDIA-A100-SXM4-80GB", "  allocation: dra\n  dra: {mig: dynamic}\n", "MIGC166"),
        (H100, "  allocation: dra\n  dra: {mig: dynamic}\n  reserve: {wholeGpus: 1}\n", "MIGC168"),
    ],
)
def test_pool_settings_that_cannot_work(product: str, extra: str, code: str) -> None:
    assert [c for c, _ in _pool_findings(_pool("p", product, extra))] == [code]


def test_what_the_driver_supports_passes() -> None:
    assert _pool_findings(_pool("p", H100, "  allocation: dra\n  dra: {mig: dynamic}\n")) == []
    ampere_on = "  allocation: dra\n  dra: {mig: dynamic, migModeEnabled: true}\n"
    assert _pool_findings(_pool("p", "NVIDIA-A100-SXM4-80GB", ampere_on)) == []


@pytest.mark.parametrize(
    ("version", "pools", "expected"),
    [
        (None, _pool("p", H100, "  allocation: dra\n"), ["MIGC161"]),  # default 1.31: no resource.k8s.io/v1
        ("1.34", _pool("p", H100, "  allocation: dra\n"), []),
        ("1.35", _pool("p", H100, "  allocation: dra\n  dra: {mig: dynamic}\n"), ["MIGC162"]),
        (
            "1.36",
            _pool("s", H100, "  allocation: dra\n")
            + _pool("d", H100, "  allocation: dra\n  dra: {mig: dynamic}\n"),
            ["MIGC169"],
        ),
        (None, _pool("p", H100), []),  # no DRA pool: the version does not matter
    ],
)
def test_the_cluster_serves_what_its_dra_pools_need(
    version: str | None, pools: str, expected: list[str]
) -> None:
    text = fleet(pools)
    if version is not None:
        text = text.replace("    - name: c\n", f"    - name: c\n      kubernetesVersion: '{version}'\n")
    ctx = context(text)
    dra.check_cluster(ctx)
    assert [d.code for d in ctx.diags] == expected
