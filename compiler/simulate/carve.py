"""Per-pod MIG carving at the placements the GPU allows: what a per-pod allocator does.

NVIDIA's DRA driver with ``DynamicMIG`` (kubernetes-sigs/dra-driver-nvidia-gpu @ 9593204,
cmd/gpu-kubelet-plugin/nvlib.go:573-588) announces one device per (GPU, MIG profile, placement
start) from NVML's ``GetGpuInstancePossiblePlacements``; each device consumes the memory slices
``start .. start + size − 1`` of its GPU as shared capacity (deviceinfo.go:273-278), so two
instances overlapping on a slice can never both be allocated. The devices are published GPU by GPU
(sorted PCI bus id) and, per GPU, in sorted device name order ``gpu-<minor>-mig-<profile>-<id>-
<start>`` (driver.go:206-212, mig.go:113), and the scheduler's allocator takes the first device
that fits: first fit over GPUs, and on a GPU the lowest free placement start of the profile. The
instance is created when the pod is prepared and destroyed when it ends; nothing is ever moved or
evicted, so fragmentation is whatever arrives. HAMi's dynamic MIG keys each instance it creates for a
pod by (GPU, profile, placement) as well (Project-HAMi/HAMi @ 4707fb0,
pkg/device-plugin/nvidiadevice/nvinternal/plugin/migmgr.go:324) and destroys it on release (:297).

The placement tables are the catalog's (``Profile.placements``, ``memory_slices``): the same data
:mod:`compiler.catalog.layouts` derives every valid layout from. A GPU also never holds more compute
slices than it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.catalog import GpuModel


@dataclass
class CarvedGpu:
    """One GPU carved per pod: the memory slices in use (bit ``i`` = slice ``i``) and compute used."""

    mask: int = 0
    compute: int = 0
    instances: dict[str, int] = field(default_factory=dict)  # profile → instances carved


class Carver:
    """First-fit (or best-fit) carving of single instances at the catalog's placements."""

    def __init__(self, model: GpuModel) -> None:
        self.model = model
        self.spec = {
            p.name: (p.memory_slices, tuple(sorted(p.placements)), p.compute_slices) for p in model.profiles
        }

    def start(self, gpu: CarvedGpu, profile: str) -> int | None:
        """The lowest placement start of ``profile`` free on ``gpu`` (None: it does not fit)."""
        size, starts, compute = self.spec[profile]
        if gpu.compute + compute > self.model.compute_slices:
            return None
        bits = (1 << size) - 1
        for s in starts:
            if s + size <= self.model.memory_slices and not gpu.mask & (bits << s):
                return s
        return None

    def carve(self, gpu: CarvedGpu, profile: str, start: int) -> None:
        size, _, compute = self.spec[profile]
        gpu.mask |= ((1 << size) - 1) << start
        gpu.compute += compute
        gpu.instances[profile] = gpu.instances.get(profile, 0) + 1

    def destroy(self, gpu: CarvedGpu, profile: str, start: int) -> None:
        size, _, compute = self.spec[profile]
        gpu.mask &= ~(((1 << size) - 1) << start)
        gpu.compute -= compute
        gpu.instances[profile] -= 1
        if not gpu.instances[profile]:
            del gpu.instances[profile]

    def left(self, gpu: CarvedGpu, profile: str) -> int:
        """Compute slices left free on ``gpu`` once one ``profile`` instance is carved (best-fit)."""
        return self.model.compute_slices - gpu.compute - self.spec[profile][2]
