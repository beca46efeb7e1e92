"""compiler/simulate/carve.py: per-pod carving at the catalog's placements (A100-SXM4-80GB: 8 memory
slices, 7 compute; 1g.10gb starts at 0..6 and takes 1 slice, 1g.20gb at 0/2/4/6 takes 2, 3g.40gb at
0/4 takes 4, 4g.40gb and 7g.80gb only at 0)."""

from __future__ import annotations

from compiler.catalog import GpuModel, load_catalog
from compiler.simulate.carve import CarvedGpu, Carver

_A100 = load_catalog().get("A100-SXM4-80GB")
assert _A100 is not None
A100: GpuModel = _A100


def test_the_lowest_free_placement_is_taken() -> None:
    c, gpu = Carver(A100), CarvedGpu()
    assert c.start(gpu, "3g.40gb") == 0
    c.carve(gpu, "3g.40gb", 0)
    assert gpu.mask == 0b1111 and gpu.compute == 3 and gpu.instances == {"3g.40gb": 1}
    assert c.start(gpu, "3g.40gb") == 4
    assert c.start(gpu, "1g.20gb") == 4  # placements 0 and 2 overlap slices 0-3
    assert c.start(gpu, "4g.40gb") is None  # only at 0


def test_fragmentation_is_whatever_arrives() -> None:
    c, gpu = Carver(A100), CarvedGpu()
    c.carve(gpu, "1g.10gb", 4)  # one small instance in the middle of the memory
    assert c.start(gpu, "3g.40gb") == 0 and c.start(gpu, "4g.40gb") == 0
    c.carve(gpu, "1g.10gb", 0)
    assert c.start(gpu, "3g.40gb") is None and c.start(gpu, "4g.40gb") is None  # 6 slices free, no room


def test_compute_slices_bound_a_gpu_too() -> None:
    c, gpu = Carver(A100), CarvedGpu()
    c.carve(gpu, "4g.40gb", 0)
    c.carve(gpu, "3g.40gb", 4)  # 7 compute slices, 8 memory slices: full
    assert c.left(gpu, "1g.10gb") == -1
    assert c.start(gpu, "1g.10gb") is None


def test_destroy_frees_exactly_what_carve_took() -> None:
    c, gpu = Carver(A100), CarvedGpu()
    c.carve(gpu, "2g.20gb", 2)
    c.carve(gpu, "1g.10gb", 0)
    c.destroy(gpu, "2g.20gb", 2)
    assert (gpu.mask, gpu.compute, gpu.instances) == (0b1, 1, {"1g.10gb": 1})
    c.destroy(gpu, "1g.10gb", 0)
    assert (gpu.mask, gpu.compute, gpu.instances) == (0, 0, {})
    assert c.start(gpu, "7g.80gb") == 0 and c.left(gpu, "7g.80gb") == 0
