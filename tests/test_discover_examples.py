"""examples/discover/: the manifests validate, and the log stream they produce is one YAML stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fakenvml
import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from compiler import discover
from compiler.catalog import parse_model
from compiler.commands.discover import command

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "discover"
MANIFESTS = sorted(EXAMPLES.glob("*.yaml"))


def _documents() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                out.append((f"{path.name}:{doc['kind']}", doc))
    return out


def test_the_examples_hold_a_daemonset_and_a_job() -> None:
    kinds = sorted(doc["kind"] for _, doc in _documents())
    assert kinds == ["DaemonSet", "Job", "Namespace"]


@pytest.mark.parametrize("version", ["1.31.0", kubernetes_validate.latest_version()])
@pytest.mark.parametrize(("name", "doc"), _documents(), ids=[n for n, _ in _documents()])
def test_manifest_validates_against_upstream_schema(name: str, doc: dict[str, Any], version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


def test_workloads_run_discover_read_only_without_taking_a_gpu() -> None:
    for name, doc in _documents():
        if doc["kind"] == "Namespace":
            continue
        (container,) = doc["spec"]["template"]["spec"]["containers"]
        script = "\n".join(container["args"])
        assert "migc discover --format yaml --compare" in script, name
        assert "nvidia.com/gpu" not in str(container.get("resources", {})), name  # no GPU is reserved
        assert container["securityContext"]["allowPrivilegeEscalation"] is False, name


def test_logs_of_many_nodes_concatenate_into_catalog_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    # What `kubectl logs -l ...` returns from the DaemonSet: per node, stdout followed by stderr with
    # every line prefixed "# " (the container script does that), one node after another.
    stream = ""
    for node, fixture in (("gpu-a", "h100-80gb"), ("gpu-b", "a30-24gb")):
        nvml = fakenvml.FakeNvml(fakenvml.load_capture(fixture))
        monkeypatch.setattr(discover, "load_nvml", fakenvml.fake_loader(nvml))
        result = CliRunner().invoke(command, ["--format", "yaml", "--compare"], catch_exceptions=False)
        stream += result.stdout
        stream += "".join(f"# {node}: {line}\n" for line in result.stderr.splitlines())
        stream += f"# {node}: migc discover exited {result.exit_code}\n"
    entries = [d for d in yaml.safe_load_all(stream) if d is not None]
    assert [e["model"] for e in entries] == ["H100-80GB", "A30-24GB"]
    for entry in entries:
        parse_model(entry, entry["model"])
