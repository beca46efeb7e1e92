"""compiler/render/names.py: mig-parted and device-plugin config names are valid label values,
readable, derived from the content only, and stable."""

from __future__ import annotations

import pytest
from test_render_support import BALANCED, SEVEN_SMALL, WHOLE

from compiler.catalog import load_catalog
from compiler.model import GpuLayout
from compiler.render.names import (
    ALL_DISABLED,
    WHOLE_GPUS_CONFIG,
    device_plugin_config_name,
    gpu_token,
    is_label_value,
    mig_config_name,
    node_description,
    runs,
)

A100 = load_catalog().get("A100-SXM4-80GB")
KEY = "A100-SXM4-80GB"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("a", True),
        ("migc-a100-7x1g.10gb", True),
        ("-a", False),
        ("a.", False),
        ("a b", False),
        ("x" * 63, True),
        ("x" * 64, False),
        ("a\n", False),
    ],
)
def test_is_label_value_follows_the_kubernetes_rule(value: str, ok: bool) -> None:
    assert is_label_value(value) is ok


def test_tokens_read_largest_instance_first() -> None:
    assert gpu_token(A100, BALANCED) == "1x3g.40gb-1x2g.20gb-2x1g.10gb"
    assert gpu_token(A100, WHOLE) == "whole"
    assert gpu_token(A100, GpuLayout(mig_enabled=True)) == "mig-empty"
    assert gpu_token(A100, GpuLayout.of({"1g.10gb+me": 1})) == "1x1g.10gb.me"  # "+" is no label character


def test_runs_and_description_group_consecutive_identical_gpus() -> None:
    layout = (BALANCED, BALANCED, WHOLE, BALANCED)
    assert runs(layout) == [(0, 1, BALANCED), (2, 2, WHOLE), (3, 3, BALANCED)]
    assert node_description(A100, layout) == (
        "gpu 0-1: 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb; gpu 2: MIG disabled (whole GPU); "
        "gpu 3: 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb"
    )


def test_config_names_are_readable_where_they_fit_and_hashed_where_not() -> None:
    assert A100 is not None
    short = A100.short_name
    assert mig_config_name(A100, KEY, (WHOLE,) * 8) == ALL_DISABLED
    assert mig_config_name(A100, KEY, (SEVEN_SMALL,) * 8) == f"migc-{short}-7x1g.10gb"
    mixed = (SEVEN_SMALL,) * 6 + (WHOLE,) * 2
    assert mig_config_name(A100, KEY, mixed) == f"migc-{short}-6gpu-7x1g.10gb_2gpu-whole"
    # eight different GPUs: the readable name is over 63 characters, so it is hashed, and stays valid
    tangled = tuple((BALANCED, SEVEN_SMALL)[i % 2] for i in range(8))
    name = mig_config_name(A100, KEY, tangled)
    assert is_label_value(name) and name.startswith(f"migc-{short}-")
    assert len(name) == len(f"migc-{short}-") + 10  # ten hex digits of the content hash
    assert mig_config_name(A100, KEY, tangled) == name  # content only: the same every run
    assert mig_config_name(A100, KEY, tangled[::-1]) != name  # other GPU order, other content


def test_device_plugin_config_names() -> None:
    assert device_plugin_config_name(True, "time-slicing", 4) == "migc-mig-mixed"  # MIG wins
    assert device_plugin_config_name(False, "time-slicing", 4) == "migc-time-slicing-4"
    assert device_plugin_config_name(False, "mps", 2) == "migc-mps-2"
    assert device_plugin_config_name(False, "none", 1) == WHOLE_GPUS_CONFIG
