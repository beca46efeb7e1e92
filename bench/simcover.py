"""How good is `migc simulate`'s greedy layout search? Greedy cover vs an exact search, small fleets.

``python -m bench.simcover [--cases 200] [--seed 1] [--layouts fewest|maximal]``: for one node of
G = 1..3 A100-80GB GPUs starting all-balanced and a random demand (0–4 instances of each of
1g/2g/3g/4g/7g), compares the compute slices of demand served after
:func:`compiler.simulate.engine.cover` with the best any choice of G catalog layouts achieves
(exhaustive over multisets of layouts), and the time per call of each; ``--layouts`` is the
cover's ``Settings.layouts``.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

from compiler.catalog import load_catalog
from compiler.catalog.layouts import enumerate_layouts
from compiler.model import GpuLayout
from compiler.recommend.gates import served
from compiler.simulate.engine import LAYOUT_RULES, Settings, _Fleet, balanced_layout, cover

PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layouts", choices=LAYOUT_RULES, default="fewest", help="Settings.layouts")
    args = ap.parse_args()
    model = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
    assert model is not None
    layouts: list[GpuLayout] = list(enumerate_layouts(model))
    slices = {p.name: p.compute_slices for p in model.profiles}
    rng = random.Random(args.seed)
    print("| GPUs | cases | greedy = exact | mean greedy / exact | worst | greedy ms/call | exact ms/call |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for gpus in (1, 2, 3):
        s = Settings(nodes=1, gpus_per_node=gpus, layouts=args.layouts)
        equal, ratios, tg, te = 0, [], 0.0, 0.0
        for _ in range(args.cases):
            want = {p: rng.randint(0, 4) for p in PROFILES}
            fleet = _Fleet(model, s, balanced_layout(model))
            t0 = time.perf_counter()
            _, cap = cover(fleet, want, [(0, 0.0)])
            tg += time.perf_counter() - t0
            got = served(cap, want, slices)
            t0 = time.perf_counter()
            best = 0
            for combo in itertools.combinations_with_replacement(layouts, gpus):
                c: dict[str, int] = {}
                for lay in combo:
                    for p, n in lay.profiles:
                        c[p] = c.get(p, 0) + n
                best = max(best, served(c, want, slices))
            te += time.perf_counter() - t0
            equal += got == best
            ratios.append(got / best if best else 1.0)
        print(
            f"| {gpus} | {args.cases} | {equal} | {sum(ratios) / len(ratios):.3f} | {min(ratios):.3f} "
            f"| {tg / args.cases * 1000:.2f} | {te / args.cases * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
