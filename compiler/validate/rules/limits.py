"""Sizes and numbers migc is built and measured for: nodes per pool and cluster, tenants, namespaces
per tenant, workloads, finite numbers and prices. Other rules skip what is over a limit instead of
spending memory on it (a selector ``count: 1000000000`` is never expanded into node names).

The values, and how they were chosen, are in the explanations of MIGC141–MIGC146
(``migc explain MIGC143``); keep the numbers here and there the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from compiler.load import json_path
from compiler.validate.common import PathT
from compiler.validate.context import Context, Obj
from compiler.validate.registry import needs_fleet, rule

MAX_POOL_NODES = 5_000  # Kubernetes' tested limit of nodes per cluster: no real pool is larger
MAX_CLUSTER_NODES = 10_000  # the largest size migc is measured at (bench M4: 80,000 GPUs)
MAX_TENANTS = 1_000
MAX_NAMESPACES_PER_TENANT = 1_000
MAX_WORKLOADS = 3_000
MAX_PRICE = 1_000_000.0  # $ per GPU-hour


def _numbers(value: Any, path: PathT) -> Iterator[tuple[PathT, float]]:
    if isinstance(value, float):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, (*path, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, (*path, i))


def _in_file_order(objs: list[Obj]) -> list[Obj]:
    return sorted(objs, key=lambda o: (o.doc.file, o.doc.index))


def _documents(ctx: Context) -> list[Obj]:
    docs = [*ctx.tenants, *ctx.workloads]
    if ctx.fleet is not None and ctx.fleet.valid:
        docs.append(ctx.fleet)
    if ctx.partition is not None:
        docs.append(ctx.partition)
    return _in_file_order(docs)


def _at_most(ctx: Context, objs: list[Obj], limit: int, code: str, noun: str) -> None:
    """``code`` at the name of the first of ``objs`` (in file order) beyond ``limit``."""
    ordered = _in_file_order(objs)
    if len(ordered) > limit:
        ctx.add(
            ordered[limit].doc.at(
                code,
                f"the policy set has {len(ordered):,} {noun}s; the limit is {limit:,} "
                f"(this is {noun} {limit + 1:,})",
                ("metadata", "name"),
            )
        )


@rule("limits-finite-numbers", codes=("MIGC141",))
def check_finite(ctx: Context) -> None:
    """Every number is finite: ``.inf``, ``.nan`` and ``1e400`` (which YAML reads as infinity) are refused."""
    for obj in _documents(ctx):
        for path, value in _numbers(obj.spec, ("spec",)):
            if not math.isfinite(value):
                ctx.add(obj.doc.at("MIGC141", f"{json_path(path)}: {value!r} is not a finite number", path))


@rule("limits-prices", codes=("MIGC142",), when=needs_fleet)
def check_prices(ctx: Context) -> None:
    """A price per GPU-hour is at most :data:`MAX_PRICE`, so every cost in a plan stays a finite number."""
    assert ctx.fleet is not None
    for key, value in sorted(ctx.fleet.spec.get("pricing", {}).items()):
        if math.isfinite(value) and value > MAX_PRICE:
            ctx.add(
                ctx.fleet.doc.at(
                    "MIGC142",
                    f"price {value:g} per GPU-hour for '{key}' is above the limit of {MAX_PRICE:,.0f}",
                    ("spec", "pricing", key),
                )
            )


@rule("limits-nodes", codes=("MIGC143",), when=needs_fleet)
def check_nodes(ctx: Context) -> None:
    """At most :data:`MAX_POOL_NODES` nodes in a pool and :data:`MAX_CLUSTER_NODES` in a cluster."""
    assert ctx.fleet is not None
    doc = ctx.fleet.doc
    per_cluster: dict[str, int] = {}
    for pool in ctx.pool_list:
        per_cluster[pool.cluster] = per_cluster.get(pool.cluster, 0) + pool.node_count
        if pool.node_count > MAX_POOL_NODES:
            how = "count" if "count" in pool.raw["nodes"] else "names"
            ctx.add(
                doc.at(
                    "MIGC143",
                    f"pool '{pool.name}' has {pool.node_count:,} nodes; "
                    f"the limit is {MAX_POOL_NODES:,} per pool",
                    (*pool.path, "nodes", how),
                )
            )
    first: dict[str, int] = {}  # a repeated cluster name is MIGC103; its pools count together here
    for ci, cluster in enumerate(ctx.fleet.spec["clusters"]):
        first.setdefault(str(cluster["name"]), ci)
    for name, ci in first.items():
        total = per_cluster.get(name, 0)
        if total > MAX_CLUSTER_NODES:
            ctx.add(
                doc.at(
                    "MIGC143",
                    f"cluster '{name}' has {total:,} nodes; the limit is {MAX_CLUSTER_NODES:,} per cluster",
                    ("spec", "clusters", ci, "name"),
                )
            )


@rule("limits-tenants", codes=("MIGC144",))
def check_tenants(ctx: Context) -> None:
    """At most :data:`MAX_TENANTS` tenants."""
    _at_most(ctx, ctx.tenants, MAX_TENANTS, "MIGC144", "tenant")


@rule("limits-namespaces", codes=("MIGC145",))
def check_namespaces(ctx: Context) -> None:
    """At most :data:`MAX_NAMESPACES_PER_TENANT` namespaces in a tenant."""
    for t in _in_file_order(ctx.tenants):
        count = len(t.spec["namespaces"])
        if count > MAX_NAMESPACES_PER_TENANT:
            ctx.add(
                t.doc.at(
                    "MIGC145",
                    f"tenant '{t.name}' has {count:,} namespaces; the limit is "
                    f"{MAX_NAMESPACES_PER_TENANT:,} per tenant",
                    ("spec", "namespaces"),
                )
            )


@rule("limits-workloads", codes=("MIGC146",))
def check_workloads(ctx: Context) -> None:
    """At most :data:`MAX_WORKLOADS` workloads."""
    _at_most(ctx, ctx.workloads, MAX_WORKLOADS, "MIGC146", "workload")
