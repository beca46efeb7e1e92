"""The controller's waits that the replay models besides the drain grace and the MIG manager's apply
(issue 22 item 5): the ConfigMap refresh before a new config name is used, and evictions a
PodDisruptionBudget refuses for a while.

* ConfigMap: controller/reconciler/apply.py ``_mounted`` does not label a drained node with a config
  name until it has been in the mig-parted ConfigMap ``apply.configmap_sync_delay`` (90 s) — the
  MIG manager reads the ConfigMap through a volume the kubelet refreshes after its sync period
  (controller/reconciler/migparted.py ``MountedConfigs``). A name is a node layout's content
  (compiler/render/manifests.py ``collect_configs``), so a layout already in the ConfigMap waits
  no more.
* PDB: controller/reconciler/drain.py ``_evict`` never forces a refused eviction (HTTP 429); it
  retries after ``Backoff.bump`` (1 s doubling up to 30 s) and fails the node "drain timed out"
  once grace + ``drain.eviction_timeout`` (1800 s) have passed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import PartitionPolicy
from compiler.simulate.engine import Result, Settings, eviction_retry, simulate
from compiler.simulate.trace import TracePod
from controller.settings import Settings as ControllerSettings

A100 = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
NAIVE = PartitionPolicy(mode="dynamic")


def pod(name: str, at: float, secs: float, milli: int = 1000) -> TracePod:
    return TracePod(name, at, secs, 1, milli, 0)


def waits(res: Result) -> dict[str, list[float]]:
    return {k: sorted(w for w, _ in v) for k, v in sorted(res.waits.items())}


def test_the_waits_are_the_controllers_defaults() -> None:
    c = ControllerSettings()
    assert Settings(nodes=1).sync_seconds == c.apply.configmap_sync_delay == 90
    # the replay's retry rule is the controller's Backoff: 1 s, doubling up to 30 s, within 1800 s
    assert (c.drain.eviction_backoff, c.drain.eviction_backoff_max, c.drain.eviction_timeout) == (1, 30, 1800)


@pytest.mark.parametrize(
    ("blocked", "evicted"),
    [(0, 0), (1, 1), (2, 3), (31, 31), (32, 61), (600, 601), (1771, 1771), (1772, None), (5000, None)],
)
def test_a_refused_eviction_goes_through_at_the_controllers_first_retry_after_it(
    blocked: float, evicted: float | None
) -> None:
    """Tries at 0, 1, 3, 7, 15, 31, then every 30 s: 61, 91, … 1771; the next, 1801, is past the
    eviction timeout (1800 s after the grace): the node fails instead."""
    assert eviction_retry(blocked) == evicted


def test_a_new_layout_waits_for_the_configmap_refresh_before_the_apply() -> None:
    """1 idle node x 1 balanced GPU, naive. ``b`` (whole GPU) at 0: the revision's 7g layout is a config
    name new to the ConfigMap; the node is drained at once but labelled only at 90 s, applied 90–150:
    ``b`` waits 150 s (60 s without the wait, 260 s with a 200 s one)."""
    assert A100 is not None
    trace = [pod("b", 0, 100)]
    for sync, wait in ((90.0, 150.0), (0.0, 60.0), (200.0, 260.0)):
        res = simulate(trace, A100, Settings(nodes=1, gpus_per_node=1, sync_seconds=sync), "naive", NAIVE)
        assert waits(res) == {"7g": [wait]}
        assert res.sync_waits == (1 if sync else 0)


def test_a_layout_already_in_the_configmap_waits_no_more() -> None:
    """2 idle nodes x 1 balanced GPU, naive. ``a`` (whole GPU, 10,000 s) at 0: node 0 to 7g, a new name,
    applied 90–150 (``a`` waits 150 s). ``c`` (whole GPU) at 1000: node 1 to 7g, whose name has been in
    the ConfigMap since 0: labelled at once, applied 1000–1060, ``c`` waits 60 s. One wait in all."""
    assert A100 is not None
    trace = [pod("a", 0, 10_000), pod("c", 1000, 100)]
    res = simulate(trace, A100, Settings(nodes=2, gpus_per_node=1), "naive", NAIVE)
    assert waits(res) == {"7g": [60.0, 150.0]}
    assert (res.sync_waits, res.reconfigurations) == (1, 2)


def test_a_pdb_holds_the_drain_until_the_controllers_retry_after_it() -> None:
    """1 node x 1 balanced GPU, naive, every pod protected, refused for 600 s. ``a`` (1g, 100,000 s)
    runs from 0; ``b`` (whole GPU) at 100 wants the GPU: the node drains, the grace ends at 1900, the
    eviction is refused; the controller's retry at 1900 + 601 evicts ``a``; the 7g name is in the
    ConfigMap since 100: applied 2501–2561, ``b`` waits 2461 s. Without a PDB: 1900–1960, 1860 s.
    ``a`` waits for revision 2 at 2661 (``b`` done), a 1g name new then: labelled at 2751, back at 2811."""
    assert A100 is not None
    trace = [pod("a", 0, 100_000, milli=100), pod("b", 100, 100)]
    s = Settings(nodes=1, gpus_per_node=1, pdb_fraction=1.0, pdb_seconds=600)
    res = simulate(trace, A100, s, "naive", NAIVE)
    assert waits(res) == {"1g": [310.0], "7g": [2461.0]}  # a pod's waits over its attempts
    assert (res.evictions, res.evictions_blocked, res.drain_timeouts, res.failures) == (1, 1, 0, 0)
    free = simulate(trace, A100, Settings(nodes=1, gpus_per_node=1), "naive", NAIVE)
    assert waits(free)["7g"] == [1860.0] and free.evictions_blocked == 0


def test_a_pdb_past_the_eviction_timeout_fails_the_node_and_the_pod_runs_on() -> None:
    """As above, refused for 4000 s, ``a`` runs 9000 s. Grace ends at 1900, refused; at 1900 + 1800 the
    drain times out: the node fails (attempt 1), cordoned, layout unchanged; the automatic retry
    after 300 s drains again: grace to 5800, refused, fails at 7600 (attempt 2 = max_attempts); ``a``
    ends by itself at 9000; the human's retry (1 h) at 11,200 finds the node empty: applied
    11,200–11,260, ``b`` waits 11,160 s. ``a`` is never evicted, no apply failed."""
    assert A100 is not None
    trace = [pod("a", 0, 9000, milli=100), pod("b", 100, 100)]
    s = Settings(nodes=1, gpus_per_node=1, pdb_fraction=1.0, pdb_seconds=4000)
    res = simulate(trace, A100, s, "naive", NAIVE)
    assert waits(res) == {"1g": [0.0], "7g": [11_160.0]}
    assert (res.evictions, res.evictions_blocked, res.drain_timeouts, res.failures) == (0, 2, 2, 0)


def test_pdbs_are_drawn_apart_from_the_failures() -> None:
    """The protected pods come from their own draws of ``seed``: with none protected the replay is
    the one without PDBs, failures included."""
    assert A100 is not None
    trace = [pod(f"p{i}", 50.0 * i, 3000, milli=100 if i % 2 else 1000) for i in range(12)]
    s = Settings(nodes=2, gpus_per_node=2, failure_rate=0.3, seed=4)
    plain = simulate(trace, A100, s, "naive", NAIVE)
    none = simulate(trace, A100, replace(s, pdb_fraction=1e-9), "naive", NAIVE)
    assert (none.waits, none.failures, none.evictions) == (plain.waits, plain.failures, plain.evictions)


def test_the_cli_takes_the_waits_and_reports_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\n"
        "a,1000,1024,1,100,,LS,Succeeded,0,100000,0\n"
        "b,1000,1024,1,1000,,LS,Succeeded,100,200,100\n",
        encoding="utf-8",
    )
    args = ["simulate", "--trace", str(trace), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1",
            "--gpus-per-node", "1", "--baseline", "naive", "-o", "json"]  # fmt: skip
    more = ["--pdb-fraction", "1", "--pdb-seconds", "600", "--configmap-sync-delay", "30"]
    assert main([*args, *more]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert (doc["configMapSyncSeconds"], doc["pdbFraction"], doc["pdbSeconds"]) == (30, 1, 600)
    row = doc["results"][0]
    # ``a``, evicted at 2501, waits for revision 2 (2661, when ``b`` is done): its 1g name is new
    assert (row["evictionsBlocked"], row["drainTimeouts"], row["syncWaits"]) == (1, 0, 1)
    assert row["waitSeconds"]["7g"]["p50"] == 2461.0
    for bad in (["--pdb-fraction", "1.5"], ["--configmap-sync-delay", "-1"]):
        assert main([*args, *bad]) == ExitCode.USAGE
    fill = ["simulate", "--mode", "fill", "--trace", str(trace), "--gpu-product", "NVIDIA-A100-SXM4-80GB",
            "--nodes", "1", "--pdb-fraction", "0.5"]  # fmt: skip
    assert main(fill) == ExitCode.USAGE
    assert "--pdb-fraction: only for --mode replay" in capsys.readouterr().err


def test_a_node_waiting_for_the_configmap_re_targeted_to_a_mounted_name_goes_on_at_once() -> None:
    """2 nodes x 1 GPU carved 7g, no pods. Revision 1 at 0 re-targets node 0 to 7 x 1g, a name new to
    the ConfigMap: drained at once, it waits for the refresh until 90. Revision 2 at 30 re-targets it
    back to 7g, a name in the ConfigMap all along (node 1 carries it): the controller's next pass
    (drain.py ``draining`` → apply.py ``start_apply``: ``_mounted`` finds it mounted) goes on at
    30, not at the first name's 90."""
    from compiler.simulate.engine import DRAINING, _Fleet, _Run

    assert A100 is not None
    s = Settings(nodes=2, gpus_per_node=1)
    run = _Run([], A100, s, "default", NAIVE, _Fleet(A100, s, {"7g.80gb": 1}), Result("d", 0.0), 0.0)
    run.apply({0: {"1g.10gb": 7}}, 0.0)
    assert run.fleet.state[0] == DRAINING and 0 in run.sync_seq
    run.apply({0: {"7g.80gb": 1}}, 30.0)
    assert run.fleet.state[0] != DRAINING and 0 not in run.sync_seq
