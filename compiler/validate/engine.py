"""The validation pass order: envelope, JSON Schema, then every registered semantic rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import compiler.validate.rules  # noqa: F401  (importing the families registers their rules)
from compiler.catalog import Catalog
from compiler.diagnostics import Collector, Diagnostic, has_errors, make
from compiler.load import LoadedDocument
from compiler.model import Policy
from compiler.schemas import API_VERSION, HUMAN_KINDS, KINDS
from compiler.validate.build import build
from compiler.validate.common import short, suggest, type_name, value_at
from compiler.validate.context import Context, Obj, index_pools, index_tiers
from compiler.validate.registry import run_rules
from compiler.validate.schema_errors import schema_diagnostics


def validate(
    documents: Sequence[LoadedDocument], catalog: Catalog, *, incomplete: bool = False
) -> tuple[Policy | None, list[Diagnostic]]:
    """Validate a loaded policy set; a :class:`Policy` only when no diagnostic is an error.

    Diagnostics are sorted by file, line, column and code; every error of every document is
    reported, not only the first. ``incomplete=True`` says some documents could not be loaded
    (already reported): rules that would only complain about their absence (unknown tenant, no
    Fleet) stay quiet, and no Policy is returned.
    """
    ctx = Context(catalog=catalog, incomplete=incomplete)
    profile_names = sorted({p.name for m in catalog.models for p in m.profiles})
    fleets, partitions = _sort_documents(ctx, documents, profile_names)
    _check_fleet_count(ctx, fleets)
    _check_partition_count(ctx, partitions)
    index_tiers(ctx)
    if ctx.fleet_ok:
        index_pools(ctx)
    run_rules(ctx)
    diags = Collector(ctx.diags).finish()  # validate() is a stage of its own too (tests, recommend)
    if has_errors(diags) or not ctx.fleet_ok or not ctx.partition_ok or ctx.incomplete:
        return None, diags
    return build(ctx, documents), diags


def _sort_documents(
    ctx: Context, documents: Sequence[LoadedDocument], profile_names: list[str]
) -> tuple[list[Obj], list[Obj]]:
    """Envelope and schema of every document; the valid ones filed by kind. Returns (fleets, partitions)."""
    fleets: list[Obj] = []
    partitions: list[Obj] = []
    for doc in sorted(documents, key=lambda d: (d.file, d.index)):
        obj = _envelope(ctx, doc)
        if obj is None:
            continue
        kind = str(doc.data["kind"])
        schema_diags = schema_diagnostics(doc, kind, profile_names)
        ctx.diags.extend(schema_diags)
        if has_errors(schema_diags):
            obj.valid = False
            _remember_broken(ctx, kind, value_at(doc.data, ("metadata", "name")))
            if kind == "Fleet":
                fleets.append(obj)
            elif kind == "PartitionPolicy":
                partitions.append(obj)
                ctx.partition_ok = False
            continue
        if kind == "Fleet":
            fleets.append(obj)
        elif kind == "Tenant":
            ctx.tenants.append(obj)
        elif kind == "Workload":
            ctx.workloads.append(obj)
        elif kind == "PartitionPolicy":
            partitions.append(obj)
        # ObservedDemand: machine-owned recommender state, checked by its schema only (compiler.recommend)
    return fleets, partitions


def _remember_broken(ctx: Context, kind: str, name: Any) -> None:
    """Remember the name of a document that failed, so references to it are not also "unknown".

    Also without surrounding whitespace: ``name: |`` gives ``search\\n`` (refused, MIGC109) while the
    workloads refer to ``search``.
    """
    if isinstance(name, str):
        ctx.broken_names.setdefault(kind, set()).update({name, name.strip()})


def _envelope(ctx: Context, doc: LoadedDocument) -> Obj | None:
    data = doc.data
    if not isinstance(data, dict):
        ctx.incomplete = True
        ctx.add(
            doc.at(
                "MIGC011",
                f"document {doc.index + 1} is a {type_name(data)}, not a mapping with apiVersion, kind, "
                "metadata and spec",
            )
        )
        return None
    ok = True
    api = data.get("apiVersion")
    if api is None:
        ctx.add(doc.at("MIGC020", f"missing apiVersion; expected apiVersion: {API_VERSION}"))
        ok = False
    elif api != API_VERSION:
        ctx.add(
            doc.at(
                "MIGC020",
                f"apiVersion {short(api)} is not supported; expected {API_VERSION}",
                ("apiVersion",),
            )
        )
        ok = False
    kind = data.get("kind")
    if kind is None:
        ctx.add(doc.at("MIGC021", f"missing kind; expected one of: {', '.join(HUMAN_KINDS)}"))
        ok = False
    elif kind not in KINDS:
        ctx.add(
            doc.at(
                "MIGC021",
                f"unknown kind {short(kind)}; expected one of: {', '.join(HUMAN_KINDS)}"
                f"{suggest(str(kind), KINDS)}",
                ("kind",),
            )
        )
        ok = False
    if not ok and kind not in KINDS:
        ctx.incomplete = True  # whatever this document was meant to define is missing now
    if not ok and kind in KINDS:
        # remembered so references to this object are not reported as unknown on top of this error
        _remember_broken(ctx, str(kind), value_at(data, ("metadata", "name")))
    return Obj(doc) if ok else None


def _check_fleet_count(ctx: Context, fleets: list[Obj]) -> None:
    if not fleets:
        if ctx.broken_names.get("Fleet") or ctx.incomplete:
            return  # there is a Fleet, already reported for its apiVersion
        ctx.add(
            make(
                "MIGC115",
                "the policy set has no Fleet; exactly one Fleet document describes the clusters and pools",
            )
        )
        return
    if len(fleets) > 1:
        first = fleets[0]
        for extra in fleets[1:]:
            ctx.add(
                extra.doc.at(
                    "MIGC115",
                    "second Fleet document; the first is at "
                    f"{first.doc.file}:{first.doc.position(('kind',))[0]}",
                    ("kind",),
                )
            )
        return
    ctx.fleet = fleets[0]
    # a Fleet that failed its schema is not checked further: pool-dependent rules would only add noise
    ctx.fleet_ok = fleets[0].valid


def _check_partition_count(ctx: Context, partitions: list[Obj]) -> None:
    if len(partitions) > 1:
        first = partitions[0]
        for extra in partitions[1:]:
            ctx.add(
                extra.doc.at(
                    "MIGC116",
                    f"second PartitionPolicy '{value_at(extra.doc.data, ('metadata', 'name'))}'; "
                    f"the first is at {first.doc.file}:{first.doc.position(('kind',))[0]}",
                    ("kind",),
                )
            )
        ctx.partition_ok = False
    elif partitions and ctx.partition_ok:
        ctx.partition = partitions[0]
