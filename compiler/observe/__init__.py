"""Observed state of a cluster: GPU nodes, GPU pods and their hints, and (optionally) GPU usage.

Shared by ``migc status`` and ``migc recommend``. Entry points: :func:`read_snapshots`,
:func:`read_cluster` and :func:`compiler.observe.prometheus.instance_usage`.
"""

from compiler.observe.model import Observation, ObservedNode, ObservedPod, Rollout
from compiler.observe.read import ObserveError, read_cluster, read_snapshots

__all__ = [
    "Observation",
    "ObserveError",
    "ObservedNode",
    "ObservedPod",
    "Rollout",
    "read_cluster",
    "read_snapshots",
]
