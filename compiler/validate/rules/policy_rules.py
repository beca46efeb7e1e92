"""The PartitionPolicy's ``rules``: the pools they scope to exist, and the profiles they name exist
there (``+me`` profiles only when asked for)."""

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
