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
from controller.assignment import ASSIGNMENT_KEY, Assignment, parse
from controller.errors import InvalidAssignmentError, NotFoundError, WrongClusterError
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

    def load(self, now: dt.datetime) -> Loaded:
        ctx = self.ctx
        ns, name = ctx.s.namespace, ctx.s.assignment_name
        try:
            cm = ctx.kube.get_configmap(ns, name)
        except NotFoundError:
            ctx.once(
                ("no-assignment",), logging.INFO, "no assignment ConfigMap yet", configmap=f"{ns}/{name}"
            )
            return Loaded(self._last_valid, False, False)
        paused = truthy(((cm.get("metadata") or {}).get("annotations") or {}).get(st.PAUSED))
        text = (cm.get("data") or {}).get(ASSIGNMENT_KEY)
        digest = hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()
        if self._parsed is not None and self._parsed[0] == digest:
            return Loaded(self._parsed[1], True, paused)
        try:
            if not isinstance(text, str):
                raise InvalidAssignmentError(f"ConfigMap {ns}/{name} has no key {ASSIGNMENT_KEY}")
            assignment = parse(text, cluster=ctx.s.cluster)
        except Exception as exc:
            # Permanent: retrying the same content cannot help. Report once per content, keep
            # finishing in-flight nodes, admit nothing until a valid revision arrives. Any
            # exception counts: the run loop must survive whatever one document holds.
            if self._reported_invalid != digest:
                self._reported_invalid = digest
                self._refuse(exc, now)
            return Loaded(self._last_valid, False, paused)
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
        if ctx.s.cluster is None:
            ctx.once(
                ("no-cluster-identity",),
                logging.WARNING,
                "no --cluster given: accepting an assignment for any cluster",
                cluster=assignment.cluster,
            )
        return Loaded(assignment, True, paused)

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
            configmap=f"{self.ctx.s.namespace}/{self.ctx.s.assignment_name}",
            reason=reason,
            error=message[:1024],
        )
        self.ctx.assignment_event(event, message, now)
