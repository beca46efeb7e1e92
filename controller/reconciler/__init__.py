"""The reconciler: a small dispatcher (``core``) around one handler per phase.

``source`` reads and refuses assignments, ``admission`` starts reconfigurations, ``drain``,
``apply`` and ``failed`` are the phase handlers, ``phases`` maps each phase to its handler,
``dryrun`` logs what a real pass would do, ``context`` holds what they share.
"""

from __future__ import annotations

from controller.reconciler.context import allocatable_diff, device_plugin_only, incompatible
from controller.reconciler.core import Reconciler

__all__ = ["Reconciler", "allocatable_diff", "device_plugin_only", "incompatible"]
