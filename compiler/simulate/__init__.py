"""``migc simulate``: replay a pod trace through the recommend gates (discrete-event simulation)."""
