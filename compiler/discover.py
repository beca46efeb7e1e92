"""Read a GPU's MIG geometry through NVML, read-only, and turn it into catalog entries.

Three steps, each usable alone:

* :func:`capture` asks NVML (the ``pynvml`` module, passed in so tests can hand it a fake) what it
  knows and returns a :class:`Capture` of plain values: nothing is interpreted yet, so a capture can
  be saved (:func:`capture_to_dict`) and replayed later.
* :func:`models_from_capture` groups GPUs by PCI device id and derives one :class:`DiscoveredModel`
  per model: profile names, slice counts, memory, the all-balanced layout.
* :func:`to_entry` writes a model as a document of ``schema/catalog.schema.json``, and
  :func:`compare` lists each field where the shipped catalog disagrees with it.

Read-only by construction: only ``nvmlInit``/``nvmlShutdown`` and ``nvml*Get*`` queries are called.
MIG mode, instances and resets are left to the operator; a test holds this module to that.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from types import ModuleType
from typing import Any

import yaml

from compiler.catalog import Catalog, GpuModel, parse_model
from compiler.diagnostics import Diagnostic, DiagnosticError, make

MIB = 1024 * 1024
GIB = 1024 * MIB

# NVML_GPU_INSTANCE_PROFILE_* indices (nvml.h). They are ABI constants, so they are spelled out here
# rather than read from the bindings, which older pynvml releases lack some of.
_PROFILE_INDEX_COUNT_FALLBACK = 0x12
_SUFFIX_BY_INDEX: Mapping[int, str] = {
    0x7: "+me",  # 1_SLICE_REV1: one slice with the media engines
    0x8: "+me",  # 2_SLICE_REV1
    0xA: "+gfx",
    0xB: "+gfx",
    0xC: "+gfx",
    0x11: "+gfx",
    0xD: "-me",
    0xE: "-me",
    0xF: "+me.all",
    0x10: "+me.all",
}
# The catalog schema's profile-name pattern only knows the "+me" attribute.
_CATALOG_SUFFIXES = ("", "+me")
_NAME_RE = re.compile(r"^(?P<g>[1-8])g\.(?P<gb>[0-9]+)gb(?P<suffix>\+me\.all|\+me|\+gfx|-me)?\Z")

# nvmlReturn_t values (nvml.h), compared by value so that any bindings' exception classes work.
_ERR_INVALID_ARGUMENT = 2
_ERR_NOT_SUPPORTED = 3
_ERR_NO_PERMISSION = 4
_ERR_DRIVER_NOT_LOADED = 9
_ERR_LIBRARY_NOT_FOUND = 12
_ERR_FUNCTION_NOT_FOUND = 13


class DiscoverError(DiagnosticError):
    """Discovery cannot go on; ``diagnostic`` says why and what to do."""


# What NVML may answer (anything else is MIGC909, before any buffer is sized by it): a GPU has at
# most 8 compute slices and 8 memory slices today; the bounds leave room for larger parts.
MAX_SLICES = 64  # sliceCount, placement start + size, memory slices
MAX_INSTANCES = 64  # instanceCount of one profile, placements of one profile
MAX_MEMORY_BYTES = 1 << 50  # 1 PiB of device memory
MAX_MULTIPROCESSORS = 1 << 16


def _bounded(value: Any, low: int, high: int, what: str, gpu: int) -> int:
    """``int(value)`` when it lies in ``low..high``; else MIGC909 naming the field."""
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        n = None
    if n is None or not low <= n <= high:
        raise DiscoverError(
            make(
                "MIGC909",
                f"GPU {gpu}: NVML reports {what} = {str(value)[:40]}, outside {low}..{high}",
                path=f"gpu[{gpu}]",
            )
        )
    return n


# --- what NVML said, uninterpreted ------------------------------------------------------------------


@dataclass(frozen=True)
class RawProfile:
    """One ``nvmlDeviceGetGpuInstanceProfileInfo`` answer plus its possible placements."""

    index: int  # NVML_GPU_INSTANCE_PROFILE_* passed in
    id: int  # profile id, as nvidia-smi mig -lgip shows it
    slice_count: int
    instance_count: int
    multiprocessor_count: int
    memory_size_mb: int  # MiB, despite NVML's field name
    name: str | None  # only from the v2 struct (newer drivers), e.g. "MIG 1g.10gb"
    placements: tuple[tuple[int, int], ...]  # (start, size) on the memory-slice axis


@dataclass(frozen=True)
class RawInstance:
    id: int  # GPU instance id
    profile_id: int
    start: int
    size: int


@dataclass(frozen=True)
class RawGpu:
    index: int
    name: str
    pci_device_id: int  # device << 16 | vendor
    memory_total_bytes: int
    mig_current: int | None  # None: NVML says MIG is not supported
    mig_pending: int | None
    max_mig_devices: int | None
    profiles: tuple[RawProfile, ...]
    instances: tuple[RawInstance, ...] | None  # None: not read (MIG off, or not permitted)


@dataclass(frozen=True)
class Capture:
    driver_version: str
    gpus: tuple[RawGpu, ...]


# --- reading NVML -----------------------------------------------------------------------------------


def load_nvml() -> ModuleType:
    """Import the NVML bindings; tests replace this function to inject a fake module."""
    try:
        with warnings.catch_warnings():
            # The "pynvml" shim package warns on import that nvidia-ml-py is the real name; the module
            # it redirects to is the same one, so the warning is noise on the user's terminal.
            warnings.simplefilter("ignore")
            import pynvml
    except ImportError as exc:
        raise DiscoverError(make("MIGC901", f"cannot import the NVML bindings (pynvml): {exc}")) from None
    module: ModuleType = pynvml
    return module


def _code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _is_nvml_error(nvml: ModuleType, exc: BaseException) -> bool:
    base = getattr(nvml, "NVMLError", None)
    return isinstance(base, type) and isinstance(exc, base)


def _fail(nvml: ModuleType, exc: BaseException, what: str, gpu: int | None = None) -> DiscoverError:
    """Translate an NVML exception into the diagnostic that says what to do about it."""
    where = f"GPU {gpu}: " if gpu is not None else ""
    code = _code(exc)
    text = f"{where}{what}: {exc}"
    if code == _ERR_LIBRARY_NOT_FOUND:
        return DiscoverError(make("MIGC902", f"{where}NVML library (libnvidia-ml.so.1) not found: {exc}"))
    if code == _ERR_DRIVER_NOT_LOADED:
        return DiscoverError(make("MIGC903", text))
    if code == _ERR_NO_PERMISSION:
        return DiscoverError(make("MIGC904", text))
    hint = ""
    if code == _ERR_FUNCTION_NOT_FOUND:
        hint = "The driver's NVML lacks this query; MIG discovery needs driver R450 or newer (R525+ for +me)."
    return DiscoverError(make("MIGC908", text, hint=hint))


class _Reader:
    """Holds the module and the error translation; every NVML call goes through :meth:`call`."""

    def __init__(self, nvml: ModuleType) -> None:
        self.nvml = nvml

    def call(self, what: str, fn_name: str, *args: Any, gpu: int | None = None, **kwargs: Any) -> Any:
        fn = getattr(self.nvml, fn_name)
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if _is_nvml_error(self.nvml, exc):
                raise _fail(self.nvml, exc, what, gpu) from None
            raise

    def probe(self, fn_name: str, *args: Any, **kwargs: Any) -> tuple[Any, BaseException | None]:
        """Call a query whose "not supported" answer is information rather than failure."""
        fn = getattr(self.nvml, fn_name)
        try:
            return fn(*args, **kwargs), None
        except Exception as exc:
            if _is_nvml_error(self.nvml, exc):
                return None, exc
            raise


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def capture(nvml: ModuleType, gpu: int | None = None) -> tuple[Capture, list[Diagnostic]]:
    """Read every GPU (or only ``gpu``) through NVML. Raises :class:`DiscoverError` when it cannot."""
    reader = _Reader(nvml)
    notes: list[Diagnostic] = []
    try:
        nvml.nvmlInit()
    except Exception as exc:
        if _is_nvml_error(nvml, exc):
            raise _fail(nvml, exc, "NVML initialisation failed") from None
        raise
    try:
        driver = _text(reader.call("reading the driver version", "nvmlSystemGetDriverVersion"))
        count = int(reader.call("counting GPUs", "nvmlDeviceGetCount"))
        if count == 0:
            raise DiscoverError(make("MIGC905", "NVML reports no GPUs on this machine"))
        if gpu is not None and not 0 <= gpu < count:
            raise DiscoverError(
                make("MIGC905", f"--gpu {gpu}: NVML reports {count} GPU(s), indices 0..{count - 1}")
            )
        indices = [gpu] if gpu is not None else list(range(count))
        gpus = tuple(_read_gpu(reader, i, notes) for i in indices)
    finally:
        # Shutdown only balances nvmlInit's reference count; a failure here changes nothing we report.
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    return Capture(driver_version=driver, gpus=gpus), notes


def _read_gpu(reader: _Reader, index: int, notes: list[Diagnostic]) -> RawGpu:
    handle = reader.call("getting the device handle", "nvmlDeviceGetHandleByIndex", index, gpu=index)
    name = _text(reader.call("reading the name", "nvmlDeviceGetName", handle, gpu=index))
    pci = reader.call("reading PCI info", "nvmlDeviceGetPciInfo", handle, gpu=index)
    memory = reader.call("reading memory info", "nvmlDeviceGetMemoryInfo", handle, gpu=index)
    total = _bounded(memory.total, 1, MAX_MEMORY_BYTES, "memoryTotalBytes", index)
    mode, err = reader.probe("nvmlDeviceGetMigMode", handle)
    if err is not None and _code(err) == _ERR_NOT_SUPPORTED:
        return RawGpu(index, name, int(pci.pciDeviceId), total, None, None, None, (), None)
    if err is not None:
        raise _fail(reader.nvml, err, "reading the MIG mode", index)
    current, pending = int(mode[0]), int(mode[1])
    if current != pending:
        notes.append(
            make(
                "MIGC922",
                f"GPU {index}: MIG mode is {_mode(current)} with a change to {_mode(pending)} pending",
                path=f"gpu[{index}]",
            )
        )
    max_devices, _ = reader.probe("nvmlDeviceGetMaxMigDeviceCount", handle)
    profiles = _read_profiles(reader, handle, index)
    instances: tuple[RawInstance, ...] | None = None
    if current == 1:
        instances = _read_instances(reader, handle, index, profiles, notes)
    return RawGpu(
        index=index,
        name=name,
        pci_device_id=int(pci.pciDeviceId),
        memory_total_bytes=total,
        mig_current=current,
        mig_pending=pending,
        max_mig_devices=None if max_devices is None else int(max_devices),
        profiles=profiles,
        instances=instances,
    )


def _mode(value: int) -> str:
    return "enabled" if value == 1 else "disabled"


def _read_profiles(reader: _Reader, handle: Any, gpu: int) -> tuple[RawProfile, ...]:
    nvml = reader.nvml
    count = int(getattr(nvml, "NVML_GPU_INSTANCE_PROFILE_COUNT", _PROFILE_INDEX_COUNT_FALLBACK))
    version = 2  # the v2 struct carries the driver's own profile name; drivers before R470 lack it
    found: list[RawProfile] = []
    for index in range(count):
        info, err = reader.probe("nvmlDeviceGetGpuInstanceProfileInfo", handle, index, version=version)
        if err is not None and _code(err) == _ERR_FUNCTION_NOT_FOUND and version == 2:
            version = 1
            info, err = reader.probe("nvmlDeviceGetGpuInstanceProfileInfo", handle, index, version=1)
        if err is not None and _code(err) in (_ERR_NOT_SUPPORTED, _ERR_INVALID_ARGUMENT):
            continue  # this GPU has no profile at this index
        if err is not None:
            raise _fail(reader.nvml, err, f"reading GPU-instance profile index {index}", gpu)
        name = _text(info.name).strip() if version == 2 else None
        what = f"profile index {index}"
        found.append(
            RawProfile(
                index=index,
                id=int(info.id),
                slice_count=_bounded(info.sliceCount, 1, MAX_SLICES, f"{what} sliceCount", gpu),
                instance_count=_bounded(info.instanceCount, 0, MAX_INSTANCES, f"{what} instanceCount", gpu),
                multiprocessor_count=_bounded(
                    info.multiprocessorCount, 0, MAX_MULTIPROCESSORS, f"{what} multiprocessorCount", gpu
                ),
                memory_size_mb=_bounded(
                    info.memorySizeMB, 1, MAX_MEMORY_BYTES >> 20, f"{what} memorySizeMB", gpu
                ),
                name=name or None,
                placements=_read_placements(reader, handle, int(info.id), gpu),
            )
        )
    return tuple(found)


def _read_placements(reader: _Reader, handle: Any, profile_id: int, gpu: int) -> tuple[tuple[int, int], ...]:
    nvml = reader.nvml
    what = f"reading possible placements of profile id {profile_id}"
    count = ctypes.c_uint(0)
    # First call with no buffer asks NVML how many placements there are.
    reader.call(
        what,
        "nvmlDeviceGetGpuInstancePossiblePlacements",
        handle,
        profile_id,
        None,
        ctypes.byref(count),
        gpu=gpu,
    )
    if count.value == 0:
        return ()
    _bounded(count.value, 0, MAX_INSTANCES, f"the placement count of profile id {profile_id}", gpu)
    buffer = (nvml.c_nvmlGpuInstancePlacement_t * count.value)()
    reader.call(
        what,
        "nvmlDeviceGetGpuInstancePossiblePlacements",
        handle,
        profile_id,
        buffer,
        ctypes.byref(count),
        gpu=gpu,
    )
    n = _bounded(count.value, 0, MAX_INSTANCES, f"the placement count of profile id {profile_id}", gpu)
    where = f"a placement of profile id {profile_id}"
    return tuple(
        sorted(
            (
                _bounded(buffer[i].start, 0, MAX_SLICES, f"{where} start", gpu),
                _bounded(buffer[i].size, 1, MAX_SLICES, f"{where} size", gpu),
            )
            for i in range(n)
        )
    )


def _read_instances(
    reader: _Reader, handle: Any, gpu: int, profiles: Sequence[RawProfile], notes: list[Diagnostic]
) -> tuple[RawInstance, ...] | None:
    """Existing GPU instances; ``None`` (with a warning) when NVML will not tell us."""
    nvml = reader.nvml
    found: list[RawInstance] = []
    for profile in profiles:
        if profile.instance_count <= 0:
            continue
        buffer = (nvml.c_nvmlGpuInstance_t * profile.instance_count)()
        count = ctypes.c_uint(0)
        _, err = reader.probe("nvmlDeviceGetGpuInstances", handle, profile.id, buffer, ctypes.byref(count))
        if err is not None:
            notes.append(
                make(
                    "MIGC913",
                    f"GPU {gpu}: listing GPU instances of profile id {profile.id} failed: {err}",
                    path=f"gpu[{gpu}]",
                )
            )
            return None
        for i in range(count.value):
            info = reader.call("reading a GPU instance", "nvmlGpuInstanceGetInfo", buffer[i], gpu=gpu)
            found.append(
                RawInstance(
                    id=int(info.id),
                    profile_id=int(info.profileId),
                    start=int(info.placement.start),
                    size=int(info.placement.size),
                )
            )
    return tuple(sorted(found, key=lambda r: (r.start, r.size, r.id)))


# --- saving and replaying captures --------------------------------------------------------------------


def capture_to_dict(cap: Capture) -> dict[str, Any]:
    """The raw capture as plain data (the format of ``tests/fixtures/nvml/*.capture.yaml``)."""
    return {
        "driverVersion": cap.driver_version,
        "gpus": [
            {
                "index": g.index,
                "name": g.name,
                "pciDeviceId": format_pci_id(g.pci_device_id),
                "memoryTotalBytes": g.memory_total_bytes,
                "migMode": None
                if g.mig_current is None
                else {"current": g.mig_current, "pending": g.mig_pending},
                "maxMigDeviceCount": g.max_mig_devices,
                "profiles": [
                    {
                        "index": p.index,
                        "id": p.id,
                        "name": p.name,
                        "sliceCount": p.slice_count,
                        "instanceCount": p.instance_count,
                        "multiprocessorCount": p.multiprocessor_count,
                        "memorySizeMB": p.memory_size_mb,
                        "placements": [[s, z] for s, z in p.placements],
                    }
                    for p in g.profiles
                ],
                "instances": None
                if g.instances is None
                else [
                    {"id": i.id, "profileId": i.profile_id, "start": i.start, "size": i.size}
                    for i in g.instances
                ],
            }
            for g in cap.gpus
        ],
    }


def format_pci_id(value: int) -> str:
    """mig-parted's device-filter spelling: ``0x20B210DE`` (device << 16 | vendor, upper-case hex)."""
    return f"0x{value & 0xFFFFFFFF:08X}"


# --- interpreting a capture ---------------------------------------------------------------------------


def derive_memory_gb(memory_size_mb: int, total_bytes: int) -> int:
    """The GB figure in a profile name (the 10 of ``1g.10gb``), from NVML's numbers.

    NVIDIA's tools name a profile by its share of the GPU's memory, not its own size: the profile's
    memory as a fraction of the whole is rounded *up* to eighths, multiplied by the GPU's memory in
    whole GiB (rounded up), and that product is rounded half up. Rounding the profile's own size in
    GB or GiB does not work: H100's 1g.10gb is 9.75 GiB (10.5 GB) and H200's 1g.18gb is 16.00 GiB.

    Checked against every named profile in the reference (tests/unit/compiler/test_discover.py): the
    documented -lgip sizes of H100 80GB (9.75/19.62/39.50/79.25 GiB of 81559 MiB) and H200
    (16.00 GiB of 143771 MiB) and, through their memory-slice fractions, every profile name in the
    shipped catalog, including the half-way cases 1g.23gb (B200: 180/8 = 22.5) and 3g.71gb
    (H200: 141/2 = 70.5). It is a reconstruction, not NVIDIA's published formula; when the driver
    supplies a name (v2 profile info) that name wins and a disagreement is reported as MIGC912.
    """
    if total_bytes <= 0:
        return math.ceil(memory_size_mb * MIB / GIB)
    eighths = math.ceil(Fraction(memory_size_mb * MIB * 8, total_bytes))
    total_gib = -(-total_bytes // GIB)
    return math.floor(Fraction(eighths * total_gib, 8) + Fraction(1, 2))


def gpu_product(nvml_name: str) -> str:
    """The ``nvidia.com/gpu.product`` label GPU Feature Discovery derives from an NVML device name."""
    kept = re.sub(r"[^A-Za-z0-9_. -]", "", nvml_name.strip())
    return re.sub(r"\s+", "-", kept)


def _model_key(product: str) -> str:
    key = product.removeprefix("NVIDIA-").replace("_", "-")
    key = re.sub(r"[^A-Za-z0-9.-]", "", key).lstrip(".-")
    return key or "UNKNOWN-GPU"


@dataclass(frozen=True)
class DiscoveredProfile:
    name: str
    id: int
    nvml_index: int
    compute_slices: int
    memory_slices: int
    memory_gb: int
    max_count: int
    placements: tuple[int, ...]
    multiprocessors: int


@dataclass(frozen=True)
class DiscoveredModel:
    """One GPU model's geometry as NVML reported it on ``source_gpu``."""

    source_gpu: int
    gpu_indices: tuple[int, ...]
    nvml_name: str
    product: str
    pci_device_id: str
    driver_version: str
    compute_slices: int
    memory_slices: int
    memory_gb: int
    profiles: tuple[DiscoveredProfile, ...]
    names_from_driver: bool
    balanced: tuple[tuple[str, int], ...] = field(default=())

    def profile(self, name: str) -> DiscoveredProfile | None:
        return next((p for p in self.profiles if p.name == name), None)


def _profile_name(raw: RawProfile, total_bytes: int, gpu: int, notes: list[Diagnostic]) -> str:
    suffix = _SUFFIX_BY_INDEX.get(raw.index, "")
    derived = f"{raw.slice_count}g.{derive_memory_gb(raw.memory_size_mb, total_bytes)}gb{suffix}"
    if raw.name is None:
        return derived
    reported = raw.name.removeprefix("MIG").strip()
    if not _NAME_RE.match(reported):
        return derived  # a name we cannot parse is less trustworthy than the derivation
    if reported != derived:
        notes.append(
            make(
                "MIGC912",
                f"GPU {gpu}: profile id {raw.id} (index {raw.index}): NVML names it {reported}, "
                f"the memory-size rule gives {derived}",
                path=f"gpu[{gpu}].profiles[{raw.index}]",
            )
        )
    return reported


def _interpret(gpu: RawGpu, driver: str, notes: list[Diagnostic]) -> DiscoveredModel:
    profiles: list[DiscoveredProfile] = []
    for raw in gpu.profiles:
        name = _profile_name(raw, gpu.memory_total_bytes, gpu.index, notes)
        suffix = _NAME_RE.match(name)
        if suffix is None or (suffix.group("suffix") or "") not in _CATALOG_SUFFIXES:
            notes.append(
                make(
                    "MIGC911",
                    f"GPU {gpu.index}: profile {name} (id {raw.id}) left out (no such catalog variant)",
                    path=f"gpu[{gpu.index}].profiles[{raw.index}]",
                )
            )
            continue
        sizes = {size for _, size in raw.placements}
        if len(sizes) != 1:
            what = "no placements" if not sizes else f"placements of sizes {sorted(sizes)}"
            raise DiscoverError(
                make(
                    "MIGC909",
                    f"GPU {gpu.index}: profile {name} (id {raw.id}) has {what}",
                    path=f"gpu[{gpu.index}].profiles[{raw.index}]",
                )
            )
        profiles.append(
            DiscoveredProfile(
                name=name,
                id=raw.id,
                nvml_index=raw.index,
                compute_slices=raw.slice_count,
                memory_slices=sizes.pop(),
                memory_gb=int(_NAME_RE.match(name).group("gb")),  # type: ignore[union-attr]
                max_count=raw.instance_count,
                placements=tuple(sorted(start for start, _ in raw.placements)),
                multiprocessors=raw.multiprocessor_count,
            )
        )
    profiles.sort(key=lambda p: (p.compute_slices, p.memory_slices, p.name))
    product = gpu_product(gpu.name)
    model = DiscoveredModel(
        source_gpu=gpu.index,
        gpu_indices=(gpu.index,),
        nvml_name=gpu.name,
        product=product,
        pci_device_id=format_pci_id(gpu.pci_device_id),
        driver_version=driver,
        compute_slices=max((p.compute_slices for p in profiles), default=0),
        memory_slices=max((s + p.memory_slices for p in profiles for s in p.placements), default=0),
        memory_gb=-(-gpu.memory_total_bytes // GIB),
        profiles=tuple(profiles),
        names_from_driver=any(r.name for r in gpu.profiles),
    )
    return _with_balanced(model)


def _with_balanced(model: DiscoveredModel) -> DiscoveredModel:
    """The GPU Operator's all-balanced layout, by mig-parted's rule, from the discovered profiles.

    Seven-slice GPUs get one 1g pair, one 2g and one 3g; four-slice GPUs one 1g pair and one 2g. For
    each size the base (no +me) profile with the most instances is used (1g.10gb over 1g.20gb).
    """
    wanted = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}.get(model.compute_slices)
    if wanted is None:
        return model
    chosen: dict[str, int] = {}
    for g, n in wanted.items():
        candidates = [p for p in model.profiles if p.compute_slices == g and "+" not in p.name]
        if not candidates:
            return model
        best = min(candidates, key=lambda p: (-p.max_count, p.memory_slices, p.name))
        chosen[best.name] = n
    return dataclasses.replace(model, balanced=tuple(sorted(chosen.items())))


def models_from_capture(cap: Capture) -> tuple[list[DiscoveredModel], list[Diagnostic]]:
    """One model per distinct PCI device id among the MIG-capable GPUs, in order of first GPU index."""
    notes: list[Diagnostic] = []
    by_pci: dict[int, list[RawGpu]] = {}
    for gpu in cap.gpus:
        if gpu.mig_current is None:
            notes.append(
                make(
                    "MIGC910",
                    f"GPU {gpu.index} ({gpu.name}) does not support MIG; no entry written for it",
                    path=f"gpu[{gpu.index}]",
                )
            )
            continue
        by_pci.setdefault(gpu.pci_device_id, []).append(gpu)
    if not by_pci:
        names = ", ".join(f"GPU {g.index} ({g.name})" for g in cap.gpus)
        raise DiscoverError(make("MIGC906", f"no MIG-capable GPU found: {names}"))
    models: list[DiscoveredModel] = []
    for gpus in sorted(by_pci.values(), key=lambda gs: gs[0].index):
        # Older drivers list no profiles while MIG is off: prefer a GPU that listed the most.
        source = max(gpus, key=lambda g: (len(g.profiles), -g.index))
        if not source.profiles:
            raise DiscoverError(
                make(
                    "MIGC907",
                    f"GPU {source.index} ({source.name}): MIG is "
                    f"{_mode(source.mig_current or 0)} and NVML lists no GPU-instance profiles "
                    f"(driver {cap.driver_version})",
                    path=f"gpu[{source.index}]",
                )
            )
        model = _interpret(source, cap.driver_version, notes)
        for other in gpus:
            if other is source or not other.profiles:
                continue
            if _interpret(other, cap.driver_version, []).profiles != model.profiles:
                notes.append(
                    make(
                        "MIGC914",
                        f"GPU {other.index} reports a different geometry from GPU {source.index} "
                        f"({model.pci_device_id}); the entry follows GPU {source.index}",
                        path=f"gpu[{other.index}]",
                    )
                )
        models.append(dataclasses.replace(model, gpu_indices=tuple(g.index for g in gpus)))
    return models, notes


# --- catalog entries and comparison -------------------------------------------------------------------


def find_in_catalog(model: DiscoveredModel, catalog: Catalog) -> GpuModel | None:
    """The shipped entry for this GPU: by PCI device id first (exact), then by product name."""
    for entry in catalog.models:
        if model.pci_device_id in entry.pci_device_ids:
            return entry
    return catalog.by_product(model.product)


def to_entry(model: DiscoveredModel, known: GpuModel | None = None) -> dict[str, Any]:
    """A catalog document for ``model``; with ``known``, keyed and labelled like the shipped entry.

    The shipped entry's other product names and PCI ids (PCIe variants, say) are kept, since one
    node cannot see them; every geometry field comes from the capture.
    """
    products = list(known.gpu_products) if known else []
    if model.product not in products:
        products.append(model.product)
    pci_ids = list(known.pci_device_ids) if known else []
    if model.pci_device_id not in pci_ids:
        pci_ids.append(model.pci_device_id)
    source = (
        f"captured by migc discover: NVML on GPU {model.source_gpu} ({model.nvml_name}), "
        f"driver {model.driver_version}"
    )
    naming = "names from the driver" if model.names_from_driver else "names derived from memorySizeMB"
    entry: dict[str, Any] = {
        "model": known.model if known else _model_key(model.product),
        "gpuProducts": products,
        "pciDeviceIds": pci_ids,
        "migCapable": True,
        "computeSlices": model.compute_slices,
        "memorySlices": model.memory_slices,
        "memoryGB": model.memory_gb,
        "verified": f"{source}; {naming}",
    }
    if model.balanced:
        entry["balanced"] = dict(model.balanced)
    entry["profiles"] = [
        {
            "name": p.name,
            "id": p.id,
            "nvmlIndex": p.nvml_index,
            "computeSlices": p.compute_slices,
            "memorySlices": p.memory_slices,
            "memoryGB": p.memory_gb,
            "maxCount": p.max_count,
            "placements": list(p.placements),
            "verified": f"migc discover capture, driver {model.driver_version}",
        }
        for p in model.profiles
    ]
    # The entry must load exactly like a shipped data file; a failure here is a bug in this module.
    parse_model(entry, f"discovered {entry['model']}")
    return entry


def compare(model: DiscoveredModel, known: GpuModel | None, origin: str | None = None) -> list[Diagnostic]:
    """Every field where the catalog entry ``known`` disagrees with the GPU; empty when they agree.

    ``origin`` names the file to fix in the diagnostics; by default the shipped data file of ``known``,
    whose text also gives each diagnostic its line and column.
    """
    if known is None:
        return [
            make(
                "MIGC921",
                f"{model.product} ({model.pci_device_id}) has no catalog entry; add the printed one",
            )
        ]
    text = ""
    if origin is None:
        origin, text = _catalog_source(known.model)
    out: list[Diagnostic] = []

    def report(message: str, path: str, key: str, profile: str | None = None) -> None:
        line, col = _position(text, key, profile)
        out.append(make("MIGC920", f"{known.model}: {message}", file=origin, line=line, col=col, path=path))

    def differ(path: str, key: str, catalog_value: Any, gpu_value: Any, profile: str | None = None) -> None:
        what = f"profile {profile} {key}" if profile else key
        shown = f"catalog has {_show(catalog_value)}, the GPU reports {_show(gpu_value)}"
        report(f"{what}: {shown}", path, key, profile)

    if model.pci_device_id not in known.pci_device_ids:
        differ("$.pciDeviceIds", "pciDeviceIds", list(known.pci_device_ids), model.pci_device_id)
    if model.product not in known.gpu_products:
        differ("$.gpuProducts", "gpuProducts", list(known.gpu_products), model.product)
    if not known.mig_capable:
        differ("$.migCapable", "migCapable", False, True)
    scalars = (
        ("computeSlices", "compute_slices"),
        ("memorySlices", "memory_slices"),
        ("memoryGB", "memory_gb"),
    )
    for key, attr in scalars:
        if getattr(known, attr) != getattr(model, attr):
            differ(f"$.{key}", key, getattr(known, attr), getattr(model, attr))
    if known.balanced and dict(known.balanced) != dict(model.balanced):
        differ("$.balanced", "balanced", dict(known.balanced), dict(model.balanced))
    for index, theirs in enumerate(known.profiles):
        mine = model.profile(theirs.name)
        path = f"$.profiles[{index}]"
        if mine is None:
            report(
                f"profile {theirs.name} is in the catalog but NVML does not list it",
                path,
                "name",
                theirs.name,
            )
            continue
        pairs = (
            ("id", theirs.id, mine.id),
            ("nvmlIndex", theirs.nvml_index, mine.nvml_index),
            ("computeSlices", theirs.compute_slices, mine.compute_slices),
            ("memorySlices", theirs.memory_slices, mine.memory_slices),
            ("memoryGB", theirs.memory_gb, mine.memory_gb),
            ("maxCount", theirs.max_count, mine.max_count),
            ("placements", list(theirs.placements), list(mine.placements)),
        )
        for key, catalog_value, gpu_value in pairs:
            if catalog_value != gpu_value:
                differ(f"{path}.{key}", key, catalog_value, gpu_value, theirs.name)
    for mine in model.profiles:
        if known.profile(mine.name) is None:
            report(
                f"profile {mine.name} (id {mine.id}) is listed by NVML but missing from the catalog",
                "$.profiles",
                "profiles",
            )
    return out


def _position(text: str, key: str, profile: str | None) -> tuple[int, int]:
    """1-based line and column of ``key`` in a data file laid out like the shipped ones (one flow
    mapping per profile); (0, 0) when the text is unknown or laid out otherwise."""
    lines = text.splitlines()
    if profile is not None:
        pattern = re.compile(rf"\bname:\s*['\"]?{re.escape(profile)}['\"]?\s*[,}}]")
        for number, line in enumerate(lines, start=1):
            if pattern.search(line):
                found = re.search(rf"\b{re.escape(key)}:", line)
                return number, (found.start() + 1 if found else line.index("name:") + 1)
        return 0, 0
    for number, line in enumerate(lines, start=1):
        if line.startswith(f"{key}:"):
            return number, 1
    return 0, 0


def _show(value: Any) -> str:
    if value is None:
        return "no value"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- output ---------------------------------------------------------------------------------------------


def dump_yaml_entry(entry: Mapping[str, Any]) -> str:
    """One entry in the layout of the shipped data files: block keys, one flow line per profile."""

    def flow(value: Any) -> str:
        text: str = yaml.safe_dump(value, default_flow_style=True, width=1_000_000, sort_keys=False)
        return text.strip().removesuffix("...").strip()

    lines: list[str] = []
    for key, value in entry.items():
        if key == "profiles":
            lines.append("profiles:")
            lines.extend(f"  - {flow(p)}" for p in value)
        else:
            lines.append(f"{key}: {flow(value)}")
    text = "\n".join(lines) + "\n"
    if yaml.safe_load(text) != dict(entry):  # the layout is hand-made, so prove it reads back the same
        raise AssertionError(f"YAML rendering of {entry.get('model')} does not round-trip")
    return text


def layout_lines(cap: Capture) -> list[str]:
    """A human summary of each GPU and its current GPU instances (for stderr)."""
    lines: list[str] = []
    for g in cap.gpus:
        pci = format_pci_id(g.pci_device_id)
        head = f"GPU {g.index}: {g.name} ({pci}), {g.memory_total_bytes // MIB} MiB"
        if g.mig_current is None:
            lines.append(f"{head}, no MIG support")
            continue
        extra = f", up to {g.max_mig_devices} MIG devices" if g.max_mig_devices is not None else ""
        lines.append(f"{head}, MIG {_mode(g.mig_current)}, {len(g.profiles)} GPU-instance profiles{extra}")
        if g.mig_current != 1:
            continue
        if g.instances is None:
            lines.append("  current layout: not readable")
        elif not g.instances:
            lines.append("  current layout: no GPU instances")
        else:
            names = {p.id: _profile_name(p, g.memory_total_bytes, g.index, []) for p in g.profiles}
            for inst in g.instances:
                name = names.get(inst.profile_id, f"profile id {inst.profile_id}")
                lines.append(f"  GPU instance {inst.id}: {name} at {inst.start}:{inst.size}")
    return lines


def _catalog_source(model_key: str) -> tuple[str, str]:
    data_dir = resources.files("compiler.catalog").joinpath("data")
    for item in sorted(data_dir.iterdir(), key=lambda p: p.name):
        if not item.name.endswith(".yaml"):
            continue
        text = item.read_text(encoding="utf-8")
        raw = yaml.safe_load(text)
        if isinstance(raw, dict) and raw.get("model") == model_key:
            return f"compiler/catalog/data/{item.name}", text
    return "", ""
