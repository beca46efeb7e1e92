"""bench.planspeed's table: wall and CPU ratios and the largest rendered file, from measured rows
(the timing itself runs only in the bench, never in a test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import planspeed


def test_the_table_reports_both_ratios_and_the_largest_file() -> None:
    row = {
        "gpus": 80000,
        "nodes": 10000,
        "first_compile_s": 3.0,
        "compile_s": [2.0, 2.2, 1.9],
        "plan_s": [2.4, 2.6, 2.5],
        "compile_cpu": [1.8, 1.9, 2.0],
        "plan_cpu": [2.7, 2.85, 3.0],
        "plan_bytes": 12_900_000,
        "largest": ("scale/migc-system/configmap-migc-capacity.yaml", 400 * 1024),
    }
    table = planspeed.render([row])
    assert "| 2.00 / 1.90 (2.00, 2.20, 1.90) | 2.50 / 2.40 (2.40, 2.60, 2.50) | 1.25× |" in table
    assert "| 1.90 | 2.85 | 1.50× | 400 (`scale/migc-system/configmap-migc-capacity.yaml`) | 12.9 |" in table


def test_largest_file_skips_links_and_directories(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "small.yaml").write_bytes(b"x" * 10)
    (tmp_path / "big.yaml").write_bytes(b"x" * 100)
    (tmp_path / "a" / "link.yaml").symlink_to(tmp_path / "big.yaml")
    assert planspeed.largest_file(tmp_path) == ("big.yaml", 100)
    assert planspeed.largest_file(tmp_path / "a") == ("small.yaml", 10)


def test_repo_must_hold_a_compiler(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        planspeed.main(["--repo", str(tmp_path), "--gpus", "96"])
    assert exc.value.code == 2
