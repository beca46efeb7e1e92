"""compiler/simulate/trace.py: reading an openb pod list (which pods replay, their times and class)
and mapping a GPU fraction to an A100-SXM4-80GB profile (7 compute slices, 80 GB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.catalog import GpuModel, load_catalog
from compiler.simulate.trace import PRIORITY, TraceError, TracePod, full_profile, profile_for, read_trace

_A100 = load_catalog().get("A100-SXM4-80GB")
assert _A100 is not None
A100: GpuModel = _A100
HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)


def _write(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "pods.csv"
    path.write_text(HEADER + rows, encoding="utf-8")
    return path


def test_which_pods_replay_and_when(tmp_path: Path) -> None:
    rows = (
        "late,0,0,1,500,A100,BE,Running,50,200,60\n"
        "early,0,0,2,0,A100,LS,Running,10,100,30\n"
        "cpu,0,0,0,0,,BE,Running,5,9,6\n"  # no GPU
        "pending,0,0,1,300,A100,BE,Pending,7,,\n"  # never ran: no run time known
    )
    trace = read_trace(_write(tmp_path, rows))
    assert (trace.skipped_no_gpu, trace.skipped_never_ran) == (1, 1)
    assert trace.pods == (
        TracePod("early", 10.0, 70.0, 2, 1000, PRIORITY["LS"]),  # deletion - scheduled; whole GPUs = 1000
        TracePod("late", 50.0, 140.0, 1, 500, PRIORITY["BE"]),
    )


def test_a_bad_value_is_migc425_at_its_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(TraceError) as err:
        read_trace(
            _write(tmp_path, "a,0,0,1,500,A100,BE,Running,1,2,1\nb,0,0,1,5000,A100,BE,Running,1,2,1\n")
        )
    d = err.value.diagnostic
    assert (d.code, d.line, d.col) == ("MIGC425", 3, 9)  # "b,0,0,1,": gpu_milli starts at column 9
    assert "column gpu_milli: '5000' is outside 0..1000" in d.message
    with pytest.raises(TraceError) as err:
        read_trace(_write(tmp_path, "a,0,0,1,500,A100,BE,Running,inf,2,1\n"))
    assert "column creation_time" in err.value.diagnostic.message


def test_missing_columns_and_the_shape_only_mode(tmp_path: Path) -> None:
    path = tmp_path / "shape.csv"
    path.write_text("name,num_gpu,gpu_milli\na,1,250\nb,0,0\nc,4,0\n", encoding="utf-8")
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert (
        "missing column(s) qos, creation_time, deletion_time, scheduled_time" in err.value.diagnostic.message
    )
    trace = read_trace(path, times=False)
    assert [(p.name, p.num_gpu, p.gpu_milli, p.arrival) for p in trace.pods] == [
        ("a", 1, 250, 0.0),
        ("c", 4, 1000, 0.0),
    ]
    assert trace.skipped_no_gpu == 1


@pytest.mark.parametrize(
    ("milli", "compute", "memory"),
    [
        (150, "2g.20gb", "1g.20gb"),  # 1/7 = 0.143 < 0.15 <= 2/7; 10/80 < 0.15 <= 20/80, fewer slices
        (100, "1g.10gb", "1g.10gb"),  # 1/7 >= 0.1 and 10/80 = 0.125 >= 0.1
        (0, "1g.10gb", "1g.10gb"),  # at least 1 milli
        (999, "7g.80gb", "7g.80gb"),
    ],
)
def test_a_fraction_maps_by_compute_or_memory(milli: int, compute: str, memory: str) -> None:
    pod = TracePod("p", 0.0, 1.0, 1, milli, 0)
    assert profile_for(pod, A100, "compute") == (compute, 1)
    assert profile_for(pod, A100, "memory") == (memory, 1)


def test_whole_gpus_map_to_the_full_profile_never_a_media_extension() -> None:
    assert full_profile(A100).name == "7g.80gb"
    assert profile_for(TracePod("p", 0.0, 1.0, 3, 1000, 0), A100, "compute") == ("7g.80gb", 3)
