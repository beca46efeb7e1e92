"""``--ignore CODE``: drop the findings of chosen codes from a report.

Only warnings and notes can be ignored. An error means the policy set has no valid meaning (no
Policy is built, nothing can be solved or rendered), so hiding one would only turn a clear
"invalid, here is why" into an unexplained failure; asking to ignore an error code is a usage
error. Ignored findings are dropped when the run is reported (``compiler.diagnostics.Collector``),
so they never change what is built.
"""

from __future__ import annotations

from compiler.diagnostics import Severity, UnknownCodeError, lookup, suppress

# suppress lives with the Collector (compiler.diagnostics), which applies it; re-exported for importers
__all__ = ["ignorable", "suppress"]


def ignorable(code: str) -> str | None:
    """None when ``code`` may be ignored; otherwise why not, in words for a usage error."""
    try:
        info = lookup(code)
    except UnknownCodeError:
        return f"{code} is not a migc diagnostic code (`migc explain` lists every code)"
    if info.severity >= Severity.ERROR:
        return f"{info.code} ({info.title}) is an error; only warnings and notes can be ignored"
    return None
