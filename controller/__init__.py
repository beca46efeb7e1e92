"""migc controller: applies the node -> MIG config assignment rendered by the compiler, safely.

It imports nothing from ``compiler/``; its only contract is ``assignment.schema.json`` (a copy of
the repository's ``schema/assignment.schema.json``, kept equal by a test).
"""

__version__ = "0.1.0"
