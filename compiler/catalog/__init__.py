"""Per-GPU-model MIG geometry, shipped as one YAML data file per model in ``data/``.

The data files are facts with provenance (``verified`` notes), validated at load time against the
bundled ``compiler/data/schema/catalog.schema.json`` (published as ``schema/catalog.schema.json``);
an unknown field is an error, not a silently ignored typo.
Non-MIG models (L40S, ...) are in the catalog too, with ``migCapable: false`` and no profiles, so
that pools of them can be priced and time-sliced.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from compiler.data import schema as bundled_schema


class CatalogError(Exception):
    """A shipped or user-supplied catalog file is malformed. Always a bug in the data, never user policy."""


@dataclass(frozen=True)
class Profile:
    name: str  # "1g.10gb", "1g.10gb+me"
    id: int | None  # GPU-instance profile id as nvidia-smi -lgip / NVML info.id; None = unknown
    nvml_index: int | None  # NVML_GPU_INSTANCE_PROFILE_* index
    compute_slices: int
    memory_slices: int
    memory_gb: float
    max_count: int
    placements: tuple[int, ...]  # valid start slices; each occupies memory_slices slices
    media_extensions: bool  # "+me": never chosen by the solver unless a workload names it
    verified: str  # provenance note

    @property
    def resource_name(self) -> str:
        """Extended resource the device plugin advertises under the mixed strategy."""
        return "nvidia.com/mig-" + self.name.replace("+", ".")


@dataclass(frozen=True)
class GpuModel:
    model: str  # catalog key, e.g. "A100-SXM4-80GB"
    gpu_products: tuple[str, ...]  # nvidia.com/gpu.product values that mean this model
    pci_device_ids: tuple[str, ...]  # "0x20B210DE" (device << 16 | vendor), as mig-parted device-filter
    mig_capable: bool
    compute_slices: int
    memory_slices: int
    memory_gb: float
    profiles: tuple[Profile, ...]
    balanced: tuple[tuple[str, int], ...]  # the GPU Operator's all-balanced layout for this model
    verified: str

    def __hash__(self) -> int:
        # the catalog key names one model (equal models have equal keys): hashing every field and
        # profile on each call was a tenth of the replay's time (its layout caches key on the model)
        return hash(self.model)

    def profile(self, name: str) -> Profile | None:
        for p in self.profiles:
            if p.name == name:
                return p
        return None

    @property
    def short_name(self) -> str:
        """Lower-case slug for readable config names: ``a100-sxm4-80gb``."""
        return self.model.lower()


@dataclass(frozen=True)
class Catalog:
    models: tuple[GpuModel, ...]

    def get(self, model: str) -> GpuModel | None:
        for m in self.models:
            if m.model == model:
                return m
        return None

    def by_product(self, gpu_product: str) -> GpuModel | None:
        """Resolve a ``nvidia.com/gpu.product`` label value (or a catalog key) to a model.

        GFD appends ``-SHARED`` when a GPU is time-sliced, and older drivers drop the ``NVIDIA-``
        prefix, so both are tolerated.
        """
        wanted = _normalise_product(gpu_product)
        for m in self.models:
            if wanted == _normalise_product(m.model) or any(
                wanted == _normalise_product(p) for p in m.gpu_products
            ):
                return m
        return None

    def all_products(self) -> tuple[str, ...]:
        return tuple(sorted({p for m in self.models for p in (m.model, *m.gpu_products)}))

    def same_family(self, gpu_product: str) -> tuple[GpuModel, ...]:
        """The catalog models an unknown product name may have meant, most similar first.

        Only models of the value's GPU family (the chip: ``H100`` in ``NVIDIA-H100-SXM5-80GB``) are
        candidates: a near miss by edit distance across families (``A100-SXM4-80GB``) is another GPU
        with other profiles. Empty when the catalog has no model of that family.
        """
        family = product_family(gpu_product)
        if family is None:
            return ()
        wanted = _normalise_product(gpu_product)

        def similarity(m: GpuModel) -> float:
            names = (m.model, *m.gpu_products)
            return max(difflib.SequenceMatcher(None, wanted, _normalise_product(n)).ratio() for n in names)

        same = [m for m in self.models if family in {product_family(n) for n in (m.model, *m.gpu_products)}]
        return tuple(sorted(same, key=lambda m: (-similarity(m), m.model)))


def accepted_names(model: GpuModel) -> tuple[str, ...]:
    """Every spelling :meth:`Catalog.by_product` resolves to ``model`` (besides a ``-SHARED`` suffix
    and a dropped ``NVIDIA-`` prefix): its ``gpu.product`` values and the catalog key, also with the
    ``NVIDIA-`` prefix GFD writes."""
    names = [*model.gpu_products, model.model, f"NVIDIA-{model.model}"]
    return tuple(dict.fromkeys(names))


def product_family(value: str) -> str | None:
    """The GPU chip a product name names (``A100``, ``H200``, ``GH200``, ``L40S``, ``RTX-4090``, ``T4``)."""
    match = _FAMILY.search(_normalise_product(value))
    return None if match is None else match.group(1).replace("-", "")


_FAMILY = re.compile(r"(?:^|[-_ ])(GH\d{3}|[ABHLT]\d{1,3}S?|RTX-?\d{4})(?=$|[-_ ])")


def _normalise_product(value: str) -> str:
    v = value.strip().upper()
    v = v.removesuffix("-SHARED")
    v = v.removeprefix("NVIDIA-")
    return v


def _schema() -> dict[str, Any]:
    return bundled_schema("catalog.schema.json")


# libyaml's scanner where PyYAML was built with it (the constructors are the same Python code):
# 0.04 -> 0.006 s for the 13 data files, every run. tests/test_catalog_loader.py holds the two
# loaders equal on every shipped file.
_DataLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_data(text: str) -> Any:
    """One catalog data file, with the C safe loader where there is one."""
    return yaml.load(text, Loader=_DataLoader)  # a safe loader, C or Python


@functools.cache
def _fast_validator() -> Any:
    try:
        import jsonschema_rs
    except ImportError:  # a platform without its wheel: every file takes jsonschema's error walk
        return None
    return jsonschema_rs.Draft202012Validator(_schema())


def _fast_valid(raw: Any) -> bool:
    """Whether jsonschema-rs accepts ``raw`` (False when it is absent or cannot take the value): a
    valid file then needs no ``jsonschema`` import (0.05 s every run) nor its error walk. The
    shipped files are valid (tests/test_catalog_loader.py); jsonschema still words every error."""
    validator = _fast_validator()
    if validator is None:
        return False
    try:
        return bool(validator.is_valid(raw))
    except (ValueError, TypeError, OverflowError, RecursionError):
        return False


def _schema_errors(raw: Any) -> list[Any]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    return sorted(validator.iter_errors(raw), key=lambda e: list(e.absolute_path))


def parse_model(raw: Mapping[str, Any], origin: str) -> GpuModel:
    """Validate one catalog document against the catalog schema and build the model."""
    errors = [] if _fast_valid(raw) else _schema_errors(raw)
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "<root>"
        raise CatalogError(f"{origin}: {where}: {first.message}")
    profiles = tuple(
        Profile(
            name=p["name"],
            id=p.get("id"),
            nvml_index=p.get("nvmlIndex"),
            compute_slices=int(p["computeSlices"]),
            memory_slices=int(p["memorySlices"]),
            memory_gb=float(p["memoryGB"]),
            max_count=int(p["maxCount"]),
            placements=tuple(int(s) for s in p["placements"]),
            media_extensions="+me" in p["name"],
            verified=str(p.get("verified", "")),
        )
        for p in raw.get("profiles", [])
    )
    return GpuModel(
        model=raw["model"],
        gpu_products=tuple(raw.get("gpuProducts", [])),
        pci_device_ids=tuple(raw.get("pciDeviceIds", [])),
        mig_capable=bool(raw.get("migCapable", True)),
        compute_slices=int(raw.get("computeSlices", 0)),
        memory_slices=int(raw.get("memorySlices", 0)),
        memory_gb=float(raw["memoryGB"]),
        profiles=profiles,
        balanced=tuple(sorted((str(k), int(v)) for k, v in raw.get("balanced", {}).items())),
        verified=str(raw.get("verified", "")),
    )


@functools.cache
def load_catalog() -> Catalog:
    """The shipped catalog, every data file validated; models sorted by key."""
    data_dir = resources.files("compiler.catalog").joinpath("data")
    models: list[GpuModel] = []
    for item in sorted(data_dir.iterdir(), key=lambda p: p.name):
        if not item.name.endswith(".yaml"):
            continue
        raw = load_data(item.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise CatalogError(f"{item.name}: expected a mapping at the top level")
        models.append(parse_model(raw, item.name))
    names = [m.model for m in models]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise CatalogError(f"catalog models defined twice: {', '.join(dupes)}")
    return Catalog(models=tuple(sorted(models, key=lambda m: m.model)))
