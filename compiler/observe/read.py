"""Where observations come from: snapshot files or a live cluster.

* :func:`read_snapshots` reads ``kubectl get pods,nodes -A -o json`` output (a ``List``), a single
  object, or several such files; regular files only, at most :data:`MAX_SNAPSHOT_BYTES` each. On a
  cluster with DRA pools, ``kubectl get pods,nodes,resourceclaims,resourceslices -A -o json``: the
  claims say what pods that ask through DRA want and hold (compiler/observe/dra.py).
* :func:`read_cluster` lists nodes, pods and (``resource.k8s.io/v1``) ResourceClaims and
  ResourceSlices through the official ``kubernetes`` client, from a kubeconfig or in-cluster. The
  client is imported only here and only when called.

Both raise :class:`ObserveError` (carrying a registered code) for input they cannot use at all.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from compiler.diagnostics import Diagnostic, DiagnosticError, make
from compiler.observe.model import Observation
from compiler.observe.parse import parse_objects

MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024  # a 5,000-node cluster with 100,000 pods is ~200 MiB of JSON
PAGE_SIZE = 500
DRA_GROUP = "resource.k8s.io/v1"
LIST_TIMEOUT_S = 30.0  # seconds per list request to a live cluster, unless the caller says otherwise


class ObserveError(DiagnosticError):
    """Input that cannot be observed at all; ``diagnostic`` says which and why."""


def _read_bounded(path: Path) -> bytes:
    def fail(why: str) -> ObserveError:
        return ObserveError(make("MIGC400", f"cannot read snapshot {path}: {why}", file=str(path)))

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise fail("not a regular file")
        if info.st_size > MAX_SNAPSHOT_BYTES:
            raise fail(f"{info.st_size} bytes, more than the {MAX_SNAPSHOT_BYTES} allowed")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > MAX_SNAPSHOT_BYTES:  # grew while we read it
                raise fail(f"more than the {MAX_SNAPSHOT_BYTES} bytes allowed")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)


def _items(doc: Any, file: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            if isinstance(item, dict):
                # kubectl get nodes -o json lists items without kind when the list kind says it
                if "kind" not in item and str(doc.get("kind", "")).endswith("List") and doc["kind"] != "List":
                    item = {**item, "kind": str(doc["kind"])[: -len("List")]}
                yield item, file
    elif isinstance(doc, dict) and isinstance(doc.get("kind"), str):
        yield doc, file
    else:
        raise ObserveError(
            make(
                "MIGC400",
                f"snapshot {file} is neither a Kubernetes List nor an object with a kind",
                file=file,
            )
        )


def read_snapshots(paths: Sequence[str | os.PathLike[str]], now: dt.datetime) -> Observation:
    """Merge the Nodes and GPU Pods of every file (a later file's copy of an object wins)."""
    objects: list[tuple[Mapping[str, Any], str]] = []
    for p in paths:
        path = Path(p)
        raw = _read_bounded(path)
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ObserveError(
                make("MIGC400", f"snapshot {path} is not JSON: {exc}", file=str(path))
            ) from exc
        objects.extend(_items(doc, str(path)))
    nodes, pods, diags, slices = parse_objects(objects, now)
    label = "snapshot " + ", ".join(str(p) for p in paths)
    return Observation(
        taken_at=now, source=label, nodes=nodes, pods=pods, warnings=tuple(diags), resource_slices=slices
    )


def _list_all(call: Any, kind: str, timeout: float) -> list[Mapping[str, Any]]:
    """Every object of a paginated list call, as the API's JSON (camelCase, like kubectl's).

    Bounded like a snapshot: at most MAX_SNAPSHOT_BYTES of answers over all pages of one kind (an
    endless ``continue`` chain ends there), else :class:`ObserveError` (MIGC403).
    """
    out: list[Mapping[str, Any]] = []
    token: str | None = None
    total = 0
    while True:
        kwargs: dict[str, Any] = {"limit": PAGE_SIZE, "_preload_content": False, "_request_timeout": timeout}
        if token:
            kwargs["_continue"] = token
        resp = call(**kwargs)
        data = resp.data
        total += len(data)
        if total > MAX_SNAPSHOT_BYTES:
            raise ObserveError(
                make(
                    "MIGC403",
                    f"the {kind} list is larger than the {MAX_SNAPSHOT_BYTES} bytes a snapshot may be",
                )
            )
        body = json.loads(data)
        for item in body.get("items") or []:
            if isinstance(item, dict):
                out.append({**item, "kind": kind})
        token = (body.get("metadata") or {}).get("continue") or None
        if not token:
            return out


def read_cluster(
    now: dt.datetime,
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    in_cluster: bool = False,
    timeout: float = LIST_TIMEOUT_S,
) -> Observation:
    """Nodes and GPU pods of a live cluster (list calls only: read-only, paginated)."""
    try:
        from kubernetes import client, config
    except ImportError as exc:
        raise ObserveError(
            make("MIGC403", "reading a live cluster needs the kubernetes package: pip install kubernetes")
        ) from exc
    try:
        if in_cluster:
            config.load_incluster_config()  # type: ignore[no-untyped-call]  # the client is untyped
            cfg = client.Configuration.get_default_copy()
        else:
            cfg = client.Configuration()
            config.load_kube_config(  # type: ignore[no-untyped-call]  # the client is untyped
                config_file=kubeconfig, context=context, client_configuration=cfg
            )
    except Exception as exc:  # the client raises ConfigException, OSError, yaml errors …
        where = "in-cluster service account" if in_cluster else (kubeconfig or "the default kubeconfig")
        raise ObserveError(make("MIGC403", f"cannot load {where}: {exc}")) from exc
    api = client.CoreV1Api(client.ApiClient(cfg))
    try:
        nodes = _list_all(api.list_node, "Node", timeout)
        pods = _list_all(api.list_pod_for_all_namespaces, "Pod", timeout)
    except ObserveError:
        raise
    except Exception as exc:  # ApiException, urllib3 errors, bad JSON
        reason = getattr(exc, "reason", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ObserveError(make("MIGC403", f"cannot list nodes and pods at {cfg.host}: {reason}")) from exc
    claimed, unread = _list_dra(client.ResourceV1Api(api.api_client), timeout, cfg.host)
    listed = [(o, "") for o in [*nodes, *pods, *claimed]]
    parsed_nodes, parsed_pods, diags, slices = parse_objects(listed, now)
    return Observation(
        taken_at=now,
        source=f"cluster {cfg.host}",
        nodes=parsed_nodes,
        pods=parsed_pods,
        warnings=(*unread, *diags),
        resource_slices=slices,
    )


def _list_dra(api: Any, timeout: float, host: str) -> tuple[list[Mapping[str, Any]], list[Diagnostic]]:
    """The ResourceClaims and ResourceSlices of a live cluster (``resource.k8s.io/v1``), for the pods
    that ask for GPUs through DRA. A cluster that does not serve the API (404: before 1.34, or DRA
    off) has none; any other failure (forbidden, unreachable) leaves them out with a MIGC407 warning:
    pods that ask through claims are then not seen, the rest is."""
    out: list[Mapping[str, Any]] = []
    for call, kind in (
        (api.list_resource_claim_for_all_namespaces, "ResourceClaim"),
        (api.list_resource_slice, "ResourceSlice"),
    ):
        try:
            out.extend(_list_all(call, kind, timeout))
        except ObserveError as exc:
            return [], [make("MIGC407", f"{kind} list at {host}: {exc.diagnostic.message}")]
        except Exception as exc:  # ApiException, urllib3 errors, bad JSON
            if getattr(exc, "status", None) == 404:
                return [], []
            reason = getattr(exc, "reason", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
            why = f"cannot list {kind}s ({DRA_GROUP}) at {host}: {reason}"
            return [], [make("MIGC407", why)]
    return out, []
