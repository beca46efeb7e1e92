"""controller/defaults.py: the one module of rollout defaults the controller acts on and the
compiler's disruption rule and replay model (issue 22 item 1: no copied controller defaults)."""

from __future__ import annotations

import ast
from pathlib import Path

from compiler.recommend import disruption
from compiler.simulate import engine
from controller import defaults
from controller.settings import Settings

SOURCE = Path(defaults.__file__)


def test_the_controller_takes_every_default_from_here() -> None:
    s = Settings()
    assert s.drain.grace_timeout == defaults.DRAIN_GRACE_SECONDS == 1800
    assert s.drain.eviction_timeout == defaults.EVICTION_TIMEOUT_SECONDS == 1800
    assert (s.drain.eviction_backoff, s.drain.eviction_backoff_max) == (1, 30)
    assert (defaults.EVICTION_BACKOFF_SECONDS, defaults.EVICTION_BACKOFF_MAX_SECONDS) == (1, 30)
    assert s.apply.configmap_sync_delay == defaults.CONFIGMAP_SYNC_DELAY_SECONDS == 90
    assert (s.failures.backoff, s.failures.max_attempts, s.failures.max_failures) == (
        defaults.FAILURE_BACKOFF_SECONDS,
        defaults.MAX_ATTEMPTS,
        defaults.MAX_FAILURES,
    )


def test_the_compiler_models_the_same_numbers() -> None:
    assert disruption.DRAIN_GRACE_SECONDS == engine.DRAIN_GRACE_SECONDS == defaults.DRAIN_GRACE_SECONDS
    assert engine.SYNC_SECONDS == defaults.CONFIGMAP_SYNC_DELAY_SECONDS
    assert engine.EVICTION_TIMEOUT_SECONDS == defaults.EVICTION_TIMEOUT_SECONDS
    assert (engine.FAILURE_BACKOFF_SECONDS, engine.MAX_ATTEMPTS, engine.MAX_FAILURES) == (
        defaults.FAILURE_BACKOFF_SECONDS,
        defaults.MAX_ATTEMPTS,
        defaults.MAX_FAILURES,
    )


def test_the_module_imports_nothing_and_documents_every_number() -> None:
    """The compiler may import it without the controller's machinery (import-linter allows it only
    because it imports nothing); each constant has its docstring (the flag it is the default of)."""
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(n) for n in imports] == ["from __future__ import annotations"]
    body = tree.body
    for k, node in enumerate(body):
        if isinstance(node, ast.Assign):
            doc = body[k + 1]
            assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), ast.unparse(node)
