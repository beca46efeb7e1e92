"""Layout enumeration is exact: cross-checked against a brute force over placement subsets."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from compiler.catalog import GpuModel, load_catalog
from compiler.catalog.layouts import (
    enumerate_layouts,
    is_feasible,
    layout_compute_slices,
    layout_memory_slices,
    place,
)
from compiler.model import GpuLayout

MIG_MODELS = sorted(m.model for m in load_catalog().models if m.mig_capable)


def _model(name: str) -> GpuModel:
    m = load_catalog().get(name)
    assert m is not None
    return m


def _brute_force(model: GpuModel, allow_me: bool) -> set[tuple[tuple[str, int], ...]]:
    """All multisets realisable by some subset of (profile, start) pairs.

    Independent of the code under test: it decides each (profile, start) pair in a fixed list in or
    out (pruning only subsets that already overlap), then checks the budgets on the finished subset.
    """
    pairs = [
        (p, s)
        for p in model.profiles
        if allow_me or not p.media_extensions
        for s in p.placements
    ]
    out: set[tuple[tuple[str, int], ...]] = set()

    def rec(i: int, occupied: frozenset[int], chosen: list[str]) -> None:
        if i == len(pairs):
            if not chosen:
                return
            counts = Counter(chosen)
            profs = {p.name: p for p in model.profiles}
            compute = sum(profs[n].compute_slices * c for n, c in counts.items())
            media = sum(c for n, c in counts.items() if "+me" in n)
            if compute > model.compute_slices or media > 1:
                return
            if any(c > profs[n].max_count for n, c in counts.items()):
                return
            out.add(tuple(sorted(counts.items())))
            return
        rec(i + 1, occupied, chosen)
        prof, start = pairs[i]
        cells = frozenset(range(start, start + prof.memory_slices))
        if max(cells) < model.memory_slices and not cells & occupied:
            chosen.append(prof.name)
            rec(i + 1, occupied | cells, chosen)
            chosen.pop()

    rec(0, frozenset(), [])
    return out


@pytest.mark.parametrize("name", MIG_MODELS)
@pytest.mark.parametrize("allow_me", [False, True])
def test_enumeration_matches_brute_force(name: str, allow_me: bool) -> None:
    model = _model(name)
    got = enumerate_layouts(model, allow_media_extensions=allow_me)
    assert all(layout.mig_enabled for layout in got)
    assert list(got) == sorted(got), "order must be deterministic (sorted)"
    assert len(set(got)) == len(got)
    assert {layout.profiles for layout in got} == _brute_force(model, allow_me)
    if not allow_me:
        assert not any("+me" in n for layout in got for n, _ in layout.profiles)


@pytest.mark.parametrize("name", MIG_MODELS)
def test_is_feasible_and_place_agree_with_brute_force(name: str) -> None:
    model = _model(name)
    valid = _brute_force(model, allow_me=True)
    names = [p.name for p in model.profiles]
    ranges = [range(p.max_count + 1) for p in model.profiles]
    checked = 0
    for combo in itertools.product(*ranges):
        counts = {n: c for n, c in zip(names, combo, strict=True) if c}
        expected = bool(counts) and tuple(sorted(counts.items())) in valid
        if not counts:
            expected = True  # the empty layout (MIG on, nothing) always fits
        assert is_feasible(model, counts) == expected, counts
        witness = place(model, counts)
        assert (witness is not None) == expected
        if witness is not None:
            _assert_valid_witness(model, counts, witness)
        checked += 1
    assert checked > 100
    for p in model.profiles:
        assert not is_feasible(model, {p.name: p.max_count + 1})
        assert is_feasible(model, {p.name: p.max_count})


def _assert_valid_witness(
    model: GpuModel, counts: dict[str, int], witness: tuple[tuple[str, int, int], ...]
) -> None:
    assert Counter(n for n, _, _ in witness) == Counter(counts)
    used: set[int] = set()
    for n, start, size in witness:
        prof = model.profile(n)
        assert prof is not None and start in prof.placements and size == prof.memory_slices
        cells = set(range(start, start + size))
        assert not cells & used and max(cells) < model.memory_slices
        used |= cells
    assert list(witness) == sorted(witness, key=lambda t: (t[1], t[0]))


def test_known_a100_facts() -> None:
    m = _model("A100-SXM4-80GB")
    assert is_feasible(m, {"4g.40gb": 1, "3g.40gb": 1})
    assert is_feasible(m, {"1g.10gb": 7})
    assert is_feasible(m, {"2g.20gb": 3, "1g.10gb": 1})
    assert is_feasible(m, {"2g.20gb": 2, "3g.40gb": 1})
    # memory axis: two 3g blocks fill all 8 slots, no room for a 1g although compute (7) would fit
    assert not is_feasible(m, {"3g.40gb": 2, "1g.10gb": 1})
    # 4g only starts at 0, so a second half-GPU profile must be 3g
    assert not is_feasible(m, {"4g.40gb": 1, "2g.20gb": 2})
    assert not is_feasible(m, {"1g.10gb+me": 1, "1g.10gb": 7})  # 8 compute slices
    assert not is_feasible(m, {"nope": 1})
    witness = place(m, {"1g.10gb": 5, "2g.20gb": 1})
    assert witness is not None and all(s != 7 for n, s, _ in witness if n == "1g.10gb")
    # the GPU Operator's all-balanced layout is valid on every model
    for name in MIG_MODELS:
        model = _model(name)
        assert is_feasible(model, dict(model.balanced)), name


def test_one_media_extension_per_gpu_on_a30() -> None:
    m = _model("A30-24GB")
    assert is_feasible(m, {"1g.6gb+me": 1, "2g.12gb": 1, "1g.6gb": 1})
    assert not is_feasible(m, {"1g.6gb+me": 1, "2g.12gb+me": 1})
    layouts = enumerate_layouts(m, allow_media_extensions=True)
    assert all(sum(c for n, c in lay.profiles if "+me" in n) <= 1 for lay in layouts)


def test_cached_and_empty_for_non_mig() -> None:
    m = _model("H100-80GB")
    assert enumerate_layouts(m) is enumerate_layouts(m)
    l40s = _model("L40S")
    assert enumerate_layouts(l40s) == ()
    assert place(l40s, {}) == ()
    assert not is_feasible(l40s, {"1g.10gb": 1})


def test_slice_helpers() -> None:
    m = _model("A100-SXM4-80GB")
    lay = GpuLayout.of({"3g.40gb": 1, "2g.20gb": 2})
    assert layout_compute_slices(m, lay) == 7
    assert layout_memory_slices(m, lay) == 8
    assert layout_compute_slices(m, GpuLayout.whole()) == 7
    with pytest.raises(KeyError):
        layout_compute_slices(m, GpuLayout.of({"9g.1gb": 1}))
