"""CPU and memory per node in the replay (issue 22 item 5: "cpu and memory per node when the trace
gives them"). With ``--node-cpu-milli`` / ``--node-memory-mib`` a pod binds only on a node with its
trace's ``cpu_milli`` / ``memory_mib`` left — the kube-scheduler's NodeResourcesFit filter
(kubernetes/kubernetes@007f7ae7 pkg/scheduler/framework/plugins/noderesources/fit.go ``fitsRequest``:
a node is short of a resource when its allocatable is below the pod's request plus what the pods on
it request) —
and a pod asking more than a node holds is never served. Without them nothing changes and the
columns are listed as not modelled (tests/test_simulate_ignored.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nosync import settings

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import PartitionPolicy
from compiler.simulate import engine
from compiler.simulate.engine import Result, simulate
from compiler.simulate.trace import TraceError, TracePod, read_trace

A100 = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
DYNAMIC = PartitionPolicy(mode="dynamic")
HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)


def pod(name: str, at: float, secs: float, milli: int = 1000, cpu: int = 0, memory: int = 0) -> TracePod:
    return TracePod(name, at, secs, 1, milli, 0, cpu, memory)


def waits(res: Result) -> dict[str, list[tuple[float, bool]]]:
    return {k: sorted(v) for k, v in sorted(res.waits.items())}


@pytest.mark.parametrize(
    ("cpu", "memory", "b_waits"),
    [(None, None, 0.0), (96_000, None, 90.0), (None, 393_216, 90.0), (120_000, 400_000, 0.0)],
)
def test_a_pod_waits_for_cpu_or_memory_even_where_a_gpu_is_free(
    cpu: int | None, memory: int | None, b_waits: float
) -> None:
    """1 node x 2 whole GPUs (MIG off). ``a`` (60,000 mCPU, 200,000 MiB) runs 0–100; ``b`` (the same)
    comes at 10: GPU 1 is free, but the node has 36,000 mCPU / 193,216 MiB left, so ``b`` starts at
    100 when ``a`` leaves — wherever one of the two is modelled and too small, and not otherwise."""
    assert A100 is not None
    trace = [pod("a", 0, 100, cpu=60_000, memory=200_000), pod("b", 10, 100, cpu=60_000, memory=200_000)]
    s = settings(nodes=1, gpus_per_node=2, node_cpu_milli=cpu, node_memory_mib=memory)
    res = simulate(trace, A100, s, "mig-off", DYNAMIC)
    assert waits(res) == {"7g": [(0.0, False), (b_waits, False)]}


def test_a_pod_asking_more_than_a_node_holds_is_never_served_and_blocks_nobody() -> None:
    """``big`` asks 100,000 mCPU of a 96,000 mCPU node: never queued, censored from its arrival to the
    end; ``small`` after it runs at once."""
    assert A100 is not None
    trace = [pod("big", 0, 50, cpu=100_000), pod("small", 5, 50, cpu=1_000)]
    res = simulate(trace, A100, settings(nodes=1, gpus_per_node=1, node_cpu_milli=96_000), "mig-off", DYNAMIC)
    assert res.never_served == 1
    # the replay ends when small departs at 55: big's wait is censored, 55 s since it arrived
    assert waits(res) == {"7g": [(0.0, False), (55.0, True)]}


def test_per_pod_carving_binds_a_later_pod_that_asks_less_cpu() -> None:
    """per-pod, 1 node x 1 GPU of 10,000 mCPU. ``a`` (1g, 6,000 mCPU) runs 0–1000; ``b`` (1g, 6,000) at
    10 finds free slices but no CPU; ``c`` (1g, 2,000) at 20 behind it in the queue binds at once — one
    pod of a profile that does not fit says nothing of the next where CPU is modelled. ``b`` starts
    when ``a`` leaves."""
    assert A100 is not None
    trace = [pod("a", 0, 1000, 100, 6_000), pod("b", 10, 100, 100, 6_000), pod("c", 20, 100, 100, 2_000)]
    s = settings(nodes=1, gpus_per_node=1, node_cpu_milli=10_000)
    res = simulate(trace, A100, s, "per-pod", DYNAMIC)
    assert waits(res) == {"1g": [(0.0, False), (0.0, False), (990.0, False)]}


def test_an_idle_gpu_on_a_node_without_cpu_left_holds_nobody() -> None:
    """default loop, drain scope gpu, 1 node x 2 balanced GPUs of 10,000 mCPU. ``a`` (1g, 9,000 mCPU)
    runs 0–20,000 on GPU 0; ``b`` (1g, 5,000 mCPU) at 100: GPU 1 has free 1g instances and no pod on it,
    but the node has 1,000 mCPU left, so ``b`` could not run there: heldOnIdleGpu stays 0 (it counted
    ``b`` before CPU was taken into it) and ``b`` starts when ``a`` leaves."""
    assert A100 is not None
    trace = [pod("a", 0, 20_000, 100, 9_000), pod("b", 100, 100, 100, 5_000)]
    s = settings(nodes=1, gpus_per_node=2, node_cpu_milli=10_000, drain_scope="gpu")
    res = simulate(trace, A100, s, "default", DYNAMIC)
    assert res.held_on_idle == 0
    assert waits(res) == {"1g": [(0.0, False), (19_900.0, False)]}


def test_the_reader_reads_only_the_columns_modelled(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    rows = "p0,12000,16384,1,1000,,LS,Running,0,600,0\np1,,2048,1,500,T4,LS,Running,1,9,1\n"
    path.write_text(HEADER + rows)
    plain = read_trace(path)
    assert [(p.cpu_milli, p.memory_mib) for p in plain.pods] == [(0, 0), (0, 0)]
    assert dict(plain.ignored) == {"gpu_spec": 1, "cpu_milli": 1, "memory_mib": 2}
    both = read_trace(path, resources=("cpu_milli", "memory_mib"))
    assert [(p.cpu_milli, p.memory_mib) for p in both.pods] == [(12000, 16384), (0, 2048)]  # "" is 0
    assert dict(both.ignored) == {"gpu_spec": 1}


@pytest.mark.parametrize(
    ("row", "col", "why"),
    [("p0,-5,1,1,1000,,LS,R,0,6,0", 4, "is outside 0.."), ("p0,1,1e9,1,1000,,LS,R,0,6,0", 6, "is not a")],
)
def test_a_bad_value_in_a_modelled_column_is_refused_with_its_place(
    tmp_path: Path, row: str, col: int, why: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(HEADER + row + "\n")
    read_trace(path)  # not modelled: not read, not refused
    with pytest.raises(TraceError) as exc:
        read_trace(path, resources=("cpu_milli", "memory_mib"))
    d = exc.value.diagnostic
    assert (d.code, d.line, d.col) == ("MIGC425", 2, col) and why in d.message


def test_a_trace_without_the_column_cannot_model_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\nq,1,500,LS,0,60,0\n")
    args = ["simulate", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    assert main([*args, "--node-memory-mib", "1024"]) == ExitCode.INVALID
    err = capsys.readouterr().err
    assert "MIGC425" in err and "missing column(s) memory_mib" in err and "Traceback" not in err


def test_the_cli_models_them_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        HEADER + "a,60000,1,1,1000,,LS,Running,0,100,0\nb,60000,1,1,1000,,LS,Running,10,110,10\n"
        "c,200000,1,1,1000,,LS,Running,20,120,20\n"
    )
    args = ["simulate", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    args += ["--gpus-per-node", "2", "--baseline", "mig-off", "--node-cpu-milli", "96000"]
    assert main([*args, "-o", "json"]) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    assert (out["nodeCpuMilli"], out["nodeMemoryMib"], out["podsFittingNoNode"]) == (96000, None, 1)
    assert out["ignoredColumns"] == {"gpu_spec": 0, "memory_mib": 3}
    assert out["results"][0]["neverServed"] == 1
    assert main([*args, "-o", "text"]) == ExitCode.OK
    header = capsys.readouterr().out.splitlines()[0]
    assert header.endswith("; 96000 mCPU per node; 1 pods fit no node (never served)")


def test_fill_mode_refuses_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--mode fill (FGD's protocol) packs GPUs only: the flags would be accepted and ignored."""
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "a,60000,1,1,1000,,LS,Running,0,100,0\n")
    args = ["simulate", "--mode", "fill", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB"]
    assert main([*args, "--nodes", "1", "--node-cpu-milli", "96000"]) == ExitCode.USAGE
    assert "--node-cpu-milli: only for --mode replay" in capsys.readouterr().err


def test_without_the_flags_the_text_header_is_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod of more GPUs than a node has fits no node with or without the flags (JSON
    ``podsFittingNoNode``), but without them the text header is byte-identical to before they existed:
    it says nothing of it."""
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "a,1000,1,1,1000,,LS,Running,0,100,0\nb,1000,1,2,1000,,LS,Running,10,110,10\n")
    args = ["simulate", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    args += ["--gpus-per-node", "1", "--baseline", "mig-off"]
    assert main([*args, "-o", "json"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["podsFittingNoNode"] == 1
    assert main([*args, "-o", "text"]) == ExitCode.OK
    assert "fit no node" not in capsys.readouterr().out
    assert main([*args, "--node-cpu-milli", "96000", "-o", "text"]) == ExitCode.OK
    assert "; 1 pods fit no node (never served)" in capsys.readouterr().out


def test_per_pod_carving_prunes_a_profile_no_node_has_the_slices_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """per-pod, 1 node x 1 GPU: ``big`` (7g) holds it 0–1000 and 30 ``1g`` pods queue behind it. No
    node has a 1g placement, whatever CPU it has left, so each pass stops at the first 1g pod, as
    without CPU modelled (it tried every pod of the queue on every event: a pass as long as the queue)."""
    assert A100 is not None
    trace = [pod("big", 0, 1000, cpu=1_000)] + [pod(f"s{k}", 1 + k, 10, 100, cpu=1_000) for k in range(30)]
    calls: list[int] = []
    real = engine._Run.carve_bind

    def counted(self: engine._Run, i: int, now: float) -> bool | None:
        calls.append(i)
        return real(self, i, now)

    monkeypatch.setattr(engine._Run, "carve_bind", counted)
    tried: dict[int | None, int] = {}
    for cpu in (None, 96_000):
        calls.clear()
        s = settings(nodes=1, gpus_per_node=1, node_cpu_milli=cpu)
        assert simulate(trace, A100, s, "per-pod", DYNAMIC).never_served == 0
        tried[cpu] = len(calls)
    assert tried[96_000] == tried[None]
