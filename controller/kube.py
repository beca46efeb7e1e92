"""The only place that talks to the API server.

Every call goes through ``_call``: the dry-run guard, and translation
of client exceptions into the controller's error taxonomy. Responses are read as plain JSON
dicts (camelCase, exactly as the server sends them) instead of the client's models.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client

from controller.errors import PermanentError, TemporaryError, translate

MERGE_PATCH = "application/merge-patch+json"
USER_AGENT = "migc-controller/0.1"


class DryRunWriteError(PermanentError):
    """A write was attempted in dry-run mode (a bug: dry-run code paths must not write)."""


class Kube:
    def __init__(self, api_client: client.ApiClient, *, dry_run: bool = False, identity: str = "") -> None:
        # The identity in the User-Agent tells replicas apart in API audit logs (and in tests).
        api_client.user_agent = f"{USER_AGENT} ({identity})" if identity else USER_AGENT
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.coord = client.CoordinationV1Api(api_client)
        # resource.k8s.io/v1 (GA in Kubernetes 1.34): the client has it from v34.
        self.resource = client.ResourceV1Api(api_client)
        self.dry_run = dry_run
        self.request_timeout: tuple[float, float] = (5.0, 30.0)

    def _call(
        self,
        what: str,
        fn: Callable[..., Any],
        *args: Any,
        write: bool = False,
        max_bytes: int | None = None,
        **kw: Any,
    ) -> Any:
        if write and self.dry_run:
            raise DryRunWriteError(f"dry-run: refusing to {what}")
        try:
            resp = fn(*args, _preload_content=False, _request_timeout=self.request_timeout, **kw)
        except Exception as exc:
            raise translate(exc, what) from exc
        data = resp.data
        if not data:
            return {}
        if max_bytes is not None and len(data) > max_bytes:
            raise PermanentError(f"{what}: the answer is larger than {max_bytes} bytes; not read")
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as exc:
            if max_bytes is None:
                # An API server answers JSON: a body that is not (a proxy's error page, a cut
                # connection) is a fault of the path, retried like a 5xx, never a bare ValueError
                # that no caller's error handling expects.
                raise TemporaryError(f"{what}: the answer is not JSON") from exc
            raise PermanentError(f"{what}: the answer is not JSON") from exc

    # --- reads -------------------------------------------------------------------------------
    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        out: dict[str, Any] = self._call(
            f"get configmap {namespace}/{name}", self.core.read_namespaced_config_map, name, namespace
        )
        return out

    def list_nodes(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self._call("list nodes", self.core.list_node).get("items") or []
        return items

    def list_pods(self, node: str | None = None) -> list[dict[str, Any]]:
        if node is None:
            resp = self._call("list pods", self.core.list_pod_for_all_namespaces)
        else:
            resp = self._call(
                f"list pods on {node}",
                self.core.list_pod_for_all_namespaces,
                field_selector=f"spec.nodeName={node}",
            )
        items: list[dict[str, Any]] = resp.get("items") or []
        # Filter again client-side: field selectors are a server feature we do not want to depend
        # on for safety (an API emulator or an aggregated proxy may ignore them).
        if node is not None:
            items = [p for p in items if (p.get("spec") or {}).get("nodeName") == node]
        return items

    def list_resource_slices(
        self, node: str, driver: str, *, page: int = 100, max_pages: int = 16
    ) -> list[dict[str, Any]]:
        """The ResourceSlices of ``driver`` for ``node`` (``resource.k8s.io/v1``), page by page.

        The API server supports the field selectors ``spec.nodeName`` and ``spec.driver`` on
        ResourceSlices (kubernetes/kubernetes@02d4c8c3 pkg/registry/resource/resourceslice/
        strategy.go:178-193, toSelectableFields); the result is filtered again by the caller. A listing
        longer than ``max_pages`` pages is refused rather than read without end.
        """
        items: list[dict[str, Any]] = []
        token: str | None = None
        what = f"list resourceslices of {driver} on {node}"
        for _ in range(max_pages):
            kw: dict[str, Any] = {"limit": page}
            if token:
                kw["_continue"] = token
            resp = self._call(
                what,
                self.resource.list_resource_slice,
                field_selector=f"spec.nodeName={node},spec.driver={driver}",
                **kw,
            )
            got = resp.get("items")
            items.extend(i for i in (got if isinstance(got, list) else []) if isinstance(i, dict))
            meta = resp.get("metadata")
            token = meta.get("continue") if isinstance(meta, dict) else None
            if not isinstance(token, str) or not token:
                return items
        raise PermanentError(f"{what}: more than {max_pages * page} slices; not read any further")

    def get_resource_claim(self, namespace: str, name: str, *, max_bytes: int = 1 << 20) -> dict[str, Any]:
        """One ResourceClaim (``resource.k8s.io/v1``), as JSON; an answer over ``max_bytes``
        (a claim has at most 32 requests and 32 results, resource/v1 types.go:956, :1749) or not
        an object is a PermanentError."""
        out = self._call(
            f"get resourceclaim {namespace}/{name}",
            self.resource.read_namespaced_resource_claim,
            name,
            namespace,
            max_bytes=max_bytes,
        )
        if not isinstance(out, dict):
            raise PermanentError(f"get resourceclaim {namespace}/{name}: the answer is not an object")
        return out

    def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        out: dict[str, Any] = self._call(
            f"get lease {namespace}/{name}", self.coord.read_namespaced_lease, name, namespace
        )
        return out

    # --- writes ------------------------------------------------------------------------------
    def patch_node(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        # JSON merge patch, not strategic merge: lists (taints) are replaced as a whole, which is
        # what the caller computed from the node it read; ``null`` deletes a label/annotation.
        out: dict[str, Any] = self._call(
            f"patch node {name}",
            self.core.patch_node,
            name,
            dict(patch),
            write=True,
            _content_type=MERGE_PATCH,
        )
        return out

    def evict(self, namespace: str, name: str) -> dict[str, Any]:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        out: dict[str, Any] = self._call(
            f"evict pod {namespace}/{name}",
            self.core.create_namespaced_pod_eviction,
            name,
            namespace,
            body,
            write=True,
        )
        return out

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        self._call(
            f"create event in {namespace}",
            self.core.create_namespaced_event,
            namespace,
            dict(body),
            write=True,
        )

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self._call(
            f"create lease {namespace}", self.coord.create_namespaced_lease, namespace, dict(body), write=True
        )
        return out

    def patch_lease(self, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self._call(
            f"patch lease {namespace}/{name}",
            self.coord.patch_namespaced_lease,
            name,
            namespace,
            dict(patch),
            write=True,
            _content_type=MERGE_PATCH,
        )
        return out
