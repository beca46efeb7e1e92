"""compiler/plan/__init__.py: the package's public names are the ones its modules define."""

from __future__ import annotations

import compiler.plan
from compiler.plan import data, diff, formatting, json, markdown, snapshot, svg, text


def test_every_public_name_is_exported_from_its_module() -> None:
    homes = (data, diff, formatting, json, markdown, snapshot, svg, text)
    for name in compiler.plan.__all__:
        obj = getattr(compiler.plan, name)
        assert any(getattr(m, name, None) is obj for m in homes), name


def test_the_entry_points_commands_use() -> None:
    assert compiler.plan.build_plan is diff.build_plan
    assert compiler.plan.to_text is text.to_text and compiler.plan.to_markdown is markdown.to_markdown
    assert compiler.plan.parse_snapshot is snapshot.parse_snapshot
    assert issubclass(compiler.plan.SnapshotError, ValueError)
    assert sorted(compiler.plan.__all__) == list(compiler.plan.__all__)
