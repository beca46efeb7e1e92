"""Every saved capture (tests/fixtures/nvml/*.capture.yaml, real ones included once a GPU session adds
them) replays into valid catalog entries that agree with the shipped catalog; and the device script
produces such a capture."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import fakenvml
import pytest
import yaml

from compiler import discover
from compiler.catalog import load_catalog, parse_model

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = sorted(p.name.removesuffix(".capture.yaml") for p in fakenvml.FIXTURES.glob("*.capture.yaml"))

# Differences a capture is known to show, with the reason; anything else fails the test.
KNOWN_DIFFERENCES = {
    # Driver 450.80.02 predates 2g.12gb+me (R525+); the catalog keeps the row from the MIG guide.
    "a30-24gb": ["A30-24GB: profile 2g.12gb+me is in the catalog but NVML does not list it"],
}


@pytest.mark.parametrize("name", CAPTURES)
def test_capture_replays_into_entries_that_match_the_catalog(name: str) -> None:
    cap, _ = discover.capture(fakenvml.FakeNvml(fakenvml.load_capture(name)))
    models, _ = discover.models_from_capture(cap)
    assert models
    catalog = load_catalog()
    found: list[str] = []
    for model in models:
        known = discover.find_in_catalog(model, catalog)
        parse_model(discover.to_entry(model, known), name)
        found.extend(d.message for d in discover.compare(model, known))
    assert found == KNOWN_DIFFERENCES.get(name, [])


def test_the_documented_captures_are_all_there() -> None:
    assert {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-80gb", "a30-24gb"} <= set(CAPTURES)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_device_script_writes_a_replayable_capture(tmp_path: Path) -> None:
    # The script as a GPU session runs it, with python started on the fake NVML instead of a driver.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import fakenvml\n"
        "from compiler import discover\n"
        "_nvml = fakenvml.FakeNvml(fakenvml.load_capture(os.environ['FAKE_CAPTURE']))\n"
        "discover.load_nvml = lambda: _nvml\n",
        encoding="utf-8",
    )
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n', encoding="utf-8")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    dest, out = tmp_path / "dest", tmp_path / "out"
    out.mkdir()
    env = {
        **os.environ,
        "PYTHON": str(python),
        "PYTHONPATH": str(site),
        "FAKE_CAPTURE": "h100-80gb",
        "MODEL_SLUG": "h100-80gb",
        "DISCOVER_DEST": str(dest),
        "OUT": str(out),
    }
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "device-discover.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "h100-80gb.capture.yaml",
        "h100-80gb.compare.txt",
        "h100-80gb.discovered.yaml",
        "h100-80gb.nvidia-smi.txt",
    ]
    saved = yaml.safe_load((out / "h100-80gb.capture.yaml").read_text(encoding="utf-8"))
    original = fakenvml.load_capture("h100-80gb")
    assert saved == {k: v for k, v in original.items() if k != "source"}
    report = (out / "h100-80gb.compare.txt").read_text(encoding="utf-8")
    assert "the shipped catalog matches the GPU" in report
    assert "GPU instance 4: 3g.40gb at 4:4" in report
    (entry,) = [d for d in yaml.safe_load_all((out / "h100-80gb.discovered.yaml").read_text()) if d]
    assert entry["model"] == "H100-80GB"
