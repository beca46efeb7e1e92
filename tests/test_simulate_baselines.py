"""`migc simulate` baselines beside the loop: mig-off, static-peak, static-average, per-pod carving."""

from __future__ import annotations

import json
from pathlib import Path

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import PartitionPolicy
from compiler.simulate.carve import CarvedGpu, Carver
from compiler.simulate.engine import BASELINES, Result, Settings, maximal, shape_peak, simulate
from compiler.simulate.trace import TracePod

CATALOG = load_catalog()
A100 = CATALOG.by_product("NVIDIA-A100-SXM4-80GB")
assert A100 is not None
POLICY = PartitionPolicy(mode="dynamic")
ONE = Settings(nodes=1, gpus_per_node=1)


def pod(name: str, at: float, secs: float, milli: int = 1000, num: int = 1) -> TracePod:
    return TracePod(name, at, secs, num, milli, 0)


def waits(res: Result) -> dict[str, list[tuple[float, bool]]]:
    return {k: sorted(v) for k, v in sorted(res.waits.items())}


def test_carver_takes_the_lowest_free_placement_of_the_catalog() -> None:
    """The DRA driver's DynamicMIG rule (kubernetes-sigs/dra-driver-nvidia-gpu @ 9593204: one device
    per (GPU, profile, placement), cmd/gpu-kubelet-plugin/nvlib.go:573-588, consuming its memory
    slices, deviceinfo.go:273-278, published in name order, driver.go:206-212). A100-80GB placements
    (catalog: 1g.10gb 0..6, 2g.20gb 0/2/4, 4g.40gb 0 only): after a 1g at slice 0, a 2g lands at 2,
    and a 4g no longer fits although {1g, 2g, 4g} is a valid layout (4g@0, 2g@4, 1g@6): the order
    of arrival fragments the GPU."""
    assert A100 is not None
    c, gpu = Carver(A100), CarvedGpu()
    assert c.start(gpu, "1g.10gb") == 0
    c.carve(gpu, "1g.10gb", 0)
    assert c.start(gpu, "2g.20gb") == 2
    c.carve(gpu, "2g.20gb", 2)
    assert c.start(gpu, "4g.40gb") is None and c.start(gpu, "3g.40gb") == 4
    assert c.start(gpu, "7g.80gb") is None
    c.destroy(gpu, "1g.10gb", 0)
    c.destroy(gpu, "2g.20gb", 2)
    assert gpu == CarvedGpu() and c.start(gpu, "7g.80gb") == 0
    # seven 1g fill the 7 compute slices: slice 7 stays dark, nothing else fits
    for s in range(7):
        assert c.start(gpu, "1g.10gb") == s
        c.carve(gpu, "1g.10gb", s)
    assert gpu.mask == 0b0111_1111 and c.start(gpu, "1g.10gb") is None


def test_per_pod_carving_waits_for_the_placement_not_the_multiset() -> None:
    """a (1g, 0..1000) at slice 0, b (2g, 10..1010) at slice 2; c (4g) needs start 0: it waits until
    both are gone (1010), 990 s, though a multiset model would have carved it at once."""
    assert A100 is not None
    trace = [pod("a", 0, 1000, milli=100), pod("b", 10, 1000, milli=250), pod("c", 20, 100, milli=500)]
    res = simulate(trace, A100, ONE, "per-pod", POLICY)
    assert waits(res) == {"1g": [(0.0, False)], "2g": [(0.0, False)], "4g": [(990.0, False)]}
    assert res.reconfigurations == 0 and res.evictions == 0 and res.instances_carved == 3
    assert res.held_on_idle is None and res.non_maximal is None


def test_per_pod_multi_gpu_pod_needs_empty_gpus_on_one_node() -> None:
    """A pod of 2 whole GPUs on 2 nodes × 2 GPUs: a 1g on node 0's first GPU leaves node 0 one
    empty GPU, so the pod goes to node 1 at once; a second such pod waits for the 1g to end."""
    assert A100 is not None
    trace = [pod("s", 0, 500, milli=100), pod("m", 1, 1000, num=2), pod("m2", 2, 10, num=2)]
    res = simulate(trace, A100, Settings(nodes=2, gpus_per_node=2), "per-pod", POLICY)
    assert waits(res) == {"1g": [(0.0, False)], "2x7g": [(0.0, False), (498.0, False)]}


def test_mig_off_gives_every_pod_whole_gpus_and_keeps_its_size_class() -> None:
    """MIG off (the report's "before"): two 1g pods on one GPU run one after the other."""
    assert A100 is not None
    trace = [pod("a", 0, 100, milli=100), pod("b", 0, 100, milli=100)]
    off = simulate(trace, A100, ONE, "mig-off", POLICY)
    assert waits(off) == {"1g": [(0.0, False), (100.0, False)]}
    assert off.reconfigurations == 0 and off.busy_slice_seconds == 2 * 100 * 7
    static = simulate(trace, A100, ONE, "static-balanced", POLICY)
    assert waits(static) == {"1g": [(0.0, False), (0.0, False)]}


def test_shape_peak_counts_pods_running_at_once() -> None:
    assert A100 is not None
    from compiler.simulate.engine import _trace_pods

    pods = _trace_pods(
        [pod("a", 0, 10, milli=100), pod("b", 5, 10, milli=100), pod("c", 10, 10, milli=100)], A100, ONE
    )
    assert shape_peak(pods) == {("1g.10gb", 1): 2.0}  # a leaves at 10 as c arrives


def test_static_peak_and_average_come_from_the_solver() -> None:
    """One 4g pod always running and 1g pods for a tenth of the time on 1 × 2 GPUs: the solver's
    layout for the peak has a 4g and a 1g (and the spare room balanced); every pod runs at once."""
    assert A100 is not None
    trace = [pod("big", 0, 1000, milli=500), *(pod(f"s{i}", i * 100, 10, milli=100) for i in range(10))]
    s = Settings(nodes=1, gpus_per_node=2)
    for name in ("static-peak", "static-average"):
        res = simulate(trace, A100, s, name, POLICY, catalog=CATALOG)
        assert res.never_served == 0 and res.reconfigurations == 0, name
        assert all(w == 0.0 for ws in res.waits.values() for w, _ in ws), name


def test_maximal_layouts() -> None:
    assert A100 is not None
    assert maximal(A100, (("7g.80gb", 1),))
    assert maximal(A100, (("3g.40gb", 2),))  # 3g@0 + 3g@4: every memory slice used
    assert not maximal(A100, (("4g.40gb", 1),))  # 3 compute slices dark: a 3g still fits
    assert not maximal(A100, ())
    assert maximal(A100, (("1g.10gb", 7),))


def test_every_baseline_reports_the_same_fields(tmp_path: Path, capsys: object) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\n"
        + "".join(
            f"p{i},1,1,1,{(100, 500, 1000)[i % 3]},,BE,Running,{i * 50},{i * 50 + 900},{i * 50}\n"
            for i in range(30)
        )
    )
    args = [
        "simulate",
        "--trace",
        str(path),
        "--gpu-product",
        "NVIDIA-A100-SXM4-80GB",
        "--nodes",
        "1",
        "--gpus-per-node",
        "2",
        "-o",
        "json",
    ]
    assert main(args) == ExitCode.OK
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    rows = json.loads(out)["results"]
    assert [r["baseline"] for r in rows] == list(BASELINES)
    keys = {frozenset(r) for r in rows}
    assert len(keys) == 1
    for r in rows:
        assert set(r["waitSeconds"]["all"]) == {"p50", "p95", "p99", "pods", "censored", "lowerBound"}
        assert r["waitSeconds"]["all"]["pods"] == 30
        counters = (r["heldOnIdleGpu"], r["nonMaximalLayouts"])
        if r["baseline"] in ("naive", "default"):
            assert all(isinstance(c, int) for c in counters)
        else:
            assert counters == (None, None)
