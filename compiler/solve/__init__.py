"""Solve stage: catalog layouts → pool-level layout counts (exact MILP) → per-node assignment.

Public API:

* :func:`solve` ``(policy, catalog, current=None, *, time_limit_s=60.0, method="exact")`` →
  :class:`compiler.solve.result.Solution`. ``method="greedy"`` forces the first-fit-decreasing
  fallback (pools marked ``optimal=False``), e.g. as a benchmark baseline. ``hami=False,
  metrics_only=True`` is the plan's count-only second solve (see ``pipeline.solve``).
* :func:`compiler.solve.export.solution_to_dict` → the JSON document of ``schema/solution.schema.json``.
* Layout geometry lives one layer down: :mod:`compiler.catalog.layouts` (``enumerate_layouts``,
  ``is_feasible``, ``place``).

Pipeline (``pipeline.py``): ``demand.py`` turns workloads and guarantees into demand items;
``milp.py`` solves one lexicographic integer program per group of pools that share demand
(``lexmilp.py`` wraps HiGHS); ``assign.py`` maps the result onto nodes; ``bounds.py`` computes the
LP bound; ``greedy.py`` is the fallback.
"""

from compiler.solve.pipeline import solve

__all__ = ["solve"]
