"""Data files shipped inside the ``compiler`` package, read with :mod:`importlib.resources`.

``compiler/data/schema/`` holds the canonical copy of every JSON Schema migc publishes (the policy
kinds, the catalog, the assignment and capacity contracts, the solution, mig-parted v1). The
repository's top-level ``schema/`` is the published copy for editors and other tools; a test keeps
the two byte-equal, and the policy-kind files equal to what :mod:`compiler.schemas` generates.

Everything here is read through the package's resources, never relative to the source checkout, so
it works the same from a wheel in site-packages, a zip import, or an editable install.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

SCHEMA_DIR = "schema"


def schema_names() -> tuple[str, ...]:
    """File names of the bundled schemas, sorted."""
    folder = resources.files(__name__).joinpath(SCHEMA_DIR)
    return tuple(sorted(item.name for item in folder.iterdir() if item.name.endswith(".schema.json")))


def schema_text(name: str) -> str:
    """The bundled schema file ``name`` (e.g. ``catalog.schema.json``), as text."""
    return resources.files(__name__).joinpath(f"{SCHEMA_DIR}/{name}").read_text(encoding="utf-8")


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The bundled schema file ``name``, parsed (cached: callers must not modify it)."""
    loaded: dict[str, Any] = json.loads(schema_text(name))
    return loaded
