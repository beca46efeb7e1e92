"""``migc recommend``: observed demand turned into a gated re-partitioning proposal."""
