"""The pipeline every command runs: load → validate (here) → read what is deployed → solve → the
post-solve checks (:mod:`compiler.pipeline.compiled`) → render, by the command. Commands keep their
options, reporter choice and exit code; tests and bench import the stages from here, never from
``compiler.commands``. Every stage's diagnostics go to one :class:`compiler.diagnostics.Collector`,
finished once where the command reports.

This module loads neither the solver nor the renderer: ``migc validate`` imports only it
(tests/unit/compiler/test_cli.py).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence

from compiler.catalog import Catalog, load_catalog
from compiler.diagnostics import Collector, Diagnostic, has_errors
from compiler.load import expand_paths, load_paths
from compiler.model import Policy
from compiler.validate import validate

__all__ = ["collect_policy", "count_files", "load_and_validate"]


def load_and_validate(
    paths: Sequence[str | os.PathLike[str]],
    catalog: Catalog | None = None,
    *,
    ignore: Sequence[str] = (),
    skip_files: Collection[str] = (),
    skip_kinds: Collection[str] = (),
) -> tuple[Policy | None, list[Diagnostic]]:
    """Load every policy file under ``paths`` and validate the set.

    Returns ``(policy, diagnostics)``: ``policy`` is ``None`` exactly when some diagnostic is an
    error (load, schema or semantic); warnings may come with a policy. Diagnostics are
    :meth:`Collector.finish`'s: sorted by file, line, column, code, exact repeats dropped, and the
    warnings and notes whose code is in ``ignore`` left out. Never raises on bad input;
    ``catalog`` defaults to the shipped one. A command that goes on after validating uses
    :func:`collect_policy` and finishes its own collector once.
    """
    collector = Collector()
    policy = collect_policy(paths, collector, catalog, skip_files=skip_files, skip_kinds=skip_kinds)
    return policy, collector.finish(ignore)


def collect_policy(
    paths: Sequence[str | os.PathLike[str]],
    into: Collector,
    catalog: Catalog | None = None,
    *,
    skip_files: Collection[str] = (),
    skip_kinds: Collection[str] = (),
) -> Policy | None:
    """:func:`load_and_validate` into a collector the caller finishes: the loader's and validation's
    findings are added to ``into``; the policy, ``None`` exactly when one of them is an error."""
    docs, load_diags = load_paths(paths)
    if skip_files or skip_kinds:  # e.g. recommend's machine-owned state, read and judged on its own
        docs = [d for d in docs if d.file not in skip_files and _kind(d.data) not in skip_kinds]
        load_diags = [d for d in load_diags if d.file not in skip_files]
    incomplete = has_errors(load_diags)
    policy, diags = validate(docs, catalog if catalog is not None else load_catalog(), incomplete=incomplete)
    # A node the loader refused (a python tag, say) reads as null; the schema's complaint about that
    # null at the same place would only repeat the loader's diagnostic.
    refused = {(d.file, d.path) for d in load_diags if d.path}
    into.extend(load_diags)
    into.extend(d for d in diags if (d.file, d.path) not in refused)
    return None if incomplete else policy


def count_files(paths: Sequence[str | os.PathLike[str]]) -> int:
    """How many policy files ``paths`` names (for summary lines)."""
    files, _ = expand_paths(paths)
    return len(files)


def _kind(data: object) -> str | None:
    """A document's kind when it is a string (a hostile ``kind: [..]`` is validation's to report)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None
