"""``--ignore CODE``: drop the findings of chosen codes from a report.

Only warnings and notes can be ignored. An error means the policy set has no valid meaning (no
Policy is built, nothing can be solved or rendered), so hiding one would only turn a clear
"invalid, here is why" into an unexplained failure; asking to ignore an error code is a usage
error. Ignored findings are dropped after validation, so they never change what is built.
"""

from __future__ import annotations

from collections.abc import Iterable

from compiler.diagnostics import Diagnostic, Severity, UnknownCodeError, lookup


def ignorable(code: str) -> str | None:
    """None when ``code`` may be ignored; otherwise why not, in words for a usage error."""
    try:
        info = lookup(code)
    except UnknownCodeError:
        return f"{code} is not a migc diagnostic code (`migc explain` lists every code)"
    if info.severity >= Severity.ERROR:
        return f"{info.code} ({info.title}) is an error; only warnings and notes can be ignored"
    return None


def suppress(diagnostics: Iterable[Diagnostic], ignore: Iterable[str]) -> list[Diagnostic]:
    """``diagnostics`` without the warnings and notes whose code is in ``ignore``; errors always stay."""
    codes = {c.upper() for c in ignore}
    return [d for d in diagnostics if not (d.code in codes and d.severity < Severity.ERROR)]
