"""The semantic rule families (MIGC1xx), one module each; importing this package registers them.

Rules do not depend on each other's order: diagnostics are sorted afterwards, and a rule that would
expand something over a limit checks the limit itself. The families: sizes and numbers (limits),
the PartitionPolicy, the Fleet's clusters and pools, tenants, workloads, and the PartitionPolicy's
rules, which refer to pools and workloads; and what the output's consumers (Kubernetes admission,
the NVIDIA device plugin) accept; and pools allocated through Kubernetes DRA (docs/dra.md).
"""

from compiler.validate.rules import (
    consumers,
    dra,
    fleet,
    hami,
    limits,
    partition,
    policy_rules,
    spread,
    tenants,
    workloads,
)

FAMILIES = (limits, partition, fleet, tenants, workloads, policy_rules, consumers, hami, spread, dra)
