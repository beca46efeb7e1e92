"""Checks more than one rule family performs: duplicate names, tiers, profile names."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.load import LoadedDocument
from compiler.validate.common import PathT, suggest, value_at
from compiler.validate.context import Context, Obj, PoolInfo, tier_names


def dupes(ctx: Context, items: list[tuple[str, LoadedDocument, PathT]], what: str, scope: str = "") -> None:
    """MIGC103 for each repeat of a name among ``items``, pointing at the first."""
    seen: dict[str, tuple[LoadedDocument, PathT]] = {}
    for name, doc, path in items:
        if name in seen:
            first_doc, first_path = seen[name]
            line = first_doc.position(first_path)[0]
            ctx.add(
                doc.at(
                    "MIGC103",
                    f"{what} '{name}' is defined twice{scope} (first at {first_doc.file}:{line})",
                    path,
                )
            )
        else:
            seen[name] = (doc, path)


def check_tier(ctx: Context, obj: Obj, path: PathT) -> None:
    """MIGC117 when ``priorityClass`` at ``path`` names no tier."""
    if not ctx.partition_ok:
        return  # tiers come from a PartitionPolicy that did not validate
    value = value_at(obj.doc.data, path)
    if value is not None and value not in tier_names(ctx):
        ctx.add(
            obj.doc.at(
                "MIGC117",
                f"priority class '{value}' is not a tier; tiers: {', '.join(tier_names(ctx))}"
                f"{suggest(str(value), tier_names(ctx))}",
                path,
            )
        )


def me_named_by_workloads(ctx: Context) -> set[str]:
    named: set[str] = set()
    for w in ctx.workloads:
        need = w.spec["need"]
        named.update(p for p in [need.get("profile"), *need.get("profiles", [])] if isinstance(p, str))
    return {p for p in named if p.endswith("+me")}


def allow_me(ctx: Context) -> bool:
    return bool(ctx.partition is not None and ctx.partition.spec.get("allowMediaExtensions", False))


def check_profile_known(
    ctx: Context,
    obj: Obj,
    path: PathT,
    profile: str,
    pools: Sequence[PoolInfo],
    *,
    on_key: bool,
    what: str,
) -> bool:
    """MIGC101 unless some MIG pool among ``pools`` has ``profile``; returns whether it is known."""
    if any(p.model is None for p in pools):
        return False  # a pool's GPU product is unknown (MIGC100): nothing sound can be said about profiles
    models = {p.model.model: p.model for p in pools if p.mig and p.model is not None}
    if any(m.profile(profile) is not None for m in models.values()):
        return True
    candidates = {pr.name for m in models.values() for pr in m.profiles}
    if not models:
        ctx.add(
            obj.doc.at(
                "MIGC101",
                f"{what} profile '{profile}' cannot be used: no pool it applies to is MIG-partitioned",
                path,
                key=on_key,
            )
        )
        return False
    ctx.add(
        obj.doc.at(
            "MIGC101",
            f"{what} profile '{profile}' does not exist on {', '.join(sorted(models))}"
            f"{suggest(profile, candidates)}",
            path,
            key=on_key,
        )
    )
    return False
