"""What a change to the policy does to the fleet: the diff of a :class:`Solution` against what is deployed.

A :class:`Plan` answers the reviewer's questions, per cluster: which nodes get reconfigured and
why (per GPU, before → after), how capacity per pool and profile moves, what each tenant gets
before → after, which demand stays unmet, which GPU pods get evicted (given a cluster snapshot),
and what the GPUs in use cost per hour before, after, and under the GPU Operator's ``all-balanced``
default. It renders as text, markdown (a pull-request comment), JSON, and SVG slice pictures.

Modules: :mod:`.data` (the dataclasses), :mod:`.diff` (:func:`build_plan`), :mod:`.snapshot`
(cluster pods and evictions), one module per output format (:mod:`.text`, :mod:`.markdown`,
:mod:`.json`, :mod:`.svg`), :mod:`.formatting` (what they share) and :mod:`.report` (``FORMATS``:
the ``migc plan -o`` choices and the writer of each). Nothing here writes files: the commands do,
through their safe writer.
"""

from __future__ import annotations

from compiler.plan.data import (
    CapacityRow,
    Cost,
    Eviction,
    NodeChange,
    Plan,
    RemovedNode,
    TenantRow,
    Unmet,
)
from compiler.plan.diff import build_plan, gpus_in_use
from compiler.plan.formatting import gpu_text
from compiler.plan.json import to_json
from compiler.plan.markdown import to_markdown
from compiler.plan.snapshot import SnapshotError, parse_snapshot, snapshot_diagnostic
from compiler.plan.svg import svg_files, svg_name, to_svg
from compiler.plan.text import to_text

__all__ = [
    "CapacityRow",
    "Cost",
    "Eviction",
    "NodeChange",
    "Plan",
    "RemovedNode",
    "SnapshotError",
    "TenantRow",
    "Unmet",
    "build_plan",
    "gpu_text",
    "gpus_in_use",
    "parse_snapshot",
    "snapshot_diagnostic",
    "svg_files",
    "svg_name",
    "to_json",
    "to_markdown",
    "to_svg",
    "to_text",
]
