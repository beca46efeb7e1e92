"""The assignment as the controller may use it: read, parsed once per content, refused loudly.

A refused document (invalid, or addressed to another cluster) is reported once per content with
a log line, a metric and an Event on the ConfigMap; nodes already in flight keep finishing with
the last valid assignment, and no new node is admitted until a valid revision arrives.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from dataclasses import dataclass

from controller import state as st
from controller.assignment import ASSIGNMENT_KEY, SHARD_KEY, Assignment, assemble, parse_document, shard_names
from controller.dra import DRA_CONFIGMAP, DRA_KEY, DraPlan, InvalidDraPlanError
from controller.dra import parse as parse_draplan
from controller.errors import (
    IncompleteAssignmentError,
    InvalidAssignmentError,
    NotFoundError,
    WrongClusterError,
)
from controller.logs import log
from controller.reconciler.context import Context, truthy


@dataclass(frozen=True)
class Loaded:
    assignment: Assignment | None  # the one whose configs apply: the current, else the last valid
    valid: bool  # whether the current document is valid (only then are nodes admitted)
    paused: bool


class AssignmentSource:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._parsed: tuple[str, Assignment] | None = None
        self._last_valid: Assignment | None = None
        self._reported_invalid: str | None = None
        self._names: tuple[str, tuple[str, ...]] | None = None  # (index digest, shard names)

    def load(self, now: dt.datetime) -> Loaded:
        ctx = self.ctx
        ns, name = ctx.s.api.namespace, ctx.s.api.assignment_name
        try:
            cm = ctx.kube.get_configmap(ns, name)
        except NotFoundError:
            ctx.once(
                ("no-assignment",), logging.INFO, "no assignment ConfigMap yet", configmap=f"{ns}/{name}"
            )
            return Loaded(self._last_valid, False, False)
        paused = truthy(((cm.get("metadata") or {}).get("annotations") or {}).get(st.PAUSED))
        text = (cm.get("data") or {}).get(ASSIGNMENT_KEY)
        hasher = hashlib.sha256(str(text).encode("utf-8", "surrogatepass"))
        try:
            if not isinstance(text, str):
                raise InvalidAssignmentError(f"ConfigMap {ns}/{name} has no key {ASSIGNMENT_KEY}")
            shards = self._shards(text, hasher.hexdigest())
        except Exception as exc:
            return self._refused(exc, hasher.hexdigest(), now, paused)
        for shard_name in sorted(shards):
            value = str(shards[shard_name]).encode("utf-8", "surrogatepass")
            hasher.update(b"\0" + shard_name.encode() + b"\0" + value)
        digest = hasher.hexdigest()
        if self._parsed is not None and self._parsed[0] == digest:
            return Loaded(self._parsed[1], True, paused)
        try:
            assignment = parse_document(assemble(text, shards), cluster=ctx.s.api.cluster)
        except IncompleteAssignmentError as exc:
            return self._waiting(exc, paused)
        except Exception as exc:
            return self._refused(exc, digest, now, paused)
        self._parsed = (digest, assignment)
        self._last_valid = assignment
        log(
            logging.INFO,
            "assignment loaded",
            revision=assignment.revision,
            cluster=assignment.cluster,
            pools=len(assignment.pools),
            configs=len(assignment.configs),
        )
        if ctx.s.api.cluster is None:
            ctx.once(
                ("no-cluster-identity",),
                logging.WARNING,
                "no --cluster given: accepting an assignment for any cluster",
                cluster=assignment.cluster,
            )
        return Loaded(assignment, True, paused)

    def _shards(self, text: str, digest: str) -> dict[str, str | None]:
        """The ``nodes.json`` of every shard ConfigMap a sharded assignment names (None: absent);
        empty for the single-ConfigMap form. The names are read once per index content."""
        if self._names is None or self._names[0] != digest:
            self._names = (digest, shard_names(text))
        out: dict[str, str | None] = {}
        for shard_name in self._names[1]:
            try:
                cm = self.ctx.kube.get_configmap(self.ctx.s.api.namespace, shard_name)
            except NotFoundError:
                out[shard_name] = None
                continue
            value = (cm.get("data") or {}).get(SHARD_KEY)
            if not isinstance(value, str):
                where = f"{self.ctx.s.api.namespace}/{shard_name}"
                raise InvalidAssignmentError(f"ConfigMap {where} has no key {SHARD_KEY}")
            out[shard_name] = value
        return out

    def _waiting(self, exc: Exception, paused: bool) -> Loaded:
        """Shards missing or of another revision: a sync in progress. In-flight nodes finish with
        the last valid assignment; no node is admitted; nothing is refused (it is not wrong yet)."""
        self.ctx.once(
            ("assignment-incomplete", str(exc)),
            logging.INFO,
            "assignment incomplete; waiting for the sync",
            configmap=f"{self.ctx.s.api.namespace}/{self.ctx.s.api.assignment_name}",
            reason=str(exc)[:512],
        )
        return Loaded(self._last_valid, False, paused)

    def _refused(self, exc: Exception, key: str, now: dt.datetime, paused: bool) -> Loaded:
        # Permanent: retrying the same content cannot help. Report once per content, keep
        # finishing in-flight nodes, admit nothing until a valid revision arrives. Any
        # exception counts: the run loop must survive whatever one document holds.
        if self._reported_invalid != key:
            self._reported_invalid = key
            self._refuse(exc, now)
        return Loaded(self._last_valid, False, paused)

    def _refuse(self, exc: Exception, now: dt.datetime) -> None:
        """A refused assignment: a log line, a metric and an Event on the ConfigMap."""
        if isinstance(exc, WrongClusterError):
            reason, event = "wrong-cluster", "AssignmentForAnotherCluster"
        else:
            reason, event = "invalid", "InvalidAssignment"
        message = str(exc) if isinstance(exc, InvalidAssignmentError) else f"{type(exc).__name__}: {exc}"
        self.ctx.metrics.refusals.labels(reason=reason).inc()
        log(
            logging.ERROR,
            "assignment refused; no new reconfigurations until it is fixed",
            configmap=f"{self.ctx.s.api.namespace}/{self.ctx.s.api.assignment_name}",
            reason=reason,
            error=message[:1024],
        )
        self.ctx.assignment_event(event, message, now)


@dataclass(frozen=True)
class LoadedDra:
    plan: DraPlan | None  # the current, else the last valid one (None: no DRA pools)
    valid: bool  # False while the current document is refused: no node is admitted then


class DraPlanSource:
    """The DraPlan (ConfigMap ``migc-dra``, key ``dra.json``), read each pass like the assignment.

    No ConfigMap: no pool is on DRA. A refused document is reported once per content (log line
    at ERROR, ``migc_assignment_refusals_total{reason="dra-invalid"|"dra-wrong-cluster"}``, a
    Warning Event ``InvalidDraPlan`` on the ConfigMap); nodes in flight keep the last valid plan,
    and no node is admitted anywhere until a valid one arrives: without it the controller cannot
    tell which nodes must be verified from ResourceSlices instead of node allocatable.
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._parsed: tuple[str, DraPlan] | None = None
        self._last_valid: DraPlan | None = None
        self._reported: str | None = None

    def load(self, now: dt.datetime) -> LoadedDra:
        ctx = self.ctx
        ns = ctx.s.api.namespace
        try:
            cm = ctx.kube.get_configmap(ns, DRA_CONFIGMAP)
        except NotFoundError:
            self._parsed = None
            return LoadedDra(None, True)
        text = (cm.get("data") or {}).get(DRA_KEY) if isinstance(cm.get("data"), dict) else None
        digest = hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()
        if self._parsed is not None and self._parsed[0] == digest:
            return LoadedDra(self._parsed[1], True)
        try:
            if not isinstance(text, str):
                raise InvalidDraPlanError(f"ConfigMap {ns}/{DRA_CONFIGMAP} has no key {DRA_KEY}")
            plan = parse_draplan(text, cluster=ctx.s.api.cluster)
        except Exception as exc:
            if self._reported != digest:
                self._reported = digest
                self._refuse(exc, now)
            return LoadedDra(self._last_valid, False)
        self._parsed = (digest, plan)
        self._last_valid = plan
        self._reported = None
        log(
            logging.INFO,
            "DraPlan loaded",
            revision=plan.revision[:12],
            static=[p.name for p in plan.pools if p.static],
            dynamic=[p.name for p in plan.pools if not p.static],
        )
        for pool in plan.pools:
            if not pool.static:
                log(
                    logging.INFO,
                    "DRA pool uses the driver's DynamicMIG: no layout to roll out, its nodes are left alone "
                    "(the driver creates a MIG device per prepared claim)",
                    pool=pool.name,
                    selector=dict(pool.selector or {}),
                )
        return LoadedDra(plan, True)

    def _refuse(self, exc: Exception, now: dt.datetime) -> None:
        ctx = self.ctx
        reason = "dra-wrong-cluster" if isinstance(exc, WrongClusterError) else "dra-invalid"
        message = str(exc) if isinstance(exc, InvalidAssignmentError) else f"{type(exc).__name__}: {exc}"
        ctx.metrics.refusals.labels(reason=reason).inc()
        log(
            logging.ERROR,
            "DraPlan refused; no new reconfigurations until it is fixed",
            configmap=f"{ctx.s.api.namespace}/{DRA_CONFIGMAP}",
            reason=reason,
            error=message[:1024],
        )
        ctx.event(
            ctx.s.api.namespace,
            "ConfigMap",
            "v1",
            DRA_CONFIGMAP,
            "InvalidDraPlan",
            f"{message}; no node is admitted until a valid DraPlan is synced (migc compile renders it)",
            now,
        )
