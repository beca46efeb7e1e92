"""What ``migc advise`` reports: plain frozen data, built by :mod:`compiler.advise.tree` and
:mod:`compiler.advise.sizing`, written by :mod:`compiler.advise.report` (``FORMATS``); each record's
``to_dict`` is its JSON form (``migc advise -o json``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Mode = Literal["mig", "mps", "time-slicing", "whole-gpu"]
"""Sharing modes the decision tree chooses between. HAMi (issue 13) is not one yet: when the pool
model carries it, add ``"hami"`` here and one rule in :data:`compiler.advise.tree.RULES`."""

Severity = Literal["note", "warning"]


@dataclass(frozen=True)
class Finding:
    """One reason or risk, citing the rule (a MIGC5xx code ``migc explain`` explains)."""

    code: str
    severity: Severity
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "severity": self.severity, "message": self.message}


@dataclass(frozen=True)
class PoolAdvice:
    cluster: str
    pool: str
    gpu_model: str
    gpus: int
    current: str  # "mig", "time-slicing x4", "mps x2", "whole-gpu"
    recommended: Mode | None  # None: the pool serves no demand
    partition_mode: Literal["static", "dynamic"] | None  # advised layout mode for MIG pools
    findings: tuple[Finding, ...]  # reasons first, then costs and risks

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "pool": self.pool,
            "gpuModel": self.gpu_model,
            "gpus": self.gpus,
            "current": self.current,
            "recommended": self.recommended,
            "partitionMode": self.partition_mode,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class SizingRow:
    gpu_model: str
    price_per_gpu_hour: float
    mig: bool  # the model's GPUs are partitioned with MIG in this row
    gpus: int  # the solver's optimum
    gpus_per_node: int
    nodes: int
    replicas_served: int
    replicas_wanted: int
    balanced_gpus: int | None  # all-balanced baseline; None on models without MIG
    whole_gpus: int  # one whole GPU per pod (a k-GPU pod takes k)
    optimal: bool  # the solver proved the count optimal

    @property
    def complete(self) -> bool:
        return self.replicas_served == self.replicas_wanted

    @property
    def cost_per_hour(self) -> float:
        return round(self.gpus * self.price_per_gpu_hour, 4)

    @property
    def balanced_saving_per_hour(self) -> float | None:
        if self.balanced_gpus is None:
            return None
        return round((self.balanced_gpus - self.gpus) * self.price_per_gpu_hour, 4)

    @property
    def whole_saving_per_hour(self) -> float:
        return round((self.whole_gpus - self.gpus) * self.price_per_gpu_hour, 4)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpuModel": self.gpu_model,
            "mig": self.mig,
            "pricePerGpuHour": self.price_per_gpu_hour,
            "gpus": self.gpus,
            "gpusPerNode": self.gpus_per_node,
            "nodes": self.nodes,
            "costPerHour": self.cost_per_hour,
            "replicasServed": self.replicas_served,
            "replicasWanted": self.replicas_wanted,
            "complete": self.complete,
            "optimal": self.optimal,
            "allBalancedGpus": self.balanced_gpus,
            "savingVsAllBalancedPerHour": self.balanced_saving_per_hour,
            "wholeGpuPerPodGpus": self.whole_gpus,
            "savingVsWholeGpuPerPodPerHour": self.whole_saving_per_hour,
        }


@dataclass(frozen=True)
class ClusterSizing:
    cluster: str
    rows: tuple[SizingRow, ...]  # cheapest complete row first, then by model
    findings: tuple[Finding, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "rows": [r.to_dict() for r in self.rows],
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class Advice:
    pools: tuple[PoolAdvice, ...]  # sorted by (cluster, pool)
    sizing: tuple[ClusterSizing, ...]  # sorted by cluster
    findings: tuple[Finding, ...] = ()  # policy-wide (observed demand)

    def to_dict(self) -> dict[str, Any]:
        """The advice as ``migc advise -o json`` writes it (keys sorted there)."""
        return {
            "pools": [p.to_dict() for p in self.pools],
            "sizing": [s.to_dict() for s in self.sizing],
            "findings": [f.to_dict() for f in self.findings],
        }

    def pool(self, cluster: str, pool: str) -> PoolAdvice:
        for p in self.pools:
            if (p.cluster, p.pool) == (cluster, pool):
                return p
        raise KeyError((cluster, pool))
