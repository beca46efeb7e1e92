"""compiler/plan/markdown.py: the plan as a pull-request comment."""

from __future__ import annotations

from dataclasses import replace

from compiler.plan.data import CapacityRow, Cost, TenantRow
from compiler.plan.markdown import to_markdown
from compiler.plan.svg import svg_name
from unit.compiler.plan.plans import empty_plan, two_node_change

MOVE = "| whole GPU (MIG off) | 7x 1g.10gb |"


def test_no_changes_has_the_heading_and_summary_only() -> None:
    assert to_markdown(empty_plan(nodes_total=2)) == (
        "## migc plan\n\nNo changes: all 2 nodes already carry their target layout.\n"
    )


def test_grouped_table_has_one_row_per_transition_and_one_reason_per_group() -> None:
    md = to_markdown(two_node_change()).splitlines()
    assert "| east | a100 | 2: `a100-01`, `a100-02` | 2 per node " + MOVE in md
    assert "| east | a100 | `a100-09` | all | deployed | removed from policy |" in md
    assert "- `a100-01`, `a100-02`: pool a100 capacity +14 1g.10gb" in md
    assert "<details><summary>Slice pictures</summary>" not in md  # no --svg directory


def test_detail_table_has_one_row_per_changed_gpu() -> None:
    md = to_markdown(two_node_change(), detail=True).splitlines()
    rows = [line for line in md if line.startswith("| east | a100 | `a100-0")]
    assert rows == [
        *(f"| east | a100 | `{n}` | {i} " + MOVE for n in ("a100-01", "a100-02") for i in (0, 1)),
        "| east | a100 | `a100-09` | all | deployed | removed from policy |",
    ]


def test_svg_links_point_into_the_given_directory() -> None:
    plan = two_node_change()
    md = to_markdown(plan, "pics/").splitlines()
    assert [line for line in md if line.startswith("![")] == [
        f"![{c.node}](pics/{svg_name(c)})" for c in plan.changes
    ]


def test_capacity_tenant_and_cost_tables_show_only_what_moves() -> None:
    plan = replace(
        two_node_change(),
        capacity=(CapacityRow("east", "a100", "1g.10gb", 0, 28), CapacityRow("east", "a100", "gpu", 16, 16)),
        tenants=(
            TenantRow("east", "search", "1g.10gb", 8, 0, 8, pool="a100", estimated=False, requested_before=4),
        ),
        costs=(Cost("east", 16, 0, 2, 16, 0, 0.0, 7.0, None, ()),),
    )
    md = to_markdown(plan).splitlines()
    assert "| east | a100 | 1g.10gb | 0 | 28 |" in md
    assert not any(line.startswith("| east | a100 | whole GPU |") for line in md)  # 16 → 16
    assert "### Tenant capacity per pool (served of requested)" in md  # recorded, not estimated
    assert "| east | a100 | search | 1g.10gb | 0 | 8 | 4 → 8 |" in md
    assert "| east | 0 GPUs, $0.00/h | 2 GPUs, $7.00/h | 16 GPUs, n/a (0 instances unserved) |" in md
