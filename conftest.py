"""Settings for every test process (the plain run and each ``-n`` worker).

At the repository root, not in tests/: a second rootless ``conftest`` module beside
tests/controller/conftest.py would be a duplicate module for ``mypy tests``.

The cyclic garbage collector's default first-generation threshold (700 allocations) makes it run
thousands of times while pytest collects: assertion rewriting builds an AST for each of the ~230
test modules, and every pass walks a heap that keeps growing with each module imported. That was
about 3 s of CPU per process — and each of the default run's 4 workers collects the whole suite.
A larger first-generation threshold keeps the collector running (reference counting still frees
everything that is not in a cycle at once; cycles are collected a few hundred times less often),
and does not change what any test checks. ``pytest --collect-only``: 9.2 s -> 6.1 s CPU per process
(issue 27, "the default test run is no slower").
"""

from __future__ import annotations

import gc

# (threshold0, threshold1, threshold2): CPython's default is (700, 10, 10).
gc.set_threshold(50_000, 20, 100)
