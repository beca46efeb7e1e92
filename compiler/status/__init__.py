"""``migc status``: what the fleet has, holds, uses and costs, against what the policy says.

:func:`build_status` joins an observation (:mod:`compiler.observe`), the policy and the deployed
NodeAssignment into a :class:`FleetStatus`; :mod:`.report` writes it for stdout (``FORMATS``: text,
json, markdown; ``FleetStatus.to_dict`` the JSON) and :mod:`.html` draws the static console, a file.
"""

from compiler.status.build import Filters, build_status
from compiler.status.html import to_html
from compiler.status.model import FleetStatus
from compiler.status.report import to_json, to_markdown, to_text

__all__ = ["Filters", "FleetStatus", "build_status", "to_html", "to_json", "to_markdown", "to_text"]
