"""Builders for validation unit tests: a small policy set as YAML texts, validated in memory.

``run(fleet(...), tenant(...), workload(...))`` loads each text as its own file (``f0.yaml``, ...) and
returns what ``compiler.validate.validate`` returns; ``declared(module)`` is the codes the rules of
one rule family (``compiler.validate.rules.<family>``) declare, so a test can say which family spoke.
"""

from __future__ import annotations

import textwrap
from types import ModuleType

from compiler.catalog import load_catalog
from compiler.diagnostics import Diagnostic
from compiler.load import LoadedDocument, load_text
from compiler.model import Policy
from compiler.validate import validate
from compiler.validate.context import Context, Obj, index_pools, index_tiers
from compiler.validate.registry import rules

A100_POOL = """\
- name: a100
  gpuProduct: NVIDIA-A100-SXM4-80GB
  gpusPerNode: 8
  nodes: {names: [n1, n2]}
"""


def _doc(kind: str, name: str, spec: str) -> str:
    body = textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ")
    return f"apiVersion: migc.dev/v1alpha1\nkind: {kind}\nmetadata: {{name: {name}}}\nspec:\n{body}\n"


def fleet(pools: str = A100_POOL, *, cluster: str = "c", extra: str = "", name: str = "f") -> str:
    """A Fleet of one cluster whose ``nodePools`` is the YAML list ``pools``; ``extra``: more spec keys."""
    nodes = textwrap.indent(textwrap.dedent(pools).strip("\n"), "    ")
    return _doc(
        "Fleet", name, f"clusters:\n  - name: {cluster}\n    nodePools:\n{nodes}\n{textwrap.dedent(extra)}"
    )


def tenant(name: str = "t", spec: str = "") -> str:
    return _doc("Tenant", name, textwrap.dedent(spec) or f"namespaces: [{name}]")


def workload(name: str = "w", spec: str = "") -> str:
    return _doc("Workload", name, textwrap.dedent(spec) or "tenant: t\nreplicas: 1\nneed: {profile: 1g.10gb}")


def partition(spec: str, name: str = "default") -> str:
    return _doc("PartitionPolicy", name, spec)


def run(*texts: str) -> tuple[Policy | None, list[Diagnostic]]:
    docs: list[LoadedDocument] = []
    for i, text in enumerate(texts):
        loaded, diags = load_text(text, f"f{i}.yaml")
        assert not diags, (text, diags)
        docs.extend(loaded)
    return validate(docs, load_catalog())


def codes(diags: list[Diagnostic]) -> list[str]:
    return [d.code for d in diags]


def declared(module: ModuleType) -> set[str]:
    """Every code a rule defined in ``module`` may report."""
    return {c for r in rules() if r.check.__module__ == module.__name__ for c in r.codes}


def context(*texts: str) -> Context:
    """A rule Context holding these documents, indexed as ``validate`` indexes them, for calling one
    rule or helper alone (no schema check: write valid documents)."""
    ctx = Context(catalog=load_catalog())
    for i, text in enumerate(texts):
        docs, diags = load_text(text, f"f{i}.yaml")
        assert not diags, (text, diags)
        for doc in docs:
            kind = doc.data["kind"]
            if kind == "Fleet":
                ctx.fleet, ctx.fleet_ok = Obj(doc), True
            elif kind == "Tenant":
                ctx.tenants.append(Obj(doc))
            elif kind == "Workload":
                ctx.workloads.append(Obj(doc))
            elif kind == "PartitionPolicy":
                ctx.partition = Obj(doc)
    index_tiers(ctx)
    if ctx.fleet is not None:
        index_pools(ctx)
    return ctx
