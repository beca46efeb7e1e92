"""Loaded documents → a frozen :class:`compiler.model.Policy`, or every diagnostic explaining why not.

Three passes, each collecting *all* its findings:

1. envelope: every document is a mapping with ``apiVersion: migc.dev/v1alpha1`` and a known ``kind``;
2. JSON Schema of the kind, errors translated to the line/col of the offending node with a
   specific code (unknown field → MIGC031 with a did-you-mean, bad name → MIGC109, ...);
3. semantic rules (MIGC1xx): cross-references, uniqueness, catalog facts, bounds.

Semantic rules only look at documents that passed their schema, so they can trust types; the
names of documents that failed are still remembered so a reference to them is not reported as
"unknown" a second time. A :class:`Policy` is returned only when there is no error.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import zoneinfo
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from compiler.catalog import Catalog, GpuModel
from compiler.diagnostics import Diagnostic, has_errors, make, sort_key
from compiler.load import LoadedDocument, json_path
from compiler.model import (
    WHOLE_GPU,
    Cluster,
    MaintenanceWindow,
    Need,
    NodePool,
    PartitionPolicy,
    Policy,
    PriorityTier,
    Quota,
    Rule,
    RuleCondition,
    Sharing,
    Span,
    Tenant,
    Workload,
    frozen_counts,
)
from compiler.schemas import (
    API_VERSION,
    DNS_LABEL_PATTERN,
    DURATION_PATTERN,
    KINDS,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    NODE_NAME_PATTERN,
    PERCENT_PATTERN,
    PROFILE_PATTERN,
    TIME_OF_DAY_PATTERN,
    kind_schemas,
)

PathT = tuple[str | int, ...]

_PATTERN_WORDS = {
    PERCENT_PATTERN: 'a percentage such as "25%"',
    TIME_OF_DAY_PATTERN: 'a time of day "HH:MM" (24 h)',
    PROFILE_PATTERN: "a MIG profile name such as 1g.10gb or 3g.40gb",
    "^1\\.[0-9]{1,2}$": 'a Kubernetes minor version such as "1.31"',
    LABEL_KEY_PATTERN: "a Kubernetes label key (an optional DNS prefix and '/', then letters, digits, "
    "'-', '_', '.')",
    LABEL_VALUE_PATTERN: "a Kubernetes label value (at most 63 letters, digits, '-', '_', '.', "
    "alphanumeric at both ends)",
}
_DURATION_RE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


@functools.cache
def _validators() -> dict[str, jsonschema.Draft202012Validator]:
    return {kind: jsonschema.Draft202012Validator(schema) for kind, schema in kind_schemas().items()}


def parse_duration(text: str) -> int | None:
    """``1h30m`` → 5400 seconds; None when malformed."""
    m = _DURATION_RE.match(text)
    if not m or not text:
        return None
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def unique_sorted(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Sorted for reports, exact repeats dropped.

    Not ``set()``: Diagnostic equality compares only file, line, col and code, so two different
    messages at one spot (two missing fields of one mapping) would collapse into one.
    """
    seen: set[tuple[str, int, int, str, str, str]] = set()
    out: list[Diagnostic] = []
    for d in sorted(diagnostics, key=sort_key):
        key = (d.file, d.line, d.col, d.code, d.message, d.path)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _suggest(value: str, candidates: Iterable[str]) -> str:
    pool = sorted(set(candidates))
    lowered = {c.lower(): c for c in pool}
    hits = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean '{lowered[hits[0]]}'?" if hits else ""


def _listing(items: Iterable[str]) -> str:
    values = sorted(set(items))
    return ", ".join(values) if values else "(none)"


# ---------------------------------------------------------------------------------------------------------
# Schema errors → diagnostics


def _schema_diagnostics(doc: LoadedDocument, kind: str, profiles: Sequence[str]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    errors = sorted(
        _validators()[kind].iter_errors(doc.data),
        key=lambda e: (json_path(e.absolute_path), str(e.validator), e.message),
    )
    for error in errors:
        out.extend(_translate(doc, error, profiles))
    return out


def _value_at(data: Any, path: Sequence[str | int]) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _translate(doc: LoadedDocument, error: ValidationError, profiles: Sequence[str]) -> list[Diagnostic]:
    path: PathT = tuple(p for p in error.absolute_path if isinstance(p, str | int))
    validator = str(error.validator)
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance: Any = error.instance
    bound: Any = error.validator_value
    where = json_path(path)

    if validator == "required":
        missing = [r for r in bound if isinstance(instance, dict) and r not in instance]
        return [
            doc.at("MIGC030", f"missing required field '{name}' in {where}", path, key=bool(path))
            for name in missing
        ]
    if validator == "additionalProperties" and isinstance(instance, dict):
        known = set(schema.get("properties", {}))
        out = []
        for name in sorted(k for k in instance if k not in known):
            hint = _suggest(name, known)
            out.append(
                doc.at(
                    "MIGC031",
                    f"unknown field '{name}' in {where}{hint}",
                    (*path, name),
                    key=True,
                    hint=f"known fields here: {_listing(known)}",
                )
            )
        return out
    if validator == "oneOf" or validator == "anyOf":
        return _translate_choice(doc, error, path, profiles)
    if validator == "type":
        expected = bound
        words = " or ".join(expected) if isinstance(expected, list) else str(expected)
        words = words.replace("object", "mapping").replace("array", "list")
        article = "an" if words[:1] in "aeiou" else "a"
        return [
            doc.at(
                "MIGC032",
                f"{where} must be {article} {words}, "
                f"not {_article(_type_name(instance))} ({_short(instance)})",
                path,
            )
        ]
    if validator in ("enum", "const"):
        allowed = bound if validator == "enum" else [bound]
        words = ", ".join(str(a) for a in allowed)
        hint = _suggest(str(instance), [str(a) for a in allowed])
        return [doc.at("MIGC033", f"{where}: {_short(instance)} is not one of: {words}{hint}", path)]
    if validator in ("pattern", "minLength", "maxLength"):
        pattern = schema.get("pattern", "")
        key_of = _value_at(doc.data, path)
        on_key = isinstance(key_of, dict) and isinstance(instance, str) and instance in key_of
        at_path: PathT = (*path, str(instance)) if on_key else path
        if pattern == DNS_LABEL_PATTERN:
            return [
                doc.at(
                    "MIGC109",
                    f"{json_path(at_path)}: {_short(instance)} is not a DNS-1123 label "
                    "(lower-case letters, digits and '-', at most 63, starting and ending alphanumeric)",
                    at_path,
                    key=on_key,
                )
            ]
        if pattern == NODE_NAME_PATTERN:
            return [
                doc.at(
                    "MIGC109",
                    f"{json_path(at_path)}: {_short(instance)} is not a valid node name "
                    "(a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most 253)",
                    at_path,
                )
            ]
        if pattern == DURATION_PATTERN:
            return [
                doc.at(
                    "MIGC114",
                    f"{where}: {_short(instance)} is not a duration (write e.g. 30s, 10m, 1h30m, 2d)",
                    path,
                )
            ]
        if validator == "pattern":
            words = _PATTERN_WORDS.get(pattern, f"a string matching {pattern}")
            if pattern == PROFILE_PATTERN:
                words += _suggest(str(instance), profiles)
            return [
                doc.at(
                    "MIGC034", f"{json_path(at_path)}: {_short(instance)} is not {words}", at_path, key=on_key
                )
            ]
    if validator in (
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
    ):
        return [doc.at("MIGC035", f"{where}: {_rephrase(error)}", path)]
    return [doc.at("MIGC039", f"{where}: {error.message}", path)]


def _rephrase(error: ValidationError) -> str:
    v = str(error.validator)
    bound = error.validator_value
    value = error.instance
    if v == "minimum":
        return f"{_short(value)} is below the minimum {bound}"
    if v == "maximum":
        return f"{_short(value)} is above the maximum {bound}"
    if v == "exclusiveMinimum":
        return f"{_short(value)} must be greater than {bound}"
    if v == "exclusiveMaximum":
        return f"{_short(value)} must be less than {bound}"
    if v == "minItems":
        return f"needs at least {bound} item(s)"
    if v == "maxItems":
        return f"allows at most {bound} item(s)"
    if v == "uniqueItems":
        return "items must be unique"
    if v == "minLength":
        return "must not be empty" if bound == 1 else f"must be at least {bound} characters"
    if v == "maxLength":
        return f"must be at most {bound} characters"
    if v == "minProperties":
        return f"needs at least {bound} entry(ies)"
    return error.message


def _relevant_branch(errors: Iterable[ValidationError]) -> list[ValidationError]:
    """Errors of the union branches whose *type* matched the value, when any did.

    ``maxUnavailable: ten`` fails the integer branch on its type and the percentage branch on its
    pattern; the pattern error is the one that helps. jsonschema's ``best_match`` alone would
    pick either, so branches that rejected the value's type are dropped first.
    """
    errors = list(errors)
    by_branch: dict[Any, list[ValidationError]] = {}
    for e in errors:
        branch = e.relative_schema_path[0] if e.relative_schema_path else None
        by_branch.setdefault(branch, []).append(e)
    typed = [
        errs
        for errs in by_branch.values()
        if not any(e.validator == "type" and not e.relative_path for e in errs)
    ]
    if len(typed) == 1:
        return typed[0]
    return errors


_NEED_KEYS = {
    "profile": "profile",
    "profiles": "profiles",
    "gpuMemoryGB": "gpuMemoryGB/computeSlices",
    "computeSlices": "gpuMemoryGB/computeSlices",
    "gpus": "gpus",
}


def _translate_choice(
    doc: LoadedDocument, error: ValidationError, path: PathT, profiles: Sequence[str]
) -> list[Diagnostic]:
    instance: Any = error.instance
    where = json_path(path)
    # Discriminator-style answers for the two unions of the language, whose branches differ by keys.
    if path and path[-1] == "need" and isinstance(instance, dict):
        forms = sorted({_NEED_KEYS[k] for k in instance if k in _NEED_KEYS})
        if len(forms) > 1:
            return [
                doc.at(
                    "MIGC036",
                    f"{where} mixes the forms {' and '.join(forms)}; use exactly one",
                    path,
                )
            ]
        if not forms:
            return [
                doc.at(
                    "MIGC036",
                    f"{where} must set one of: profile, profiles, gpuMemoryGB/computeSlices, gpus",
                    path,
                )
            ]
        return []  # the form's own field errors are reported where they are
    if path and path[-1] == "nodes" and isinstance(instance, dict):
        if "names" in instance and ("selector" in instance or "count" in instance):
            message = f"{where} lists names and also a selector/count; use one or the other"
        elif "selector" in instance and "count" not in instance:
            message = f"missing required field 'count' in {where} (required with a selector)"
            return [doc.at("MIGC030", message, path, key=True)]
        elif "count" in instance and "selector" not in instance:
            message = f"missing required field 'selector' in {where} (required with a count)"
            return [doc.at("MIGC030", message, path, key=True)]
        else:
            message = f"{where} needs either names, or a selector and a count"
        return [doc.at("MIGC039", message, path)]
    # Generic union (e.g. maxUnavailable: integer or percentage): the most relevant branch's error.
    if error.context:
        best = best_match(_relevant_branch(error.context))
        if best is not None:
            return _translate(doc, best, profiles)
    return [doc.at("MIGC039", f"{where}: {error.message}", path)]


# ---------------------------------------------------------------------------------------------------------
# Semantic pass


@dataclass
class _Obj:
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
class _PoolInfo:
    cluster: str
    name: str
    raw: dict[str, Any]
    path: PathT
    model: GpuModel | None
    mig: bool
    node_count: int
    sharing_mode: str

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
class _Context:
    catalog: Catalog
    diags: list[Diagnostic] = field(default_factory=list)
    fleet: _Obj | None = None
    fleet_ok: bool = False  # a single, schema-valid Fleet: pool-dependent rules can run
    tenants: list[_Obj] = field(default_factory=list)
    workloads: list[_Obj] = field(default_factory=list)
    partition: _Obj | None = None
    partition_ok: bool = True  # no PartitionPolicy, or a schema-valid one
    incomplete: bool = False  # documents are missing (unloadable, or of unknown kind)
    broken_names: dict[str, set[str]] = field(default_factory=dict)  # kind → names of schema-invalid docs
    pools: dict[tuple[str, str], _PoolInfo] = field(default_factory=dict)
    clusters: list[str] = field(default_factory=list)
    tiers: list[PriorityTier] = field(default_factory=list)

    def add(self, d: Diagnostic) -> None:
        self.diags.append(d)


def validate(
    documents: Sequence[LoadedDocument], catalog: Catalog, *, incomplete: bool = False
) -> tuple[Policy | None, list[Diagnostic]]:
    """Validate a loaded policy set; a :class:`Policy` only when no diagnostic is an error.

    Diagnostics are sorted by file, line, column and code; every error of every document is
    reported, not only the first. ``incomplete=True`` says some documents could not be loaded
    (already reported): rules that would only complain about their absence (unknown tenant, no
    Fleet) stay quiet, and no Policy is returned.
    """
    ctx = _Context(catalog=catalog, incomplete=incomplete)
    profile_names = sorted({p.name for m in catalog.models for p in m.profiles})
    fleets: list[_Obj] = []
    partitions: list[_Obj] = []
    for doc in sorted(documents, key=lambda d: (d.file, d.index)):
        obj = _envelope(ctx, doc)
        if obj is None:
            continue
        kind = str(doc.data["kind"])
        schema_diags = _schema_diagnostics(doc, kind, profile_names)
        ctx.diags.extend(schema_diags)
        if has_errors(schema_diags):
            obj.valid = False
            name = _value_at(doc.data, ("metadata", "name"))
            if isinstance(name, str):
                ctx.broken_names.setdefault(kind, set()).add(name)
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
        else:
            partitions.append(obj)

    _check_fleet_count(ctx, fleets)
    if len(partitions) > 1:
        first = partitions[0]
        for extra in partitions[1:]:
            ctx.add(
                extra.doc.at(
                    "MIGC116",
                    f"second PartitionPolicy '{_value_at(extra.doc.data, ('metadata', 'name'))}'; "
                    f"the first is at {first.doc.file}:{first.doc.position(('kind',))[0]}",
                    ("kind",),
                )
            )
        ctx.partition_ok = False
    elif partitions and ctx.partition_ok:
        ctx.partition = partitions[0]

    _check_partition(ctx)
    if ctx.fleet_ok:
        _check_fleet(ctx)
    _check_tenants(ctx)
    _check_workloads(ctx)

    diags = unique_sorted(ctx.diags)
    if has_errors(diags) or not ctx.fleet_ok or not ctx.partition_ok or ctx.incomplete:
        return None, diags
    return _build(ctx, documents), diags


def _envelope(ctx: _Context, doc: LoadedDocument) -> _Obj | None:
    data = doc.data
    if not isinstance(data, dict):
        ctx.incomplete = True
        ctx.add(
            doc.at(
                "MIGC011",
                f"document {doc.index + 1} is a {_type_name(data)}, not a mapping with apiVersion, kind, "
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
                f"apiVersion {_short(api)} is not supported; expected {API_VERSION}",
                ("apiVersion",),
            )
        )
        ok = False
    kind = data.get("kind")
    if kind is None:
        ctx.add(doc.at("MIGC021", f"missing kind; expected one of: {', '.join(KINDS)}"))
        ok = False
    elif kind not in KINDS:
        ctx.add(
            doc.at(
                "MIGC021",
                f"unknown kind {_short(kind)}; expected one of: {', '.join(KINDS)}"
                f"{_suggest(str(kind), KINDS)}",
                ("kind",),
            )
        )
        ok = False
    if not ok and kind not in KINDS:
        ctx.incomplete = True  # whatever this document was meant to define is missing now
    if not ok and kind in KINDS:
        # remembered so references to this object are not reported as unknown on top of this error
        name = _value_at(data, ("metadata", "name"))
        if isinstance(name, str):
            ctx.broken_names.setdefault(str(kind), set()).add(name)
    return _Obj(doc) if ok else None


def _check_fleet_count(ctx: _Context, fleets: list[_Obj]) -> None:
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


def _dupes(ctx: _Context, items: list[tuple[str, LoadedDocument, PathT]], what: str, scope: str = "") -> None:
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


def _check_partition(ctx: _Context) -> None:
    tiers = list(PartitionPolicy().tiers)
    p = ctx.partition
    if p is not None:
        spec = p.spec
        for key in ("interval", "stabilizationWindow", "minDwell"):
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
        if "priorityTiers" in spec:
            tiers = [
                PriorityTier(str(t["name"]), int(t["value"]), str(t.get("description", "")))
                for t in spec["priorityTiers"]
            ]
            _dupes(
                ctx,
                [
                    (str(t["name"]), p.doc, ("spec", "priorityTiers", i, "name"))
                    for i, t in enumerate(spec["priorityTiers"])
                ],
                "priority tier",
            )
        _dupes(
            ctx,
            [
                (str(r["name"]), p.doc, ("spec", "rules", i, "name"))
                for i, r in enumerate(spec.get("rules", []))
            ],
            "rule",
        )
    ctx.tiers = tiers


def _positive_duration(ctx: _Context, obj: _Obj, path: PathT) -> int | None:
    text = str(_value_at(obj.doc.data, path))
    seconds = parse_duration(text)
    if seconds is None:
        return None  # the schema already reported the malformed text
    if seconds <= 0:
        ctx.add(obj.doc.at("MIGC114", f"{json_path(path)}: duration {text} must be longer than zero", path))
        return None
    return seconds


def _check_fleet(ctx: _Context) -> None:
    fleet = ctx.fleet
    assert fleet is not None
    doc = fleet.doc
    clusters = fleet.spec["clusters"]
    _dupes(
        ctx,
        [(str(c["name"]), doc, ("spec", "clusters", i, "name")) for i, c in enumerate(clusters)],
        "cluster",
    )
    products = ctx.catalog.all_products()
    for ci, cluster in enumerate(clusters):
        cname = str(cluster["name"])
        if cname not in ctx.clusters:
            ctx.clusters.append(cname)
        pools = cluster["nodePools"]
        base: PathT = ("spec", "clusters", ci, "nodePools")
        _dupes(
            ctx,
            [(str(p["name"]), doc, (*base, pi, "name")) for pi, p in enumerate(pools)],
            "pool",
            f" in cluster {cname}",
        )
        nodes: list[tuple[str, LoadedDocument, PathT]] = []
        for pi, pool in enumerate(pools):
            ppath: PathT = (*base, pi)
            pname = str(pool["name"])
            names = pool["nodes"].get("names")
            if names is not None:
                nodes.extend((str(n), doc, (*ppath, "nodes", "names", ni)) for ni, n in enumerate(names))
                count = len(names)
            else:
                count = int(pool["nodes"]["count"])
                nodes.extend((f"{pname}-{i}", doc, (*ppath, "nodes", "count")) for i in range(count))
            model = ctx.catalog.by_product(str(pool["gpuProduct"]))
            if model is None:
                ctx.add(
                    doc.at(
                        "MIGC100",
                        f"unknown GPU product '{pool['gpuProduct']}'"
                        f"{_suggest(str(pool['gpuProduct']), products)}",
                        (*ppath, "gpuProduct"),
                    )
                )
            partitioning = pool.get(
                "partitioning", "mig" if model is not None and model.mig_capable else "none"
            )
            if partitioning == "mig" and model is not None and not model.mig_capable:
                ctx.add(
                    doc.at(
                        "MIGC121",
                        f"pool '{pname}': {model.model} does not support MIG; set partitioning: none",
                        (*ppath, "partitioning") if "partitioning" in pool else (*ppath, "gpuProduct"),
                    )
                )
            sharing = pool.get("sharing", {}).get("mode", "none")
            if sharing != "none" and partitioning == "mig" and (model is None or model.mig_capable):
                ctx.add(
                    doc.at(
                        "MIGC119",
                        f"pool '{pname}' is partitioned with MIG and also uses {sharing} sharing; "
                        "MPS and time-slicing apply only to pools with partitioning: none",
                        (*ppath, "sharing", "mode"),
                    )
                )
            info = _PoolInfo(
                cluster=cname,
                name=pname,
                raw=pool,
                path=ppath,
                model=model,
                mig=partitioning == "mig" and model is not None and model.mig_capable,
                node_count=count,
                sharing_mode=str(sharing),
            )
            ctx.pools.setdefault((cname, pname), info)
            _check_pool_bounds(ctx, doc, info)
        _dupes(ctx, nodes, "node", f" in cluster {cname}")
    for key in sorted(fleet.spec.get("pricing", {})):
        if ctx.catalog.by_product(key) is None:
            ctx.add(
                doc.at(
                    "MIGC100",
                    f"pricing names unknown GPU product '{key}'{_suggest(key, products)}",
                    ("spec", "pricing", key),
                    key=True,
                )
            )


def _check_pool_bounds(ctx: _Context, doc: LoadedDocument, pool: _PoolInfo) -> None:
    raw = pool.raw
    reserve = raw.get("reserve", {})
    gpus = int(reserve.get("wholeGpus", 0))
    nodes = int(reserve.get("wholeNodes", 0))
    if nodes > pool.node_count:
        ctx.add(
            doc.at(
                "MIGC112",
                f"pool '{pool.name}' reserves {nodes} whole nodes but has {pool.node_count}",
                (*pool.path, "reserve", "wholeNodes"),
            )
        )
    elif gpus + nodes * pool.gpus_per_node > pool.total_gpus:
        ctx.add(
            doc.at(
                "MIGC112",
                f"pool '{pool.name}' reserves {gpus} whole GPUs"
                + (f" plus {nodes} whole nodes" if nodes else "")
                + f" but has {pool.total_gpus} GPUs",
                (*pool.path, "reserve", "wholeGpus"),
            )
        )
    mu = raw.get("maxUnavailable")
    if isinstance(mu, int) and mu > pool.node_count:
        ctx.add(
            doc.at(
                "MIGC113",
                f"pool '{pool.name}': maxUnavailable {mu} is more than its {pool.node_count} node(s)",
                (*pool.path, "maxUnavailable"),
            )
        )
    elif isinstance(mu, str):
        pct = int(mu.rstrip("%"))
        if pct < 1 or pct > 100:
            ctx.add(
                doc.at(
                    "MIGC113",
                    f"pool '{pool.name}': maxUnavailable {mu} must be between 1% and 100%",
                    (*pool.path, "maxUnavailable"),
                )
            )
    zones = _time_zones()
    for wi, window in enumerate(raw.get("maintenanceWindows", [])):
        tz = window.get("timezone")
        if tz is not None and zones and tz not in zones:
            ctx.add(
                doc.at(
                    "MIGC125",
                    f"pool '{pool.name}': unknown time zone '{tz}'{_suggest(str(tz), zones)}",
                    (*pool.path, "maintenanceWindows", wi, "timezone"),
                )
            )
        if window["start"] == window["end"]:
            ctx.add(
                doc.at(
                    "MIGC124",
                    f"pool '{pool.name}': maintenance window starts and ends at {window['start']}",
                    (*pool.path, "maintenanceWindows", wi, "end"),
                )
            )


@functools.cache
def _time_zones() -> frozenset[str]:
    """IANA zone names known here; empty when the machine has no time-zone database (then not checked)."""
    try:
        return frozenset(zoneinfo.available_timezones())
    except Exception:  # a broken or missing tzdata must not turn into a policy error
        return frozenset()


def _resolve_max_unavailable(raw: Any, nodes: int) -> int:
    if raw is None:
        return 1
    if isinstance(raw, str):
        return max(1, math.floor(int(raw.rstrip("%")) * nodes / 100))
    return int(raw)


def _tier_names(ctx: _Context) -> list[str]:
    return [t.name for t in ctx.tiers]


def _default_tier(ctx: _Context) -> str:
    return min(ctx.tiers, key=lambda t: (t.value, t.name)).name


def _check_tier(ctx: _Context, obj: _Obj, path: PathT) -> None:
    if not ctx.partition_ok:
        return  # tiers come from a PartitionPolicy that did not validate
    value = _value_at(obj.doc.data, path)
    if value is not None and value not in _tier_names(ctx):
        ctx.add(
            obj.doc.at(
                "MIGC117",
                f"priority class '{value}' is not a tier; tiers: {', '.join(_tier_names(ctx))}"
                f"{_suggest(str(value), _tier_names(ctx))}",
                path,
            )
        )


def _me_named_by_workloads(ctx: _Context) -> set[str]:
    named: set[str] = set()
    for w in ctx.workloads:
        need = w.spec["need"]
        named.update(p for p in [need.get("profile"), *need.get("profiles", [])] if isinstance(p, str))
    return {p for p in named if p.endswith("+me")}


def _allow_me(ctx: _Context) -> bool:
    return bool(ctx.partition is not None and ctx.partition.spec.get("allowMediaExtensions", False))


def _check_profile_known(
    ctx: _Context,
    obj: _Obj,
    path: PathT,
    profile: str,
    pools: Sequence[_PoolInfo],
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
            f"{_suggest(profile, candidates)}",
            path,
            key=on_key,
        )
    )
    return False


def _check_tenants(ctx: _Context) -> None:
    _dupes(ctx, [(t.name, t.doc, ("metadata", "name")) for t in ctx.tenants], "tenant")
    claimed: dict[str, _Obj] = {}
    all_pools = list(ctx.pools.values())
    me_named = _me_named_by_workloads(ctx)
    fitting: list[tuple[_Obj, PathT, str, int]] = []  # guarantees within the bound one by one
    for t in sorted(ctx.tenants, key=lambda t: (t.doc.file, t.doc.index)):
        for ni, ns in enumerate(t.spec["namespaces"]):
            owner = claimed.get(ns)
            if owner is not None and owner.name != t.name:
                ctx.add(
                    t.doc.at(
                        "MIGC108",
                        f"namespace '{ns}' is claimed by tenant '{t.name}' and by tenant '{owner.name}' "
                        f"({owner.where()})",
                        ("spec", "namespaces", ni),
                    )
                )
            else:
                claimed.setdefault(ns, t)
        _check_tier(ctx, t, ("spec", "priorityClass"))
        for section in ("guaranteed", "burst"):
            quota = t.spec.get(section, {})
            for profile in sorted(quota.get("profiles", {})):
                ppath: PathT = ("spec", section, "profiles", profile)
                if profile.endswith("+me") and profile not in me_named and not _allow_me(ctx):
                    ctx.add(
                        t.doc.at(
                            "MIGC102",
                            f"{section} quota names '{profile}' but no workload asks for it and "
                            "allowMediaExtensions is false",
                            ppath,
                            key=True,
                        )
                    )
                    continue
                if not ctx.fleet_ok:
                    continue
                known = _check_profile_known(
                    ctx, t, ppath, profile, all_pools, on_key=True, what=f"{section} quota"
                )
                count = int(quota["profiles"][profile])
                if (
                    known
                    and section == "guaranteed"
                    and _check_profile_bound(ctx, t, ppath, profile, count, all_pools)
                ):
                    fitting.append((t, ppath, profile, count))
        if (
            ctx.fleet_ok
            and _check_whole_bounds(ctx, t, all_pools)
            and t.spec.get("guaranteed", {}).get("gpus")
        ):
            fitting.append((t, ("spec", "guaranteed", "gpus"), WHOLE_GPU, int(t.spec["guaranteed"]["gpus"])))
        _check_burst(ctx, t)
    if ctx.fleet_ok:
        _check_joint_bounds(ctx, fitting, all_pools)


def _profile_bound(profile: str, pools: Sequence[_PoolInfo]) -> int:
    """Most instances of ``profile`` the fleet could ever hold: max per GPU × partitionable GPUs."""
    bound = 0
    for pool in pools:
        if pool.mig and pool.model is not None:
            prof = pool.model.profile(profile)
            if prof is not None:
                bound += prof.max_count * pool.partitionable_gpus()
    return bound


def _check_profile_bound(
    ctx: _Context, t: _Obj, path: PathT, profile: str, count: int, pools: Sequence[_PoolInfo]
) -> bool:
    """MIGC110 when one tenant alone is guaranteed more than the bound; returns whether it fits."""
    bound = _profile_bound(profile, pools)
    if count > bound:
        ctx.add(
            t.doc.at(
                "MIGC110",
                f"tenant '{t.name}' is guaranteed {count} × {profile}, but the fleet can provide "
                f"at most {bound} "
                "(profile maximum per GPU × partitionable GPUs of pools that have it)",
                path,
            )
        )
        return False
    return True


def _check_joint_bounds(
    ctx: _Context, fitting: list[tuple[_Obj, PathT, str, int]], pools: list[_PoolInfo]
) -> None:
    """Guarantees that fit one by one can still exceed the bound together; reported at the last tenant."""
    by_key: dict[str, list[tuple[_Obj, PathT, int]]] = {}
    for t, path, key, count in fitting:
        by_key.setdefault(key, []).append((t, path, count))
    total_gpus = sum(p.total_gpus for p in pools)
    for key in sorted(by_key):
        entries = by_key[key]
        total = sum(c for _, _, c in entries)
        bound = total_gpus if key == WHOLE_GPU else _profile_bound(key, pools)
        if len(entries) < 2 or total <= bound:
            continue
        names = ", ".join(sorted(t.name for t, _, _ in entries))
        what = "whole GPUs" if key == WHOLE_GPU else f"× {key}"
        last, path, _ = entries[-1]
        ctx.add(
            last.doc.at(
                "MIGC111" if key == WHOLE_GPU else "MIGC110",
                f"tenants {names} are guaranteed {total} {what} together, but the fleet can provide at most "
                f"{bound}",
                path,
            )
        )


def _check_whole_bounds(ctx: _Context, t: _Obj, pools: Sequence[_PoolInfo]) -> bool:
    """MIGC111 for whole GPUs, GPU memory and compute slices; returns whether the whole GPUs fit."""
    quota = t.spec.get("guaranteed", {})
    total_gpus = sum(p.total_gpus for p in pools)
    total_mem = sum(p.total_gpus * (p.model.memory_gb if p.model else 0.0) for p in pools)
    total_slices = sum(p.total_gpus * (p.model.compute_slices if p.model else 0) for p in pools if p.mig)
    checks = (
        ("gpus", total_gpus, "GPUs"),
        ("gpuMemoryGB", total_mem, "GB of GPU memory"),
        ("computeSlices", total_slices, "compute slices on MIG pools"),
    )
    for key, total, unit in checks:
        if key in quota and quota[key] > total:
            ctx.add(
                t.doc.at(
                    "MIGC111",
                    f"tenant '{t.name}' is guaranteed {quota[key]} {unit} but the fleet has {total:g}",
                    ("spec", "guaranteed", key),
                )
            )
    return not ("gpus" in quota and quota["gpus"] > total_gpus)


def _check_burst(ctx: _Context, t: _Obj) -> None:
    g = t.spec.get("guaranteed", {})
    b = t.spec.get("burst")
    if not b:
        return
    for key in ("gpus", "gpuMemoryGB", "computeSlices"):
        if key in g and key in b and b[key] < g[key]:
            ctx.add(
                t.doc.at(
                    "MIGC123",
                    f"burst {key} {b[key]} is below the guaranteed {g[key]}",
                    ("spec", "burst", key),
                )
            )
    for profile, count in sorted(g.get("profiles", {}).items()):
        burst = b.get("profiles", {})
        if profile in burst and burst[profile] < count:
            ctx.add(
                t.doc.at(
                    "MIGC123",
                    f"burst {profile} {burst[profile]} is below the guaranteed {count}",
                    ("spec", "burst", "profiles", profile),
                )
            )


def _check_workloads(ctx: _Context) -> None:
    _dupes(ctx, [(w.name, w.doc, ("metadata", "name")) for w in ctx.workloads], "workload")
    tenants = {t.name for t in ctx.tenants} | ctx.broken_names.get("Tenant", set())
    for w in ctx.workloads:
        spec = w.spec
        if spec["tenant"] not in tenants and not ctx.incomplete:
            ctx.add(
                w.doc.at(
                    "MIGC104",
                    f"workload '{w.name}' names unknown tenant '{spec['tenant']}'"
                    f"{_suggest(spec['tenant'], tenants)}",
                    ("spec", "tenant"),
                )
            )
        _check_tier(ctx, w, ("spec", "priorityClass"))
        _check_isolation(ctx, w)
        if ctx.fleet_ok:
            pools = _workload_pools(ctx, w)
            if pools is not None:
                _check_need(ctx, w, pools)
    if ctx.partition is not None and ctx.fleet_ok:
        _check_rules(ctx, ctx.partition)


def _isolation(spec: dict[str, Any]) -> str:
    return str(spec.get("isolation", "exclusive" if "gpus" in spec["need"] else "hardware"))


def _check_isolation(ctx: _Context, w: _Obj) -> None:
    need = w.spec["need"]
    iso = _isolation(w.spec)
    path: PathT = ("spec", "isolation") if "isolation" in w.spec else ("spec", "need")
    if iso == "hardware" and "gpus" in need:
        message = "isolation hardware means a MIG instance; whole GPUs (need.gpus) are isolation exclusive"
    elif iso == "exclusive" and "gpus" not in need:
        message = "isolation exclusive means whole GPUs; set need.gpus (or use isolation hardware for MIG)"
    elif iso == "shared" and need.get("gpus") != 1:
        message = "isolation shared means one time-sliced/MPS share of a GPU; set need: {gpus: 1}"
    else:
        return
    ctx.add(w.doc.at("MIGC122", f"workload '{w.name}': {message}", path))


def _workload_pools(ctx: _Context, w: _Obj) -> list[_PoolInfo] | None:
    spec = w.spec
    cluster = spec.get("cluster")
    if cluster is None:
        if len(ctx.clusters) > 1:
            ctx.add(
                w.doc.at(
                    "MIGC120",
                    f"workload '{w.name}' must name its cluster; the fleet has {', '.join(ctx.clusters)}",
                    ("spec",),
                    key=True,
                )
            )
            return None
        cluster = ctx.clusters[0]
    elif cluster not in ctx.clusters:
        ctx.add(
            w.doc.at(
                "MIGC105",
                f"workload '{w.name}' names unknown cluster '{cluster}'; clusters: {', '.join(ctx.clusters)}"
                f"{_suggest(cluster, ctx.clusters)}",
                ("spec", "cluster"),
            )
        )
        return None
    in_cluster = {name: p for (c, name), p in ctx.pools.items() if c == cluster}
    wanted = spec.get("pools")
    if wanted is None:
        return sorted(in_cluster.values(), key=lambda p: p.name)
    chosen: list[_PoolInfo] = []
    for i, name in enumerate(wanted):
        if name in in_cluster:
            chosen.append(in_cluster[name])
        else:
            ctx.add(
                w.doc.at(
                    "MIGC106",
                    f"workload '{w.name}' names unknown pool '{name}' of cluster {cluster}; pools: "
                    f"{_listing(in_cluster)}{_suggest(name, in_cluster)}",
                    ("spec", "pools", i),
                )
            )
    return chosen if len(chosen) == len(wanted) else None


def _check_need(ctx: _Context, w: _Obj, pools: list[_PoolInfo]) -> None:
    need = w.spec["need"]
    iso = _isolation(w.spec)
    if "profile" in need or "profiles" in need:
        if "profile" in need:
            items: list[tuple[PathT, str]] = [(("spec", "need", "profile"), str(need["profile"]))]
        else:
            items = [(("spec", "need", "profiles", i), str(p)) for i, p in enumerate(need["profiles"])]
        if not any(p.mig for p in pools):
            ctx.add(
                w.doc.at(
                    "MIGC107",
                    f"workload '{w.name}' needs a MIG profile but none of its pools "
                    f"({_listing(p.name for p in pools)}) is MIG-partitioned",
                    ("spec", "need"),
                )
            )
            return
        for path, profile in items:
            _check_profile_known(ctx, w, path, profile, pools, on_key=False, what=f"workload '{w.name}':")
        return
    if "gpus" in need:
        k = int(need["gpus"])
        if iso == "shared":
            if not any(p.sharing_mode != "none" for p in pools):
                ctx.add(
                    w.doc.at(
                        "MIGC107",
                        f"workload '{w.name}' wants a shared GPU but none of its pools "
                        f"({_listing(p.name for p in pools)}) is time-sliced or MPS-shared",
                        ("spec", "isolation"),
                    )
                )
            return
        biggest = max((p.gpus_per_node for p in pools), default=0)
        if k > biggest:
            ctx.add(
                w.doc.at(
                    "MIGC118",
                    f"workload '{w.name}' needs {k} GPUs on one node, but its pools have at most "
                    f"{biggest} per node",
                    ("spec", "need", "gpus"),
                )
            )
        return
    memory = float(need.get("gpuMemoryGB", 0))
    slices = int(need.get("computeSlices", 0))
    fits = [
        p
        for p in pools
        if p.mig
        and p.model is not None
        and any(
            not pr.media_extensions and pr.memory_gb >= memory and pr.compute_slices >= slices
            for pr in p.model.profiles
        )
    ]
    if not fits:
        asked = " and ".join(
            x for x in (f"{memory:g} GB" if memory else "", f"{slices} compute slices" if slices else "") if x
        )
        ctx.add(
            w.doc.at(
                "MIGC107",
                f"workload '{w.name}' needs {asked}, but no MIG profile of its pools "
                f"({_listing(p.name for p in pools)}) is that large",
                ("spec", "need"),
            )
        )


def _check_rules(ctx: _Context, p: _Obj) -> None:
    all_pools = list(ctx.pools.values())
    pool_names = {pool.name for pool in all_pools}
    me_named = _me_named_by_workloads(ctx)
    for ri, rule in enumerate(p.spec.get("rules", [])):
        base: PathT = ("spec", "rules", ri)
        scope = all_pools
        if "pools" in rule:
            for i, name in enumerate(rule["pools"]):
                if name not in pool_names:
                    ctx.add(
                        p.doc.at(
                            "MIGC106",
                            f"rule '{rule['name']}' names unknown pool '{name}'; "
                            f"pools: {_listing(pool_names)}"
                            f"{_suggest(name, pool_names)}",
                            (*base, "pools", i),
                        )
                    )
            scope = [pool for pool in all_pools if pool.name in rule["pools"]]
            if len({pool.name for pool in scope}) < len(rule["pools"]):
                continue  # an unknown pool was reported; profiles cannot be judged against a partial scope
        targets = [((*base, "prefer", "maximize"), str(rule["prefer"]["maximize"]))]
        if "profile" in rule["when"]:
            targets.append(((*base, "when", "profile"), str(rule["when"]["profile"])))
        for path, profile in targets:
            if profile.endswith("+me") and profile not in me_named and not _allow_me(ctx):
                ctx.add(
                    p.doc.at(
                        "MIGC102",
                        f"rule '{rule['name']}' names '{profile}' but no workload asks for it and "
                        "allowMediaExtensions is false",
                        path,
                    )
                )
                continue
            _check_profile_known(ctx, p, path, profile, scope, on_key=False, what=f"rule '{rule['name']}':")


# ---------------------------------------------------------------------------------------------------------
# Model construction (only reached without errors, so every lookup below succeeds)


def _quota(raw: dict[str, Any] | None) -> Quota:
    raw = raw or {}
    return Quota(
        profiles=frozen_counts({str(k): int(v) for k, v in raw.get("profiles", {}).items()}),
        gpus=int(raw.get("gpus", 0)),
        gpu_memory_gb=float(raw.get("gpuMemoryGB", 0.0)),
        compute_slices=int(raw.get("computeSlices", 0)),
    )


def _build(ctx: _Context, documents: Sequence[LoadedDocument]) -> Policy:
    fleet = ctx.fleet
    assert fleet is not None
    pricing: dict[str, float] = {}
    for key, value in sorted(fleet.spec.get("pricing", {}).items()):
        model = ctx.catalog.by_product(key)
        if model is not None:
            pricing[model.model] = float(value)
    clusters: list[Cluster] = []
    for ci, raw_cluster in enumerate(fleet.spec["clusters"]):
        cname = str(raw_cluster["name"])
        pools: list[NodePool] = []
        for pi, raw in enumerate(raw_cluster["nodePools"]):
            info = ctx.pools[(cname, str(raw["name"]))]
            assert info.model is not None
            names = raw["nodes"].get("names")
            selector = raw["nodes"].get("selector", {}).get("matchLabels", {})
            node_names = (
                tuple(sorted(str(n) for n in names))
                if names is not None
                else tuple(sorted(f"{info.name}-{i}" for i in range(info.node_count)))
            )
            sharing_raw = raw.get("sharing", {})
            mode = str(sharing_raw.get("mode", "none"))
            reserve = raw.get("reserve", {})
            pools.append(
                NodePool(
                    name=info.name,
                    cluster=cname,
                    gpu_product=str(raw["gpuProduct"]),
                    gpu_model=info.model.model,
                    gpus_per_node=info.gpus_per_node,
                    node_names=node_names,
                    node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
                    node_count=info.node_count,
                    max_unavailable=_resolve_max_unavailable(raw.get("maxUnavailable"), info.node_count),
                    maintenance_windows=tuple(
                        MaintenanceWindow(
                            days=tuple(str(d) for d in w.get("days", [])),
                            start=str(w["start"]),
                            end=str(w["end"]),
                            timezone=str(w.get("timezone", "UTC")),
                        )
                        for w in raw.get("maintenanceWindows", [])
                    ),
                    reserve_whole_gpus=int(reserve.get("wholeGpus", 0)),
                    reserve_whole_nodes=int(reserve.get("wholeNodes", 0)),
                    mig=info.mig,
                    sharing=Sharing(mode=mode, replicas=int(sharing_raw.get("replicas", 1)))  # type: ignore[arg-type]
                    if mode != "none"
                    else Sharing(),
                    price_per_gpu_hour=pricing.get(info.model.model),
                    labels=tuple(sorted((str(k), str(v)) for k, v in raw.get("labels", {}).items())),
                    span=fleet.span(("spec", "clusters", ci, "nodePools", pi)),
                )
            )
        clusters.append(
            Cluster(
                name=cname,
                pools=tuple(sorted(pools, key=lambda p: p.name)),
                gpu_operator_namespace=str(raw_cluster.get("gpuOperatorNamespace", "gpu-operator")),
                kubernetes_version=str(raw_cluster.get("kubernetesVersion", "1.31")),
                span=fleet.span(("spec", "clusters", ci)),
            )
        )
    default_tier = _default_tier(ctx)
    tenants = tuple(
        sorted(
            (
                Tenant(
                    name=t.name,
                    namespaces=tuple(sorted(str(n) for n in t.spec["namespaces"])),
                    priority_tier=str(t.spec.get("priorityClass", default_tier)),
                    guaranteed=_quota(t.spec.get("guaranteed")),
                    burst=_quota(t.spec.get("burst")),
                    create_namespaces=bool(t.spec.get("createNamespaces", True)),
                    span=t.span(("metadata", "name")),
                )
                for t in ctx.tenants
            ),
            key=lambda t: t.name,
        )
    )
    tier_of = {t.name: t.priority_tier for t in tenants}
    workloads: list[Workload] = []
    for w in ctx.workloads:
        spec = w.spec
        need_raw = spec["need"]
        if "profile" in need_raw:
            need = Need(profiles=(str(need_raw["profile"]),))
        elif "profiles" in need_raw:
            need = Need(profiles=tuple(str(p) for p in need_raw["profiles"]))
        elif "gpus" in need_raw:
            need = Need(gpus=int(need_raw["gpus"]))
        else:
            need = Need(
                gpu_memory_gb=float(need_raw.get("gpuMemoryGB", 0.0)),
                compute_slices=int(need_raw.get("computeSlices", 0)),
            )
        workloads.append(
            Workload(
                name=w.name,
                tenant=str(spec["tenant"]),
                replicas=int(spec["replicas"]),
                need=need,
                isolation=_isolation(spec),  # type: ignore[arg-type]
                priority_tier=str(spec.get("priorityClass", tier_of[str(spec["tenant"])])),
                cluster=str(spec.get("cluster", ctx.clusters[0])),
                pools=tuple(sorted(str(p) for p in spec.get("pools", []))),
                span=w.span(("metadata", "name")),
            )
        )
    return Policy(
        clusters=tuple(sorted(clusters, key=lambda c: c.name)),
        tenants=tenants,
        workloads=tuple(sorted(workloads, key=lambda w: w.name)),
        partition=_build_partition(ctx, pricing),
        fleet_name=fleet.name,
        source_files=tuple(sorted({d.file for d in documents})),
    )


def _build_partition(ctx: _Context, pricing: dict[str, float]) -> PartitionPolicy:
    frozen_pricing = tuple(sorted(pricing.items()))
    p = ctx.partition
    if p is None:
        return PartitionPolicy(pricing=frozen_pricing)
    spec = p.spec
    defaults = PartitionPolicy()

    def seconds(raw: Any, default: int) -> int:
        if raw is None:
            return default
        parsed = parse_duration(str(raw))
        return default if parsed is None else parsed

    backoff = spec.get("backoff", {})
    rules = tuple(
        Rule(
            name=str(r["name"]),
            when=RuleCondition(
                pending_pods_greater_than=int(r["when"].get("pendingPodsGreaterThan", 0)),
                max_requested_memory_gb_below=(
                    float(r["when"]["maxRequestedMemoryGBBelow"])
                    if "maxRequestedMemoryGBBelow" in r["when"]
                    else None
                ),
                profile=str(r["when"]["profile"]) if "profile" in r["when"] else None,
            ),
            maximize=str(r["prefer"]["maximize"]),
            pools=tuple(sorted(str(x) for x in r.get("pools", []))),
        )
        for r in spec.get("rules", [])
    )
    return PartitionPolicy(
        mode=spec.get("mode", defaults.mode),
        interval_seconds=seconds(spec.get("interval"), defaults.interval_seconds),
        reconfiguration_threshold_pct=float(
            spec.get("reconfigurationThreshold", defaults.reconfiguration_threshold_pct)
        ),
        stabilization_seconds=seconds(spec.get("stabilizationWindow"), defaults.stabilization_seconds),
        min_dwell_seconds=seconds(spec.get("minDwell"), defaults.min_dwell_seconds),
        backoff_initial_seconds=seconds(backoff.get("initial"), defaults.backoff_initial_seconds),
        backoff_max_seconds=seconds(backoff.get("max"), defaults.backoff_max_seconds),
        backoff_factor=float(backoff.get("factor", defaults.backoff_factor)),
        daily_change_budget=int(spec.get("dailyChangeBudget", defaults.daily_change_budget)),
        unmet_demand=spec.get("unmetDemand", defaults.unmet_demand),
        allow_media_extensions=bool(spec.get("allowMediaExtensions", defaults.allow_media_extensions)),
        tiers=tuple(ctx.tiers),
        rules=rules,
        pricing=frozen_pricing,
        span=p.span(("metadata", "name")),
    )
