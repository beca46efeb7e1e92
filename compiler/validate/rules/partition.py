"""PartitionPolicy settings: durations, backoff order, unique tier and rule names."""

from __future__ import annotations

from compiler.load import json_path
from compiler.model import PartitionPolicy
from compiler.validate.common import PathT, parse_duration, value_at
from compiler.validate.context import Context, Obj
from compiler.validate.registry import rule
from compiler.validate.rules.shared import dupes


def _has_partition(ctx: Context) -> bool:
    return ctx.partition is not None


def _positive_duration(ctx: Context, obj: Obj, path: PathT) -> int | None:
    text = str(value_at(obj.doc.data, path))
    seconds = parse_duration(text)
    if seconds is None:
        return None  # the schema already reported the malformed text
    if seconds <= 0:
        ctx.add(obj.doc.at("MIGC114", f"{json_path(path)}: duration {text} must be longer than zero", path))
        return None
    return seconds


@rule("partition-durations", codes=("MIGC114",), when=_has_partition)
def check_durations(ctx: Context) -> None:
    """Durations are longer than zero, and the backoff does not start above its maximum."""
    p = ctx.partition
    assert p is not None
    spec = p.spec
    for key in ("interval", "stabilizationWindow", "scaleDownWindow", "minDwell"):
        if key in spec:
            _positive_duration(ctx, p, ("spec", key))
    backoff = spec.get("backoff", {})
    initial = _positive_duration(ctx, p, ("spec", "backoff", "initial")) if "initial" in backoff else 300
    maximum = _positive_duration(ctx, p, ("spec", "backoff", "max")) if "max" in backoff else 7200
    if initial is not None and maximum is not None and initial > maximum:
        ctx.add(
            p.doc.at(
                "MIGC114",
                f"backoff initial ({backoff.get('initial', '5m')}) is longer than "
                f"max ({backoff.get('max', '2h')})",
                ("spec", "backoff", "initial") if "initial" in backoff else ("spec", "backoff"),
            )
        )


@rule("partition-unique-names", codes=("MIGC103",), when=_has_partition)
def check_unique_names(ctx: Context) -> None:
    """Priority tiers and rules have unique names."""
    p = ctx.partition
    assert p is not None
    spec = p.spec
    if "priorityTiers" in spec:
        dupes(
            ctx,
            [
                (str(t["name"]), p.doc, ("spec", "priorityTiers", i, "name"))
                for i, t in enumerate(spec["priorityTiers"])
            ],
            "priority tier",
        )
    dupes(
        ctx,
        [(str(r["name"]), p.doc, ("spec", "rules", i, "name")) for i, r in enumerate(spec.get("rules", []))],
        "rule",
    )


# Fields only `migc recommend` and `migc simulate` read, and they only act in mode dynamic (see the
# field table in docs/recommend.md). dailyChangeBudget is not here: compile and plan check it in
# every mode (MIGC423). unmetDemand, allowMediaExtensions, objective and priorityTiers act in compile.
DYNAMIC_ONLY = (
    "interval",
    "reconfigurationThreshold",
    "stabilizationWindow",
    "scaleDownWindow",
    "minDwell",
    "backoff",
    "rules",
)


@rule("partition-static-ignores-dynamic-fields", codes=("MIGC180",), when=_has_partition)
def check_static_mode_fields(ctx: Context) -> None:
    """In mode static (the default) the fields only the recommender reads have no effect: say so."""
    p = ctx.partition
    assert p is not None
    spec = p.spec
    mode = str(spec.get("mode", "static"))
    if mode != "static":
        return
    how = "mode is static" if "mode" in spec else "mode is static (the default)"
    for key in DYNAMIC_ONLY:
        if key in spec:
            ctx.add(
                p.doc.at(
                    "MIGC180",
                    f"spec.{key} has no effect: {how}, and only `migc recommend` and `migc simulate` "
                    "read it, in mode dynamic",
                    ("spec", key),
                    key=True,
                )
            )


@rule("partition-scale-down-window", codes=("MIGC182",), when=_has_partition)
def check_scale_down_window(ctx: Context) -> None:
    """A scaleDownWindow shorter than the stabilizationWindow has no effect: say so."""
    p = ctx.partition
    assert p is not None
    spec = p.spec
    if "scaleDownWindow" not in spec:
        return
    down = parse_duration(str(spec["scaleDownWindow"]))
    stab = (
        parse_duration(str(spec["stabilizationWindow"]))
        if "stabilizationWindow" in spec
        else PartitionPolicy().stabilization_seconds
    )
    if down is None or stab is None or down <= 0 or down >= stab:
        return
    ctx.add(
        p.doc.at(
            "MIGC182",
            f"spec.scaleDownWindow ({spec['scaleDownWindow']}) is shorter than the stabilizationWindow "
            f"({spec.get('stabilizationWindow', f'default {stab} s')}): capacity already shrinks only to the "
            "peak of the stabilizationWindow, so it has no effect",
            ("spec", "scaleDownWindow"),
        )
    )
