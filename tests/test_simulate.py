"""`migc simulate`: trace reading, the fraction → profile mapping, the event loop and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import PartitionPolicy
from compiler.simulate.engine import Settings, simulate
from compiler.simulate.trace import TracePod, profile_for, read_trace

HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)
A100 = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
assert A100 is not None
# the first rows of /work/shared/data/openb/openb_pod_list_default.csv (Alibaba clusterdata, openb v2023)
OPENB_HEAD = """openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
openb-pod-0017,88000,327680,0,0,,BE,Running,4000,12902960,4000
openb-pod-0099,8000,30000,1,200,,BE,Pending,5000,,
"""


def write(tmp_path: Path, rows: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + rows)
    return path


def pod(name: str, at: float, secs: float, milli: int = 1000, num: int = 1, prio: int = 0) -> TracePod:
    return TracePod(name, at, secs, num, milli, prio)


def test_trace_rows_kept_and_skipped(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, OPENB_HEAD))
    assert [p.name for p in trace.pods] == ["openb-pod-0000", "openb-pod-0001"]
    assert trace.pods[1].duration == 12902960 - 427061 and trace.pods[0].priority == 3  # LS first
    assert (trace.skipped_no_gpu, trace.skipped_never_ran) == (1, 1)


def test_fraction_to_profile_by_compute_or_memory() -> None:
    assert A100 is not None
    p = pod("x", 0, 1, milli=470)
    assert profile_for(p, A100, "compute") == ("4g.40gb", 1)  # 3/7 = 0.43 < 0.47 <= 4/7
    assert profile_for(p, A100, "memory") == ("3g.40gb", 1)  # 40/80 GB >= 0.47, fewest slices
    assert profile_for(pod("y", 0, 1, milli=100), A100, "compute") == ("1g.10gb", 1)
    assert profile_for(pod("z", 0, 1, num=4), A100, "compute") == ("7g.80gb", 4)


def test_bad_trace_is_a_coded_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("name,num_gpu\nx,1\n")
    args = ["simulate", "--trace", str(bad), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    assert main(args) == ExitCode.INVALID
    assert "MIGC425" in capsys.readouterr().err
    broken = write(tmp_path, "p,1,1,1,abc,,LS,Running,0,10,0\n", "broken.csv")
    assert main([*args[:2], str(broken), *args[3:]]) == ExitCode.INVALID
    assert "MIGC425" in capsys.readouterr().err and "line 2" in capsys.readouterr().err + "line 2"
    good = write(tmp_path, OPENB_HEAD, "good.csv")
    assert main(["simulate", "--trace", str(good), "--gpu-product", "NVIDIA-L4", "--nodes", "1"]) == 1
    assert "MIGC426" in capsys.readouterr().err


def bursty() -> list[TracePod]:
    """Alternating bursts of small and whole-GPU pods on one node: dynamic MIG territory."""
    pods: list[TracePod] = []
    t = 0.0
    for burst in range(12):
        milli = 100 if burst % 2 == 0 else 1000
        for i in range(10):
            pods.append(pod(f"b{burst}-{i}", t + i * 5, 1800, milli))
        t += 3600
    return pods


def test_gates_cut_reconfigurations_and_static_never_reconfigures() -> None:
    assert A100 is not None
    s = Settings(nodes=1, gpus_per_node=8)
    pol = PartitionPolicy(mode="dynamic")
    naive = simulate(bursty(), A100, s, "naive", pol)
    default = simulate(bursty(), A100, s, "default", pol)
    static = simulate(bursty(), A100, s, "static-balanced", pol)
    assert naive.reconfigurations > default.reconfigurations > 0
    assert static.reconfigurations == 0 and static.never_served > 0  # all-balanced has no 7g instance
    assert naive.never_served == default.never_served == 0
    assert sum(len(v) for v in default.waits.values()) == 120
    # a stricter window blocks more evaluations
    slow = simulate(bursty(), A100, s, "default", PartitionPolicy(mode="dynamic", stabilization_seconds=7200))
    assert (
        slow.reconfigurations <= default.reconfigurations and slow.blocked.get("stabilizationWindow", 0) > 0
    )


def test_cli_json_is_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = "".join(
        f"p{i},1000,1000,1,{100 if i % 3 else 1000},,{'LS' if i % 2 else 'BE'},Running,"
        f"{i * 600},{i * 600 + 3000},{i * 600}\n"
        for i in range(60)
    )
    trace = write(tmp_path, rows)
    args = [
        "simulate",
        "--trace",
        str(trace),
        "--gpu-product",
        "NVIDIA-A100-SXM4-80GB",
        "--nodes",
        "1",
        "--gpus-per-node",
        "2",
        "--time-scale",
        "4",
        "-o",
        "json",
    ]
    assert main(args) == ExitCode.OK
    first = capsys.readouterr().out
    assert main(args) == ExitCode.OK
    assert capsys.readouterr().out == first
    doc = json.loads(first)
    assert [r["baseline"] for r in doc["results"]] == [
        "naive",
        "default",
        "static-balanced",
        "static-optimal",
    ]
    for r in doc["results"]:
        assert set(r["waitSeconds"]["all"]) == {"p50", "p95", "p99"}
        assert 0 <= r["sliceUtilisation"] <= 1
