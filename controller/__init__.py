"""migc controller: applies the node -> MIG config assignment rendered by the compiler, safely.

It imports nothing from ``compiler/``; its contracts are ``assignment.schema.json`` and, for
Kubernetes DRA pools, ``draplan.schema.json`` (copies of the repository's ``schema/`` files, kept
equal by tests).
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

try:
    # One version source: pyproject.toml's [project] version (the controller ships in the migc wheel).
    __version__ = _distribution_version("migc")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
