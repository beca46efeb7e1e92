"""``--ignore CODE``: drop the findings of chosen codes from a report.

Only warnings and notes can be ignored. An error means the policy set has no valid meaning (no
Policy is built, nothing can be solved or rendered), so hiding one would only turn a clear
"invalid, here is why" into an unexplained failure; asking to ignore an error code is a usage
error. Ignored findings are dropped when the run is reported (``compiler.diagnostics.Collector``),
so they never change what is built.
"""

from __future__ import annotations

# Both live with the Collector (compiler.diagnostics), which applies them; re-exported for importers.
# (compiler.commands._common reads them from there, so a command does not load validation for them.)
from compiler.diagnostics import ignorable, suppress

__all__ = ["ignorable", "suppress"]
