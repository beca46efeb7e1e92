"""examples/recommend/: the CronJob validates against the upstream Kubernetes schemas, both scripts parse,
and each keeps the recommender's state between stateless runs and proposes through a branch."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "recommend"
CRONJOB = EXAMPLES / "cronjob.yaml"
WORKFLOW = EXAMPLES / "github-actions.yml"


def _documents() -> list[tuple[str, dict[str, Any]]]:
    docs = [d for d in yaml.safe_load_all(CRONJOB.read_text(encoding="utf-8")) if d]
    return [(f"{d['kind']}/{d['metadata']['name']}", d) for d in docs]


def _cronjob() -> dict[str, Any]:
    (job,) = [d for _, d in _documents() if d["kind"] == "CronJob"]
    return job


def _script() -> str:
    (container,) = _cronjob()["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return "\n".join(container["args"])


def test_the_example_holds_the_cronjob_and_its_read_only_rbac() -> None:
    kinds = sorted(name.split("/")[0] for name, _ in _documents())
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "CronJob", "ServiceAccount"]
    (role,) = [d for _, d in _documents() if d["kind"] == "ClusterRole"]
    # recommend only reads pods and nodes (compiler/observe); it never writes to the cluster
    assert [(r["resources"], r["verbs"]) for r in role["rules"]] == [(["pods", "nodes"], ["list"])]


@pytest.mark.parametrize("version", ["1.31.0", kubernetes_validate.latest_version()])
@pytest.mark.parametrize(("name", "doc"), _documents(), ids=[n for n, _ in _documents()])
def test_manifest_validates_against_upstream_schema(name: str, doc: dict[str, Any], version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


def test_cronjob_runs_recommend_in_cluster_and_keeps_state_on_a_branch() -> None:
    job = _cronjob()
    assert job["spec"]["concurrencyPolicy"] == "Forbid"  # two runs must not race on the state branch
    script = _script()
    assert "migc recommend policies/ --in-cluster" in script
    assert "git show FETCH_HEAD:policies/observed-demand.yaml" in script  # the state of the last run
    assert "git push -qf origin migc/state migc/state:migc/recommend" in script  # exit 3: the proposal
    assert "git config user.name" in script  # a commit needs an identity in a fresh clone


def test_workflow_opens_the_pull_request_with_the_evidence() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert doc[True]["schedule"] == [{"cron": "*/15 * * * *"}]  # PyYAML reads the key `on` as True
    steps = doc["jobs"]["recommend"]["steps"]
    runs = "\n".join(str(s.get("run", "")) for s in steps)
    assert "migc recommend policies/ --kubeconfig" in runs and "-o markdown > evidence.md" in runs
    assert "gh pr create --head migc/recommend" in runs and "--body-file evidence.md" in runs
    assert "git show FETCH_HEAD:policies/observed-demand.yaml" in runs
    assert 'migc[controller] @ git+https://github.com/migc-dev/migc@v' in runs  # the kubernetes client


def test_the_scripts_parse() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    # the CronJob's container runs /bin/sh; GitHub runs `run:` steps with bash
    scripts = [("sh", _script())]
    scripts += [("bash", str(s["run"])) for s in doc["jobs"]["recommend"]["steps"] if "run" in s]
    for shell, script in scripts:
        result = subprocess.run([shell, "-n"], input=script, text=True, capture_output=True, check=False)
        assert result.returncode == 0, f"{shell}: {result.stderr}"
