"""Solve stage: catalog layouts → pool-level layout counts (MILP) → per-node assignment (min-cost flow).

Public entry point: :func:`compiler.solve.solve` (implemented in ``compiler/solve/pipeline.py``).
"""

from compiler.solve.pipeline import solve

__all__ = ["solve"]
