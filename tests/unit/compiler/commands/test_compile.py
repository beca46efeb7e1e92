"""compiler/commands/compile.py: the three ways out of a compile (write --out, --check against it,
--stdout) on the smallest valid policy (tests/cases/valid/minimal: one cluster, east), and what is
refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from compiler.commands.compile import command

CASES = Path(__file__).resolve().parents[3] / "cases"
MINIMAL = str(CASES / "valid" / "minimal")
BROKEN = str(CASES / "invalid" / "duplicate-tenant")


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(command, list(args), standalone_mode=False)
    if isinstance(result.exception, click.ClickException):
        return result.exception.exit_code, result.stdout, result.stderr + result.exception.format_message()
    assert result.exception is None, result.exception
    return int(result.return_value), result.stdout, result.stderr


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_write_then_check_is_up_to_date_and_an_edit_is_drift(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc, stdout, err = _run(MINIMAL, "--out", str(out))
    written = _files(out)
    assert rc == 0 and stdout == ""
    assert f"migc: wrote {len(written)} files for 1 cluster to " in err
    assert "east/kustomization.yaml" in written
    rc, stdout, err = _run(MINIMAL, "--out", str(out), "--check")
    assert rc == 0 and "is up to date" in err and stdout == ""
    quota = out / "east" / "tenants" / "search" / "search" / "resourcequota-migc-gpu.yaml"
    quota.write_text(quota.read_text(encoding="utf-8") + "# edited by hand\n", encoding="utf-8")
    (out / "east" / "kustomization.yaml").unlink()
    rc, stdout, err = _run(MINIMAL, "--out", str(out), "--check")
    assert rc == 3 and "MIGC302" in err
    assert f"stale: {quota}" in stdout and f"missing: {out / 'east' / 'kustomization.yaml'}" in stdout
    assert "# edited by hand" in quota.read_text(encoding="utf-8")  # --check writes nothing


@pytest.mark.slow  # two more compiles; written-once behaviour is the test above
def test_a_second_compile_rewrites_the_same_bytes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _run(MINIMAL, "--out", str(out))[0] == 0
    first = _files(out)
    assert _run(MINIMAL, "--out", str(out))[0] == 0
    assert _files(out) == first


def test_stdout_prints_the_same_manifests_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _run(MINIMAL, "--out", str(out))[0] == 0
    rc, stdout, err = _run(MINIMAL, "--stdout", "--out", str(tmp_path / "never"))
    assert rc == 0 and not (tmp_path / "never").exists()
    docs = [d for d in yaml.safe_load_all(stdout) if d is not None]
    # what is applied: every object on disk but the kustomization (the Helm values and the
    # ClusterPolicy patch are settings files, not objects)
    on_disk = [
        d
        for name, text in _files(out).items()
        if name.endswith(".yaml")
        for d in [yaml.safe_load(text)]
        if isinstance(d, dict) and "metadata" in d and d.get("kind") not in (None, "Kustomization")
    ]
    key = lambda d: (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])  # noqa: E731
    assert len(docs) == len(on_disk) > 0
    assert sorted(map(key, docs)) == sorted(map(key, on_disk))
    assert err.strip().endswith("files rendered to stdout")
    assert _run(MINIMAL, "--stdout", "--cluster", "east")[0] == 0


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    rc, _, err = _run(MINIMAL, "--check", "--stdout")
    assert rc == 2 and "--check and --stdout exclude each other" in err
    rc, _, err = _run(MINIMAL, "--stdout", "--cluster", "west")
    assert rc == 2 and "no cluster named 'west'" in err


def test_an_invalid_policy_or_a_symlinked_out_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc, stdout, err = _run(BROKEN, "--out", str(out))
    assert rc == 1 and "MIGC103" in stdout and err.strip().endswith("nothing was written")
    assert not out.exists()
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    rc, stdout, _ = _run(MINIMAL, "--out", str(tmp_path / "link"))
    assert rc == 1 and "MIGC320" in stdout
    assert list((tmp_path / "real").iterdir()) == []
