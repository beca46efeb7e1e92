"""The pipeline every command runs: load → validate (here) → read what is deployed → solve → the
post-solve checks (:mod:`compiler.pipeline.compiled`) → render, by the command. Commands keep their
options, reporter choice and exit code; tests and bench import the stages from here, never from
``compiler.commands``.

This module loads neither the solver nor the renderer: ``migc validate`` imports only it
(tests/test_cli_lazy.py).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence

from compiler.catalog import Catalog, load_catalog
from compiler.diagnostics import Diagnostic, has_errors
from compiler.load import expand_paths, load_paths
from compiler.model import Policy
from compiler.validate import unique_sorted, validate
from compiler.validate.suppress import suppress

__all__ = ["count_files", "load_and_validate"]


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
    error (load, schema or semantic); warnings may come with a policy. Diagnostics are sorted by
    file, line, column, code. Never raises on bad input; ``catalog`` defaults to the shipped one.
    Warnings and notes whose code is in ``ignore`` are left out (see :mod:`compiler.validate.suppress`).
    """
    docs, load_diags = load_paths(paths)
    if skip_files or skip_kinds:  # e.g. recommend's machine-owned state, read and judged on its own
        docs = [d for d in docs if d.file not in skip_files and _kind(d.data) not in skip_kinds]
        load_diags = [d for d in load_diags if d.file not in skip_files]
    incomplete = has_errors(load_diags)
    policy, diags = validate(docs, catalog if catalog is not None else load_catalog(), incomplete=incomplete)
    # A node the loader refused (a python tag, say) reads as null; the schema's complaint about that
    # null at the same place would only repeat the loader's diagnostic.
    refused = {(d.file, d.path) for d in load_diags if d.path}
    kept = [d for d in diags if (d.file, d.path) not in refused]
    merged = unique_sorted(suppress([*load_diags, *kept], ignore))
    return (None if incomplete else policy), merged


def count_files(paths: Sequence[str | os.PathLike[str]]) -> int:
    """How many policy files ``paths`` names (for summary lines)."""
    files, _ = expand_paths(paths)
    return len(files)


def _kind(data: object) -> str | None:
    """A document's kind when it is a string (a hostile ``kind: [..]`` is validation's to report)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None
