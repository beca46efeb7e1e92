"""compiler/commands/discover.py: the command's outputs, --compare's exit status and its own entry
point (``python -m compiler.commands.discover``), against the fake NVML of tests/fakenvml.py
replaying documented captures. What discovery reads is compiler/discover's (tests/test_discover.py,
tests/unit/compiler/test_discover.py)."""

from __future__ import annotations

import json
from typing import Any

import fakenvml
import pytest
import yaml

from compiler import discover
from compiler.catalog import parse_model
from compiler.commands.discover import main
from compiler.diagnostics import make


def _with(monkeypatch: pytest.MonkeyPatch, capture: str | dict[str, Any]) -> None:
    data = fakenvml.load_capture(capture) if isinstance(capture, str) else capture
    monkeypatch.setattr(discover, "load_nvml", fakenvml.fake_loader(fakenvml.FakeNvml(data)))


def test_yaml_is_one_catalog_document_per_model_and_json_the_same_entries(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _with(monkeypatch, "h100-80gb")
    assert main([]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# Captured by `migc discover` (read-only NVML), driver ")
    assert out.count("\n---\n") + out.startswith("---\n") == 1  # one model, one document
    (doc,) = [d for d in yaml.safe_load_all(out) if d is not None]
    assert parse_model(doc, "h100").model == "H100-80GB"  # the catalog's own loader accepts it
    assert "NVIDIA H100 80GB HBM3" in err  # the per-GPU summary
    assert main(["-o", "json", "-q"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [doc] and err == ""


def test_compare_exits_0_when_the_catalog_agrees_and_3_naming_each_difference(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _with(monkeypatch, "h100-80gb")
    assert main(["--compare", "-q"]) == 0
    assert capsys.readouterr().err.strip() == "migc discover: the shipped catalog matches the GPU"
    _with(monkeypatch, "a30-24gb")  # driver 450 predates 2g.12gb+me, which the catalog lists
    assert main(["--compare", "-q"]) == 3
    err = capsys.readouterr().err
    assert "MIGC920" in err and err.strip().endswith("1 difference(s) from the shipped catalog")


def test_capture_prints_the_raw_readings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _with(monkeypatch, "h100-80gb")
    assert main(["--format", "capture", "-q"]) == 0
    data = yaml.safe_load(capsys.readouterr().out)
    assert data["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"


def test_a_gpu_name_from_nvml_reaches_the_terminal_escaped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = fakenvml.load_capture("h100-80gb")
    capture["gpus"][0]["name"] = "NVIDIA H100\x1b]0;owned\x07 80GB"
    _with(monkeypatch, capture)
    main(["-o", "json"])
    err = capsys.readouterr().err
    assert "NVIDIA H100 80GB" in err  # the summary names the GPU, without the sequence
    assert "\x1b" not in err and "\x07" not in err


def test_the_entry_point_maps_failures_to_exit_codes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_nvml() -> object:
        raise discover.DiscoverError(make("MIGC901", "cannot import the NVML bindings (pynvml): none"))

    monkeypatch.setattr(discover, "load_nvml", no_nvml)
    assert main([]) == 1
    assert "MIGC901" in capsys.readouterr().err

    def broken() -> object:
        raise RuntimeError("driver went away")

    monkeypatch.setattr(discover, "load_nvml", broken)
    assert main([]) == 70
    assert "internal error (MIGC000): RuntimeError: driver went away" in capsys.readouterr().err
    assert main(["--format", "toml"]) == 2
