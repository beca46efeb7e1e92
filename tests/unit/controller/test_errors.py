"""controller/errors.py: every client failure maps to a temporary or a permanent error."""

from __future__ import annotations

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from controller import errors
from controller.errors import NotFoundError, PermanentError, TemporaryError, translate


def _api(status: int, body: str | bytes | None = None, reason: str = "") -> ApiException:
    exc = ApiException(status=status, reason=reason)
    # Typed str, but older clients and some servers hand back bytes (errors._reason reads both).
    setattr(exc, "body", body)  # noqa: B010
    return exc


def test_status_codes() -> None:
    for status in (409, 429, 500, 503, 0):
        err = translate(_api(status), "x")
        assert type(err) is TemporaryError and err.status == status, status
    assert type(translate(_api(404), "x")) is NotFoundError
    for status in (400, 403, 422):
        err = translate(_api(status), "x")
        assert type(err) is PermanentError and err.status == status, status


def test_message_names_the_call_and_the_servers_reason() -> None:
    body = b'{"kind": "Status", "message": "nodes \\"n0\\" is forbidden"}'
    assert (
        str(translate(_api(403, body), "patch node n0")) == 'patch node n0: HTTP 403: nodes "n0" is forbidden'
    )
    html = "<html>" + "x" * 1000
    msg = str(translate(_api(502, html), "list nodes"))
    assert msg == "list nodes: HTTP 502: " + html[:256]  # a proxy's page is cut short
    assert str(translate(_api(500, None, reason="Internal"), "get")) == "get: HTTP 500: Internal"
    # JSON without a message falls back to the reason.
    assert str(translate(_api(409, '["no"]', reason="Conflict"), "w")) == "w: HTTP 409: Conflict"


def test_connection_failures_are_temporary_anything_else_permanent() -> None:
    assert isinstance(translate(urllib3.exceptions.ProtocolError("reset"), "x"), TemporaryError)
    assert isinstance(translate(TimeoutError(), "x"), TemporaryError)
    assert isinstance(translate(ConnectionResetError(), "x"), TemporaryError)
    err = translate(ValueError("bad json"), "read x")
    assert type(err) is PermanentError and str(err) == "read x: ValueError: bad json"


def test_hierarchy_decides_retrying() -> None:
    # The reconciler retries TemporaryError and only those: the subclasses must sit on the right side.
    assert issubclass(errors.IncompleteAssignmentError, TemporaryError)
    assert issubclass(errors.WrongClusterError, errors.InvalidAssignmentError)
    assert issubclass(errors.InvalidAssignmentError, PermanentError)
    assert issubclass(NotFoundError, PermanentError)
    assert not issubclass(PermanentError, TemporaryError) and not issubclass(TemporaryError, PermanentError)
    assert all(issubclass(c, errors.ControllerError) for c in (TemporaryError, PermanentError))
