"""The semantic rule families (MIGC1xx), one module each; importing this package registers them.

The order below is the order rules run in (diagnostics are sorted afterwards, so it only matters
for readability): the PartitionPolicy, the Fleet's clusters and pools, tenants, workloads, and
the PartitionPolicy's rules, which refer to pools and workloads.
"""

from compiler.validate.rules import fleet, partition, policy_rules, tenants, workloads

FAMILIES = (partition, fleet, tenants, workloads, policy_rules)
