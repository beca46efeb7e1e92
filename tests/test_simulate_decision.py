"""One decision (issue 22 item 1): with ``--decision recommend`` the replay's default loop runs migc
recommend's own decision, so ``migc recommend`` on a snapshot of the replay's state at an instant
returns the replay's decision at that instant — byte for byte the same evidence, the same exit.

The trace: one node of 8 A100-80GB, carved all-balanced at the start (no whole GPU), and eight
whole-GPU pods arriving at once. recommend sees them pending at every interval; once the
stabilizationWindow is covered and their wait outweighs the re-carve by the threshold it proposes 8
whole GPUs, and the controller (the replay's rollout) carves them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import CurrentState, PartitionPolicy, Policy
from compiler.observe import Observation
from compiler.recommend.engine import Recommendation, recommend
from compiler.recommend.state import State
from compiler.simulate.engine import Settings, Snapshot, simulate
from compiler.simulate.report import result_dict
from compiler.simulate.trace import TracePod

A100 = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
assert A100 is not None
POLICY = PartitionPolicy(mode="dynamic")
ONE = Settings(nodes=1, decision="recommend")
HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time"
)
# eight whole-GPU pods of three days at 0, then a few small ones later
PODS = [TracePod(f"big-{k}", 0, 3 * 86400, 1, 1000, 0) for k in range(8)] + [
    TracePod(f"small-{k}", 4 * 86400 + 600 * k, 3600, 1, 200, 0) for k in range(4)
]


def _csv(tmp_path: Path, pods: Sequence[TracePod] = PODS, name: str = "trace.csv") -> Path:
    rows = [
        f"{p.name},1000,1024,{p.num_gpu},{p.gpu_milli},,LS,Succeeded,{p.arrival:g},"
        f"{p.arrival + p.duration:g},{p.arrival:g}"
        for p in pods
    ]
    path = tmp_path / name
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def _simulate(capsys: pytest.CaptureFixture[str], trace: Path, *extra: str) -> dict[str, Any]:
    code, out, _ = _cli(capsys, trace, *extra)
    assert code == ExitCode.OK
    doc: dict[str, Any] = json.loads(out)
    return doc


def _recommend(capsys: pytest.CaptureFixture[str], snap: Path, at: str, *extra: str) -> tuple[int, str]:
    code = main(
        [
            "recommend",
            str(snap / "policy"),
            "--snapshot",
            str(snap / "cluster.json"),
            "--against",
            str(snap / "output"),
            "--state",
            str(snap / "observed-demand.yaml"),
            "--now",
            at,
            "--dry-run",
            "-o",
            "json",
            *extra,
        ]
    )
    return code, capsys.readouterr().out


def test_the_replay_changes_when_recommend_proposes() -> None:
    """The scenario is not vacuous: the loop makes a revision (8 whole GPUs) and the big pods run."""
    assert A100 is not None
    res = simulate(PODS, A100, ONE, "default", POLICY)
    assert res.revisions >= 1 and res.revision_times[0] > 0
    assert res.reconfigurations >= 1
    assert res.never_served == 0


@pytest.mark.parametrize("where", ["at the first revision", "one interval before it"])
def test_recommend_on_the_snapshot_returns_the_replays_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    assert A100 is not None
    first = simulate(PODS, A100, ONE, "default", POLICY).revision_times[0]
    at = first if where == "at the first revision" else first - POLICY.interval_seconds
    snap = tmp_path / "snap"
    doc = _simulate(capsys, _csv(tmp_path), "--snapshot-at", f"{int(at)}s", "--snapshot-dir", str(snap))
    taken = doc["results"][0]["snapshot"]
    assert taken["proposed"] is (where == "at the first revision")
    assert sorted(p.name for p in snap.iterdir()) == [
        "cluster.json",
        "decision.json",
        "observed-demand.yaml",
        "output",
        "policy",
    ]
    code, out = _recommend(capsys, snap, taken["at"])
    assert out == (snap / "decision.json").read_text(encoding="utf-8")
    assert code == (ExitCode.DRIFT if taken["proposed"] else ExitCode.OK)
    evidence = json.loads(out)
    if taken["proposed"]:
        assert {"workload": "gpu", "from": 0, "to": 8} in evidence["replicas"]
        assert evidence["nodes"] == ["node-0"]
    else:
        assert evidence["proposed"] is False


def test_the_operand_pause_is_priced_alike_by_the_replay_and_recommend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--drain-seconds D`` (the node's fixed pause) is one price on both sides: the replay hands it
    to recommend's decision, which charges every changed node ``B × (D + R × n)`` and so proposes
    later than without it, and ``migc recommend --drain-seconds D`` on the snapshot at that proposal
    prints the replay's evidence byte for byte (without the option it prices D = 0: not the same)."""
    assert A100 is not None
    pause = 7200.0
    plain = simulate(PODS, A100, ONE, "default", POLICY).revision_times[0]
    paused = simulate(PODS, A100, replace(ONE, drain_seconds=pause), "default", POLICY).revision_times[0]
    assert paused > plain
    snap = tmp_path / "snap"
    doc = _simulate(
        capsys,
        _csv(tmp_path),
        "--drain-seconds",
        f"{pause:g}",
        "--snapshot-at",
        f"{int(paused)}s",
        "--snapshot-dir",
        str(snap),
    )
    taken = doc["results"][0]["snapshot"]
    assert taken["proposed"] is True
    code, out = _recommend(capsys, snap, taken["at"], "--drain-seconds", f"{pause:g}")
    assert (code, out) == (ExitCode.DRIFT, (snap / "decision.json").read_text(encoding="utf-8"))
    evidence = json.loads(out)["disruption"]
    assert evidence["drainSeconds"] == pause
    (node,) = evidence["nodes"]
    assert node["outage"] == pytest.approx(8 * (pause + 60 * node["changedGpus"]))
    _, unpaused = _recommend(capsys, snap, taken["at"])
    assert json.loads(unpaused)["disruption"]["drainSeconds"] == 0


def test_what_recommends_decision_reports_is_shown_once_per_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ten whole-GPU pods for one node of eight GPUs: every proposal leaves two unmet, which recommend
    reports (MIGC201) at every evaluation that solves one. The replay shows it once per code, on
    stderr and in ``decisionDiagnostics`` with its counts; ``--ignore MIGC201`` hides the line; the
    cover decision has no such findings (null)."""
    pods = [TracePod(f"big-{k}", 0, 3 * 86400, 1, 1000, 0) for k in range(10)]
    trace = _csv(tmp_path, pods)
    code, out, err = _cli(capsys, trace)
    assert code == ExitCode.OK
    (found,) = json.loads(out)["results"][0]["decisionDiagnostics"]
    assert found["code"] == "MIGC201" and found["severity"] == "warning"
    assert 1 <= found["evaluations"] <= json.loads(out)["results"][0]["evaluations"]
    assert "unmet: 2 x gpu" in found["first"] and found["distinctMessages"] >= 1
    (line,) = [x for x in err.splitlines() if "MIGC201" in x]
    assert f"reported MIGC201 at {found['evaluations']} of " in line
    _, _, quiet = _cli(capsys, trace, "--ignore", "MIGC201")
    assert "MIGC201" not in quiet
    cover, out, _ = _cli(capsys, trace, decision="cover")
    assert cover == ExitCode.OK
    assert json.loads(out)["results"][0]["decisionDiagnostics"] is None


RULE = """apiVersion: migc.dev/v1alpha1
kind: PartitionPolicy
metadata:
  name: default
spec:
  mode: dynamic
  rules:
    - name: grow-3g
      when: {pendingPodsGreaterThan: 0}
      prefer: {maximize: 3g.40gb}
"""


def test_the_line_of_a_sizing_finding_does_not_say_held_evaluations_report_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MIGC428 (a rule's headroom no Workload takes) is the sizing's, before the solve: an evaluation
    a gate holds before the solve (here mostly "replicas": nothing to propose) still reports it. The
    stderr line said such an evaluation "reports nothing of it", false for every code of the demand
    or the sizing (MIGC424, MIGC428); it now says only the solver's findings are missing there."""
    root = Path(__file__).resolve().parents[1]
    policy = tmp_path / "policy"
    shutil.copytree(root / "examples" / "lab", policy)
    (policy / "partition.yaml").write_text(RULE, encoding="utf-8")
    small = [TracePod(f"s-{k}", 60 * k, 86400, 1, 100, 0) for k in range(60)]  # 1g.10gb, for a day
    code, out, err = _cli(capsys, _csv(tmp_path, small), "--policy", str(policy))
    assert code == ExitCode.OK, err
    result = json.loads(out)["results"][0]
    found = {f["code"]: f for f in result["decisionDiagnostics"]}
    held = result["blockedBy"]["replicas"]  # a gate only held_before_solve has: no solve there
    assert found["MIGC428"]["evaluations"] > result["evaluations"] - held  # held ones reported it
    (line,) = [x for x in err.splitlines() if "MIGC428 warning" in x]
    assert "reports nothing of it" not in line
    assert "an evaluation a gate holds before the solve has none of the solver's findings" in line


STRICT = """apiVersion: migc.dev/v1alpha1
kind: PartitionPolicy
metadata:
  name: default
spec:
  mode: dynamic
  unmetDemand: error
"""


def test_an_evaluation_recommend_fails_changes_nothing_in_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under ``unmetDemand: error`` the solver's MIGC201 is an error, and ``migc recommend`` then exits
    1 and writes nothing: no proposal, no state. Ten whole-GPU pods for one node of eight GPUs: every
    proposal leaves two unmet. The replay carved the eight whole GPUs all the same (one revision at
    30 min, the snapshot there ``proposed``) while recommend on that snapshot exits 1; it now changes
    nothing at an evaluation recommend fails (and solves every evaluation: the lazy one skips the
    solve that would report the error), and the snapshot there says no change was made."""
    root = Path(__file__).resolve().parents[1]
    policy = tmp_path / "policy"
    shutil.copytree(root / "examples" / "lab", policy)
    (policy / "partition.yaml").write_text(STRICT, encoding="utf-8")
    ten = [TracePod(f"big-{k}", 0, 3 * 86400, 1, 1000, 0) for k in range(10)]
    snap = tmp_path / "snap"
    args = ("--policy", str(policy), "--snapshot-at", "1800s", "--snapshot-dir", str(snap))
    code, out, err = _cli(capsys, _csv(tmp_path, ten), *args)
    assert code == ExitCode.OK, err
    result = json.loads(out)["results"][0]
    (found,) = result["decisionDiagnostics"]
    assert (found["code"], found["severity"]) == ("MIGC201", "error")
    code, printed = _recommend(capsys, snap, result["snapshot"]["at"])
    assert (code, printed) == (ExitCode.INVALID, "")  # recommend refuses: nothing proposed there
    assert result["snapshot"]["proposed"] is False
    assert result["revisions"] == 0 and result["reconfigurations"] == 0
    # from the first failure on, each evaluation solved and failed (its state was not written);
    # before it, the history did not cover the stabilizationWindow and the sizing asked for no more
    assert found["evaluations"] == result["evaluations"] - result["blockedBy"]["stabilizationWindow"] > 0


def test_a_trace_no_pod_of_which_fits_a_node_is_replayed_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pods of more GPUs than a node has never arrive, so a trace of only such pods gives recommend a
    policy without a Workload. Its check before the replay refused that as MIGC449 "the policy does
    not read back unchanged: policy.source_files ..." with a hint about rules' pools (the empty
    workloads file is no source file when read back); the replay now runs, as with --decision cover,
    and a snapshot of it reads back."""
    huge = [TracePod("huge", 0, 3600, 16, 1000, 0)]
    snap = tmp_path / "snap"
    code, out, err = _cli(capsys, _csv(tmp_path, huge), "--snapshot-at", "0s", "--snapshot-dir", str(snap))
    assert code == ExitCode.OK, err
    assert "MIGC449" not in err
    result = json.loads(out)["results"][0]
    assert result["neverServed"] == 1 and result["revisions"] == 0
    code, printed = _recommend(capsys, snap, result["snapshot"]["at"])
    assert (code, printed) == (ExitCode.OK, (snap / "decision.json").read_text(encoding="utf-8"))


Evaluation = tuple[Policy, CurrentState, Observation, State, Recommendation]


def _evaluations(tmp_path: Path, pods: Sequence[TracePod], s: Settings, afters: range) -> list[Evaluation]:
    """recommend's inputs and full evaluation at the first evaluation ``after`` seconds into the replay,
    for each ``after`` (one replay each, as ``--snapshot-at`` takes them)."""
    assert A100 is not None
    seen: list[Evaluation] = []

    def keep(
        _: Path, policy: Policy, current: CurrentState, obs: Observation, state: State, rec: Recommendation
    ) -> None:
        seen.append((policy, current, obs, state, rec))

    catalog = load_catalog()
    for after in afters:
        simulate(pods, A100, s, "default", POLICY, catalog=catalog, snapshot=Snapshot(after, tmp_path, keep))
    return seen


@pytest.mark.parametrize("pause", [0.0, 7200.0])
def test_lazy_and_full_evaluations_decide_the_same(tmp_path: Path, pause: float) -> None:
    """``recommend(lazy=True)``, what the replay runs at every interval, skips the solve only when a
    gate blocks every proposal: at every instant of the replay its decision, replicas, targets and
    the state written back equal the full evaluation's. With an operand pause ``D`` too: the bound
    before the solve charges it once per node with one changed GPU, no more than any change costs."""
    catalog = load_catalog()
    paused = replace(ONE, drain_seconds=pause)
    seen = _evaluations(tmp_path, PODS, paused, range(0, 5 * 86400, 5 * 3600))
    assert len(seen) >= 20
    assert {rec.drain_seconds for *_, rec in seen} == {pause}
    lazy_blocked = 0
    for policy, current, obs, state, full in seen:
        lazy = recommend(policy, catalog, current, obs, state, obs.taken_at, lazy=True, drain_seconds=pause)
        assert lazy.proposed_change == full.proposed_change
        assert lazy.state == full.state
        if lazy.proposed_change:
            assert (lazy.replicas, lazy.targets) == (full.replicas, full.targets)
        lazy_blocked += not lazy.proposed and not lazy.current  # the solve was skipped
    assert lazy_blocked > 0  # the lazy path was taken on some instants


def test_snapshot_options_are_checked_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _csv(tmp_path)
    base = ["simulate", "--trace", str(trace), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    assert main([*base, "--snapshot-at", "1h"]) == ExitCode.USAGE
    assert "go together" in capsys.readouterr().err
    assert main([*base, "--snapshot-at", "1h", "--snapshot-dir", str(tmp_path / "s")]) == ExitCode.USAGE
    assert "--decision recommend" in capsys.readouterr().err
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine", encoding="utf-8")
    args = [*base, "--decision", "recommend", "--snapshot-at", "1h", "--snapshot-dir", str(full)]
    assert main(args) == ExitCode.USAGE
    assert "new or empty" in capsys.readouterr().err
    assert (full / "keep.txt").read_text(encoding="utf-8") == "mine"  # nothing of the user's is lost


def _cli(
    capsys: pytest.CaptureFixture[str], trace: Path, *extra: str, nodes: int = 1, decision: str = "recommend"
) -> tuple[int, str, str]:
    code = main(
        [
            "simulate",
            "--trace",
            str(trace),
            "--gpu-product",
            "NVIDIA-A100-SXM4-80GB",
            "--nodes",
            str(nodes),
            "--baseline",
            "default",
            "--decision",
            decision,
            "-o",
            "json",
            *extra,
        ]
    )
    got = capsys.readouterr()
    return code, got.out, got.err


def test_snapshot_at_past_the_end_of_the_replay_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An instant the replay never reaches writes no snapshot: the command says so (MIGC448, exit 1,
    no results on stdout) instead of exiting 0 with ``snapshot: null`` and an absent directory."""
    snap = tmp_path / "snap"
    code, out, err = _cli(capsys, _csv(tmp_path), "--snapshot-at", "30d", "--snapshot-dir", str(snap))
    assert code == ExitCode.INVALID
    assert "MIGC448" in err and "--snapshot-at 30d" in err and "ended" in err
    assert out == ""
    assert not snap.exists()


def test_a_snapshot_dir_that_cannot_be_created_is_refused_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --snapshot-dir under a regular file cannot be written: a usage error before the replay runs
    (it was an internal error, exit 70, after the whole replay)."""
    (tmp_path / "afile").write_text("mine", encoding="utf-8")
    code, out, err = _cli(
        capsys, _csv(tmp_path), "--snapshot-at", "1h", "--snapshot-dir", str(tmp_path / "afile" / "snap")
    )
    assert code == ExitCode.USAGE
    assert "--snapshot-dir" in err and "not a directory" in err
    assert "done" not in err  # the replay did not run
    assert out == ""
    assert (tmp_path / "afile").read_text(encoding="utf-8") == "mine"


def test_a_snapshot_does_not_change_the_replay(tmp_path: Path) -> None:
    """Taking a snapshot (a full evaluation at that instant, for its evidence) leaves every result of
    the replay as it is without one: its blockedBy counted every gate the full evaluation failed
    there, where the lazy evaluation counts the one that held it before the solve."""
    assert A100 is not None
    catalog = load_catalog()
    plain = result_dict(simulate(PODS, A100, ONE, "default", POLICY, catalog=catalog))

    def drop(*_: object) -> None:
        return None

    for after in (0, 900, 5 * 3600):
        res = simulate(
            PODS, A100, ONE, "default", POLICY, catalog=catalog, snapshot=Snapshot(after, tmp_path, drop)
        )
        assert res.snapshot is not None
        got = result_dict(res)
        got["snapshot"] = None
        assert got == plain, after


@pytest.mark.parametrize(
    "option",
    [
        ["--idle-pass"],
        ["--demand", "now"],
        ["--demand", "peak", "--demand-window", "6h"],
        ["--layouts", "maximal"],
        ["--baseline", "naive"],
    ],
)
def test_options_recommend_would_ignore_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    """--decision recommend replaces the cover: the options that only steer the cover (its sizing,
    idle pass, layouts) or a baseline without the default loop changed nothing in the replay's
    results; they are a usage error naming the option, before the replay."""
    code, out, err = _cli(capsys, _csv(tmp_path), *option)
    assert code == ExitCode.USAGE
    assert option[0] in err and "--decision recommend" in err
    assert "done" not in err and out == ""


def test_the_options_recommend_reads_are_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The check above refuses only what recommend ignores: the rollout's and the disruption rule's
    options still go through (and change the replay)."""
    code, out, _ = _cli(capsys, _csv(tmp_path), "--demand", "history", "--disruption", "off")
    assert code == ExitCode.OK
    off = json.loads(out)["results"][0]
    code, out, _ = _cli(capsys, _csv(tmp_path))
    assert code == ExitCode.OK
    assert json.loads(out)["results"][0]["blockedBy"] != off["blockedBy"]


# one pod of 8 whole GPUs and four of one, on two nodes of 8 carved all-balanced
SPLIT = [TracePod("big8", 0, 86400, 8, 1000, 0)] + [
    TracePod(f"one-{k}", 0, 86400, 1, 1000, 0) for k in range(4)
]


def test_a_pod_of_a_whole_node_is_served(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The 8-GPU pod needs one node's 8 GPUs: recommend's proposal keeps them on one node (the cover
    serves it too), and migc recommend on a snapshot at that proposal decides the same."""
    assert A100 is not None
    two = Settings(nodes=2, decision="recommend")
    res = simulate(SPLIT, A100, two, "default", POLICY)
    assert res.never_served == 0  # it was 1: 12 whole GPUs proposed, 6 per node
    assert (
        res.never_served
        == simulate(SPLIT, A100, replace(two, decision="cover"), "default", POLICY).never_served
    )
    trace = _csv(tmp_path, SPLIT, "split.csv")
    snap = tmp_path / "snap"
    at = int(res.revision_times[0])
    code, out, _ = _cli(capsys, trace, "--snapshot-at", f"{at}s", "--snapshot-dir", str(snap), nodes=2)
    assert code == ExitCode.OK
    taken = json.loads(out)["results"][0]["snapshot"]
    assert taken["proposed"] is True
    code, out = _recommend(capsys, snap, taken["at"])
    assert out == (snap / "decision.json").read_text(encoding="utf-8")
    assert code == ExitCode.DRIFT
    assert {"workload": "gpu-x8", "from": 0, "to": 1} in json.loads(out)["replicas"]


def test_every_whole_gpu_pod_runs_once_recommend_proposes_them() -> None:
    """The eight whole-GPU pods all start at the first proposal, as with the cover. The replay's
    policy declared the start's all-balanced instances (16 x 1g, 8 x 2g, 8 x 3g), which recommend
    never sizes down while no pod of those profiles is observed, so the solver kept half the node
    for them and four of the pods waited three days (261,240 s) for the other four to finish."""
    assert A100 is not None
    res = simulate(PODS, A100, ONE, "default", POLICY)
    waits = sorted(w for w, _ in res.waits["7g"])
    assert len(waits) == 8 and waits[-1] < 86_400
    cover = simulate(PODS, A100, replace(ONE, decision="cover"), "default", POLICY)
    assert waits[-1] <= max(w for w, _ in cover.waits["7g"]) + POLICY.interval_seconds


def test_a_policy_the_snapshot_cannot_write_is_refused_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/multi-cluster's rule names its pool a100, which the replay's fleet (pool sim) lacks:
    the snapshot's policy does not read back (MIGC106). That was found at the --snapshot-at instant,
    after replaying up to it; it is now MIGC448 before the replay."""
    import compiler.commands.simulate as command

    def no_replay(*_: object, **__: object) -> None:
        raise AssertionError("the replay ran")

    monkeypatch.setattr(command, "simulate", no_replay)
    root = Path(__file__).resolve().parents[1]
    snap = tmp_path / "snap"
    code, out, err = _cli(
        capsys,
        _csv(tmp_path),
        "--policy",
        str(root / "examples" / "multi-cluster"),
        "--snapshot-at",
        "3d",
        "--snapshot-dir",
        str(snap),
    )
    assert code == ExitCode.INVALID
    assert "MIGC449" in err and "a100" in err
    assert out == "" and not snap.exists()
    # without a snapshot too: recommend would refuse the rule's headroom at every evaluation
    code, out, err = _cli(capsys, _csv(tmp_path), "--policy", str(root / "examples" / "multi-cluster"))
    assert code == ExitCode.INVALID and "MIGC449" in err and out == ""


@pytest.mark.parametrize("example", ["lab", "prod"])
def test_a_fleet_with_pricing_is_snapshotted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], example: str
) -> None:
    """A --policy whose Fleet prices the model (most examples do) was refused by the snapshot: the
    replay's pool had no price and the loader reads the Fleet's back (price_per_gpu_hour None read
    back as 2.1). The pool carries the Fleet's price; migc recommend on the snapshot decides as the
    replay did."""
    assert A100 is not None
    root = Path(__file__).resolve().parents[1]
    snap = tmp_path / "snap"
    first = simulate(PODS, A100, ONE, "default", POLICY).revision_times[0]
    code, out, err = _cli(
        capsys,
        _csv(tmp_path),
        "--policy",
        str(root / "examples" / example),
        "--snapshot-at",
        f"{int(first)}s",
        "--snapshot-dir",
        str(snap),
    )
    assert code == ExitCode.OK, err
    taken = json.loads(out)["results"][0]["snapshot"]
    code, printed = _recommend(capsys, snap, taken["at"])
    assert printed == (snap / "decision.json").read_text(encoding="utf-8")
    assert code == (ExitCode.DRIFT if taken["proposed"] else ExitCode.OK)


# six 1g pods running from 0 for five days, then four 4g.40gb pods: a re-carve that keeps MIG on
PER_GPU = [TracePod(f"small-{k}", 0, 5 * 86400, 1, 100, 0) for k in range(6)] + [
    TracePod(f"mid-{k}", 3600, 3 * 86400, 1, 550, 0) for k in range(4)
]


def test_on_static_dra_nodes_the_one_decision_is_priced_per_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--drain-scope gpu`` (static DRA nodes): the replay hands recommend a static DRA pool, every pod
    asking through a ResourceClaim and each running one holding the devices the driver publishes for
    the GPU it runs on (compiler/simulate/decision.py ``driver_slice``). recommend then prices the
    change per GPU: the 4g.40gb GPUs it carves leave the GPUs of the six 1g pods alone, so nothing is
    drained and it proposes sooner than at node scope, where all six are charged (and evicted).
    ``migc recommend`` on the snapshot at the proposal (a DRA policy, claims and slices in
    cluster.json) prints the replay's evidence byte for byte."""
    assert A100 is not None
    gpu = replace(ONE, drain_scope="gpu")
    per_gpu = simulate(PER_GPU, A100, gpu, "default", POLICY)
    per_node = simulate(PER_GPU, A100, ONE, "default", POLICY)
    assert per_gpu.evictions == 0 < per_node.evictions == 6
    first = per_gpu.revision_times[0]
    assert first < per_node.revision_times[0]
    snap = tmp_path / "snap"
    trace = _csv(tmp_path, PER_GPU)
    at = ("--snapshot-at", f"{int(first)}s", "--snapshot-dir", str(snap))
    doc = _simulate(capsys, trace, "--drain-scope", "gpu", *at)
    taken = doc["results"][0]["snapshot"]
    assert taken["proposed"] is True
    code, out = _recommend(capsys, snap, taken["at"])
    assert (code, out) == (ExitCode.DRIFT, (snap / "decision.json").read_text(encoding="utf-8"))
    (node,) = json.loads(out)["disruption"]["nodes"]
    assert (node["scope"], node["running"], node["drained"], node["loss"]) == ("gpu", 6, 0, 0.0)
    cluster = json.loads((snap / "cluster.json").read_text(encoding="utf-8"))
    kinds = sorted({item["kind"] for item in cluster["items"]})
    assert kinds == ["Node", "Pod", "ResourceClaim", "ResourceSlice"]
    fleet = (snap / "policy" / "fleet.yaml").read_text(encoding="utf-8")
    assert "allocation: dra" in fleet and "kubernetesVersion: '1.34'" in fleet


def test_lazy_and_full_evaluations_decide_the_same_on_static_dra_nodes(tmp_path: Path) -> None:
    """The bound before the solve must stay a lower bound where a change is priced per GPU: there a
    change charges only the pods on the GPUs it re-carves, so the cheapest change of a node is that of
    its cheapest GPU, not one that drains the whole node (which would hold, unsolved, the proposals the
    full evaluation makes: here the 4g.40gb GPUs that leave the six 1g pods alone)."""
    assert A100 is not None
    catalog = load_catalog()
    gpu = replace(ONE, drain_scope="gpu")
    first = simulate(PER_GPU, A100, gpu, "default", POLICY).revision_times[0]
    seen = _evaluations(tmp_path, PER_GPU, gpu, range(3600, int(first) + 1, 900))
    assert any(full.proposed_change for *_, full in seen)
    for policy, current, obs, state, full in seen:
        lazy = recommend(policy, catalog, current, obs, state, obs.taken_at, lazy=True)
        assert lazy.proposed_change == full.proposed_change, obs.taken_at
        assert lazy.state == full.state
