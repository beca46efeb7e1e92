"""The one list of semantic rules: each rule is a function registered with the codes it may report.

Like cfn-lint's rule classes with their ids, a rule here is named, belongs to a family (one module
under ``compiler.validate.rules``), declares every code it can emit, and says when it applies. The
runner (:func:`run_rules`) calls the rules in registration order and refuses, as a programming
error, a diagnostic whose code the running rule did not declare, so ``codes`` is always the truth
about which rule reports what. ``migc explain`` and ``--ignore`` rely on that.

Adding a rule: write ``def check(ctx: Context) -> None`` in the family's module and decorate it with
``@rule("family-what", codes=("MIGC1nn",))``; give it ``when=`` if it needs a valid Fleet or
PartitionPolicy. Register a new family module in ``compiler/validate/rules/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from compiler.validate.context import Context

Check = Callable[[Context], None]
Applies = Callable[[Context], bool]


@dataclass(frozen=True)
class Rule:
    name: str
    family: str
    codes: tuple[str, ...]
    check: Check
    applies: Applies | None = None


_RULES: list[Rule] = []


def rule(name: str, *, codes: tuple[str, ...], when: Applies | None = None) -> Callable[[Check], Check]:
    """Register ``check`` as the rule ``name`` that may report ``codes`` (and only those)."""

    def register(check: Check) -> Check:
        if any(r.name == name for r in _RULES):
            raise ValueError(f"validation rule {name} is registered twice")
        family = check.__module__.rsplit(".", 1)[-1]
        _RULES.append(Rule(name=name, family=family, codes=codes, check=check, applies=when))
        return check

    return register


def rules() -> tuple[Rule, ...]:
    """Every registered rule, in the order they run (family modules in the order ``rules`` imports them).

    The families register themselves when ``compiler.validate.rules`` is imported, which
    ``compiler.validate.engine`` does; this module stays below them in the import layers.
    """
    return tuple(_RULES)


def rules_for(code: str) -> tuple[Rule, ...]:
    return tuple(r for r in rules() if code in r.codes)


def needs_fleet(ctx: Context) -> bool:
    """A single, schema-valid Fleet: pools are known, so pool-dependent rules can run."""
    return ctx.fleet_ok


def run_rules(ctx: Context) -> None:
    for r in rules():
        if r.applies is not None and not r.applies(ctx):
            continue
        ctx.allowed_codes = frozenset(r.codes)
        ctx.running = r.name
        try:
            r.check(ctx)
        finally:
            ctx.allowed_codes = None
            ctx.running = ""
