"""The PartitionPolicy's ``rules``: the pools they scope to exist, and the profiles they name exist
there (``+me`` profiles only when asked for); a rule scoped to pools has a Workload it can grow there."""

from __future__ import annotations

from compiler.validate.common import PathT, listing, suggest
from compiler.validate.context import Context
from compiler.validate.registry import rule
from compiler.validate.rules.shared import allow_me, check_profile_known, me_named_by_workloads


def _applies(ctx: Context) -> bool:
    return ctx.partition is not None and ctx.fleet_ok


@rule("partition-rules", codes=("MIGC101", "MIGC102", "MIGC106"), when=_applies)
def check_rules(ctx: Context) -> None:
    p = ctx.partition
    assert p is not None
    all_pools = list(ctx.pools.values())
    pool_names = {pool.name for pool in all_pools}
    me_named = me_named_by_workloads(ctx)
    for ri, r in enumerate(p.spec.get("rules", [])):
        base: PathT = ("spec", "rules", ri)
        scope = all_pools
        if "pools" in r:
            for i, name in enumerate(r["pools"]):
                if name not in pool_names:
                    ctx.add(
                        p.doc.at(
                            "MIGC106",
                            f"rule '{r['name']}' names unknown pool '{name}'; "
                            f"pools: {listing(pool_names)}"
                            f"{suggest(name, pool_names)}",
                            (*base, "pools", i),
                        )
                    )
            scope = [pool for pool in all_pools if pool.name in r["pools"]]
            if len({pool.name for pool in scope}) < len(r["pools"]):
                continue  # an unknown pool was reported; profiles cannot be judged against a partial scope
        targets = [((*base, "prefer", "maximize"), str(r["prefer"]["maximize"]))]
        if "profile" in r["when"]:
            targets.append(((*base, "when", "profile"), str(r["when"]["profile"])))
        for path, profile in targets:
            if profile.endswith("+me") and profile not in me_named and not allow_me(ctx):
                ctx.add(
                    p.doc.at(
                        "MIGC102",
                        f"rule '{r['name']}' names '{profile}' but no workload asks for it and "
                        "allowMediaExtensions is false",
                        path,
                    )
                )
                continue
            check_profile_known(ctx, p, path, profile, scope, on_key=False, what=f"rule '{r['name']}':")


def _first_profile(need: dict[str, object]) -> str | None:
    if "profile" in need:
        return str(need["profile"])
    profiles = need.get("profiles")
    return str(profiles[0]) if isinstance(profiles, list) and profiles else None


def _dynamic_rules_with_pools(ctx: Context) -> bool:
    p = ctx.partition
    return (
        _applies(ctx)
        and not ctx.incomplete
        and p is not None
        and p.spec.get("mode") == "dynamic"
        and any("pools" in r for r in p.spec.get("rules", []))
    )


@rule("partition-rule-pools-reachable", codes=("MIGC181",), when=_dynamic_rules_with_pools)
def check_rule_pools_reachable(ctx: Context) -> None:
    """A rule with ``pools`` acts only through a Workload confined to them (compiler.recommend.engine)."""
    p = ctx.partition
    assert p is not None
    known = {pool.name for pool in ctx.pools.values()}
    only_cluster = ctx.clusters[0] if len(ctx.clusters) == 1 else None
    for ri, r in enumerate(p.spec.get("rules", [])):
        if "pools" not in r or not set(r["pools"]) <= known:
            continue  # no scope, or an unknown pool (MIGC106)
        allowed = set(r["pools"])
        maximize = str(r["prefer"]["maximize"])
        reachable = False
        for w in ctx.workloads:
            if not w.valid or _first_profile(w.spec.get("need", {})) != maximize:
                continue
            cluster = w.spec.get("cluster", only_cluster)
            where = set(w.spec.get("pools", [])) or {
                pool.name
                for (c, _), pool in ctx.pools.items()
                if c == cluster and pool.mig and pool.model is not None and pool.model.profile(maximize)
            }
            if where and where <= allowed:
                reachable = True
                break
        if not reachable:
            ctx.add(
                p.doc.at(
                    "MIGC181",
                    f"rule '{r['name']}' can never add {maximize} instances: no Workload whose first profile "
                    f"is {maximize} is confined to pools {listing(allowed)} (its spec.pools, or every pool "
                    "of its cluster with the profile)",
                    ("spec", "rules", ri, "pools"),
                    key=True,
                )
            )
