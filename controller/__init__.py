"""migc controller: applies the node -> MIG config assignment rendered by the compiler, safely.

It imports nothing from ``compiler/``; its only contract is ``assignment.schema.json`` (a copy of
the repository's ``schema/assignment.schema.json``, kept equal by a test).
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

try:
    # One version source: pyproject.toml's [project] version (the controller ships in the migc wheel).
    __version__ = _distribution_version("migc")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
