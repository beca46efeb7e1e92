"""Kubernetes object names as the API server admits them, for everything read from a cluster."""

from __future__ import annotations

import re

MAX_NAME_CHARS = 253  # a Kubernetes object name (DNS subdomain)
# Names as the API server admits them (apimachinery pkg/util/validation IsDNS1123Subdomain/Label):
# pods and nodes are DNS-1123 subdomains, namespaces DNS-1123 labels. A snapshot can hold anything;
# a name that is neither cannot be a real object, and would carry newlines or escapes into output.
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_NAMESPACE = re.compile(rf"^{_LABEL}$")


def valid_name(name: object, namespace: bool = False) -> bool:
    """Whether ``name`` is a Kubernetes object name (a DNS-1123 label for a namespace)."""
    if not isinstance(name, str) or not 0 < len(name) <= (63 if namespace else MAX_NAME_CHARS):
        return False
    return bool((_NAMESPACE if namespace else _SUBDOMAIN).match(name))
