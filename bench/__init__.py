"""migc's benchmark: GPUs used, demand served and disruption vs exact optima and real baselines.

Run ``python -m bench --quick`` (about a minute) or ``python -m bench --full --results bench/RESULTS.md``.
See ``bench/README.md`` for what each metric means and how the baselines are modelled.
"""
