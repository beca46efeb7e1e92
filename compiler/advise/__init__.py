"""``migc advise``: the sharing mode each pool should use (a decision tree whose every reason cites a
MIGC5xx rule) and, per priced GPU model, how many GPUs the declared demand needs (the real solver).

Entry point: :func:`advise` ``(policy, catalog, solution, observation=None) -> Advice``; its forms
are in :mod:`compiler.advise.report` (``FORMATS``). ``solution`` is the policy's own solve (which
pool serves which workload); sizing solves one synthetic policy per priced model
(:mod:`compiler.advise.sizing`).
"""

from __future__ import annotations

from compiler.advise.model import Advice, ClusterSizing, Finding, PoolAdvice, SizingRow
from compiler.advise.observed import observed_findings
from compiler.advise.sizing import Progress, size_policy
from compiler.advise.tree import advise_pools
from compiler.catalog import Catalog
from compiler.model import Policy
from compiler.observe import Observation
from compiler.solve.result import Solution


def advise(
    policy: Policy,
    catalog: Catalog,
    solution: Solution,
    observation: Observation | None = None,
    *,
    time_limit_s: float = 60.0,
    progress: Progress | None = None,
) -> Advice:
    findings = observed_findings(policy, observation) if observation is not None else ()
    return Advice(
        pools=advise_pools(policy, catalog, solution),
        sizing=size_policy(policy, catalog, time_limit_s, progress),
        findings=findings,
    )


__all__ = ["Advice", "ClusterSizing", "Finding", "PoolAdvice", "SizingRow", "advise"]
