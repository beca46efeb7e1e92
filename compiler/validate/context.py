"""What the semantic rules share: the schema-valid documents, the pools and tiers indexed once, and
the list of diagnostics (see :mod:`compiler.validate.registry` for how rules add to it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.catalog import Catalog, GpuModel
from compiler.diagnostics import Diagnostic
from compiler.load import LoadedDocument, json_path
from compiler.model import PartitionPolicy, PriorityTier, Share, Span, Spread
from compiler.validate.common import PathT


@dataclass
class Obj:
    """A schema-valid document with convenience accessors."""

    doc: LoadedDocument
    valid: bool = True  # passed its JSON Schema

    @property
    def name(self) -> str:
        return str(self.doc.data["metadata"]["name"])

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.doc.data["spec"]
        return spec

    def span(self, path: PathT = ()) -> Span:
        line, col = self.doc.position(path)
        return Span(self.doc.file, line, col, json_path(path))

    def where(self) -> str:
        line, _ = self.doc.position(("metadata", "name"))
        return f"{self.doc.file}:{line}"


@dataclass
class PoolInfo:
    cluster: str
    name: str
    raw: dict[str, Any]
    path: PathT
    model: GpuModel | None
    mig: bool
    node_count: int
    sharing_mode: str
    partitioning: str

    @property
    def gpus_per_node(self) -> int:
        return int(self.raw["gpusPerNode"])

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.node_count

    def partitionable_gpus(self) -> int:
        reserve = self.raw.get("reserve", {})
        held = int(reserve.get("wholeGpus", 0)) + int(reserve.get("wholeNodes", 0)) * self.gpus_per_node
        if held > self.total_gpus:
            return self.total_gpus  # an impossible reserve is MIGC112; do not let it cascade into bounds
        return self.total_gpus - held


@dataclass
class Context:
    catalog: Catalog
    diags: list[Diagnostic] = field(default_factory=list)
    fleet: Obj | None = None
    fleet_ok: bool = False  # a single, schema-valid Fleet: pool-dependent rules can run
    tenants: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)
    partition: Obj | None = None
    partition_ok: bool = True  # no PartitionPolicy, or a schema-valid one
    incomplete: bool = False  # documents are missing (unloadable, or of unknown kind)
    broken_names: dict[str, set[str]] = field(default_factory=dict)  # kind → names of schema-invalid docs
    pools: dict[tuple[str, str], PoolInfo] = field(default_factory=dict)  # first pool of each name
    pool_list: list[PoolInfo] = field(default_factory=list)  # every pool in Fleet order, duplicates too
    clusters: list[str] = field(default_factory=list)
    tiers: list[PriorityTier] = field(default_factory=list)
    allowed_codes: frozenset[str] | None = None  # set by the rule runner to the running rule's codes
    running: str = ""

    def add(self, d: Diagnostic) -> None:
        if self.allowed_codes is not None and d.code not in self.allowed_codes:
            raise ValueError(f"validation rule {self.running} reported {d.code}, which it does not declare")
        self.diags.append(d)


def index_tiers(ctx: Context) -> None:
    """The priority tiers: the PartitionPolicy's, or the defaults."""
    p = ctx.partition
    if p is not None and "priorityTiers" in p.spec:
        ctx.tiers = [
            PriorityTier(
                str(t["name"]),
                int(t["value"]),
                str(t.get("description", "")),
                spread_from_raw(t.get("spread")),
            )
            for t in p.spec["priorityTiers"]
        ]
    else:
        ctx.tiers = list(PartitionPolicy().tiers)


def index_pools(ctx: Context) -> None:
    """Clusters and pools of a valid Fleet, with their catalog model resolved (None when unknown)."""
    fleet = ctx.fleet
    assert fleet is not None
    for ci, cluster in enumerate(fleet.spec["clusters"]):
        cname = str(cluster["name"])
        if cname not in ctx.clusters:
            ctx.clusters.append(cname)
        for pi, pool in enumerate(cluster["nodePools"]):
            names = pool["nodes"].get("names")
            count = len(names) if names is not None else int(pool["nodes"]["count"])
            model = ctx.catalog.by_product(str(pool["gpuProduct"]))
            sharing_mode = str(pool.get("sharing", {}).get("mode", "none"))
            # a HAMi pool is never laid out by migc: HAMi shares (or, in its mig mode, partitions) it
            migc_mig = model is not None and model.mig_capable and sharing_mode != "hami"
            partitioning = str(pool.get("partitioning", "mig" if migc_mig else "none"))
            info = PoolInfo(
                cluster=cname,
                name=str(pool["name"]),
                raw=pool,
                path=("spec", "clusters", ci, "nodePools", pi),
                model=model,
                mig=partitioning == "mig" and model is not None and model.mig_capable,
                node_count=count,
                sharing_mode=sharing_mode,
                partitioning=partitioning,
            )
            ctx.pools.setdefault((cname, info.name), info)
            ctx.pool_list.append(info)


def _share(raw: Any) -> Share:
    if raw is None:
        return Share()
    if isinstance(raw, str):
        return Share(percent=int(raw.rstrip("%")))
    return Share(count=int(raw))


def spread_from_raw(raw: dict[str, Any] | None) -> Spread | None:
    """A schema-valid ``spread`` (of a Workload or a priority tier)."""
    if raw is None:
        return None
    return Spread(
        min_nodes=int(raw.get("minNodes", 0)),
        max_per_node=_share(raw.get("maxPerNode")),
        topology_key=str(raw.get("topologyKey", "")),
        max_per_domain=_share(raw.get("maxPerDomain")),
    )


def spread_applies(spec: dict[str, Any]) -> bool:
    """Whether a workload's replicas are MIG instances or single whole GPUs (what spread covers)."""
    need = spec["need"]
    return "hami" not in need and isolation(spec) != "shared" and int(need.get("gpus", 1)) <= 1


def tier_names(ctx: Context) -> list[str]:
    return [t.name for t in ctx.tiers]


def default_tier(ctx: Context) -> str:
    return min(ctx.tiers, key=lambda t: (t.value, t.name)).name


def isolation(spec: dict[str, Any]) -> str:
    """A workload's isolation, defaulted from its need."""
    need = spec["need"]
    default = "exclusive" if "gpus" in need else "shared" if "hami" in need else "hardware"
    return str(spec.get("isolation", default))
