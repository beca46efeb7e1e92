"""The exit status of every ``migc`` command: one home, so no command invents its own numbers.

* 0 success, nothing to report (or only notes/warnings below the fail level)
* 1 invalid input, an infeasible policy, or (``discover``) nothing could be discovered
* 2 usage error (click's own convention, kept so shells and CI behave as users expect)
* 3 drift or changes present (only with ``--check`` / ``--exit-code``; ``discover --compare``)
* 70 internal error (``EX_SOFTWARE`` from BSD ``sysexits.h``): a bug in migc; nothing was written
* 130 interrupted (128 + SIGINT, the shell convention)

This module imports nothing, so any layer may use it. The controller keeps its own codes: it
imports nothing from the compiler.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    INVALID = 1
    USAGE = 2
    DRIFT = 3
    INTERNAL = 70
    INTERRUPTED = 130
