"""Error taxonomy, after kopf: temporary errors are retried with backoff, permanent ones are not.

Everything the Kubernetes client raises is translated here, so the reconciler never looks at
HTTP status codes and the stack traces say which kind of failure happened.
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException

# Non-JSON error bodies can be anything (proxies, HTML pages); keep only a short head of them.
_BODY_LIMIT = 256


class ControllerError(Exception):
    """Base of every error the controller raises on purpose."""


class TemporaryError(ControllerError):
    """Worth retrying later: conflicts, throttling, server errors, broken connections."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class IncompleteAssignmentError(TemporaryError):
    """A sharded assignment whose shards are not all there, or not all of the index's revision
    (a GitOps sync applies objects one by one): wait for the next pass."""


class PermanentError(ControllerError):
    """Retrying the same request cannot help: invalid input, forbidden, unprocessable."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFoundError(PermanentError):
    """The object does not exist (HTTP 404)."""


class InvalidAssignmentError(PermanentError):
    """The assignment document violates the schema or refers to unknown configs."""


class WrongClusterError(InvalidAssignmentError):
    """The assignment is valid but addressed to another cluster than this controller's."""


def _reason(exc: ApiException) -> str:
    body: object = exc.body  # typed str, but older clients and some servers hand back bytes
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body:
        try:
            decoded = json.loads(body)
        except ValueError:
            return body[:_BODY_LIMIT]
        if isinstance(decoded, dict) and isinstance(decoded.get("message"), str):
            return str(decoded["message"])[:_BODY_LIMIT]
    return str(exc.reason or "")


def translate(exc: BaseException, what: str) -> ControllerError:
    """Map a client-side exception to the taxonomy; ``what`` names the call for the message.

    The client's modules are imported here, not at the top: the taxonomy itself (and
    ``controller.assignment``, which ``migc plan`` reads sharded assignments with) must import
    without the ``controller`` extra.
    """
    import urllib3.exceptions
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        message = f"{what}: HTTP {status}: {_reason(exc)}"
        if status == 404:
            return NotFoundError(message, status=status)
        if status in (409, 429) or status >= 500 or status == 0:
            return TemporaryError(message, status=status)
        return PermanentError(message, status=status)
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError | socket.timeout | http.client.HTTPException):
        return TemporaryError(f"{what}: connection error: {exc}")
    return PermanentError(f"{what}: {type(exc).__name__}: {exc}")
