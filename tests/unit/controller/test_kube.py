"""controller/kube.py: the one API boundary, driven through a stand-in for the generated client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controller.errors import NotFoundError, PermanentError, TemporaryError
from controller.kube import MERGE_PATCH, USER_AGENT, DryRunWriteError, Kube


class _Resp:
    def __init__(self, body: Any) -> None:
        self.data = b"" if body is None else json.dumps(body).encode()


class _Api:
    """Records each call of the generated client's methods and answers from ``answers``."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kw: Any) -> _Resp:
            self.calls.append((method, args, kw))
            answer = self.answers.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return _Resp(answer)

        return call


def _kube(*, dry_run: bool = False, identity: str = "") -> Kube:
    return Kube(client.ApiClient(client.Configuration()), dry_run=dry_run, identity=identity)


def test_user_agent_names_the_replica() -> None:
    assert _kube(identity="pod-7").api_client.user_agent == f"{USER_AGENT} (pod-7)"
    assert _kube().api_client.user_agent == USER_AGENT


def test_dry_run_refuses_every_write_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    kube = _kube(dry_run=True)
    api = _Api()
    monkeypatch.setattr(kube, "core", api)
    monkeypatch.setattr(kube, "coord", api)
    for write in (
        lambda: kube.patch_node("n0", {}),
        lambda: kube.evict("ns", "p"),
        lambda: kube.create_event("ns", {}),
        lambda: kube.create_lease("ns", {}),
        lambda: kube.patch_lease("ns", "l", {}),
    ):
        with pytest.raises(DryRunWriteError, match="dry-run: refusing to"):
            write()
    assert api.calls == []
    assert issubclass(DryRunWriteError, PermanentError)  # never retried


def test_reads_return_plain_json_and_errors_are_translated(monkeypatch: pytest.MonkeyPatch) -> None:
    kube = _kube()
    api = _Api(
        {"items": [{"metadata": {"name": "n0"}}]}, None, ApiException(status=404), ApiException(status=503)
    )
    monkeypatch.setattr(kube, "core", api)
    assert kube.list_nodes() == [{"metadata": {"name": "n0"}}]
    assert kube.list_nodes() == []  # an empty body is no items, not a crash
    with pytest.raises(NotFoundError, match="get configmap ns/cm: HTTP 404"):
        kube.get_configmap("ns", "cm")
    with pytest.raises(TemporaryError):
        kube.get_configmap("ns", "cm")
    assert all(kw["_preload_content"] is False for _, _, kw in api.calls)
    assert all(kw["_request_timeout"] == kube.request_timeout for _, _, kw in api.calls)


def test_an_answer_that_is_not_json_is_a_temporary_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy's HTML error page where the API server's JSON was expected: retried like a 5xx (the
    step backs off), not a ValueError past every ``except ControllerError``."""

    class _Html:
        data = b"<html><body>502 Bad Gateway</body></html>"

    kube = _kube()
    monkeypatch.setattr(kube, "core", type("Api", (), {"list_node": lambda self, **kw: _Html()})())
    with pytest.raises(TemporaryError, match="list nodes: the answer is not JSON"):
        kube.list_nodes()


def test_pods_of_a_node_are_filtered_again_client_side(monkeypatch: pytest.MonkeyPatch) -> None:
    kube = _kube()
    listed = {"items": [{"spec": {"nodeName": "n0"}, "n": 1}, {"spec": {"nodeName": "n1"}, "n": 2}, {"n": 3}]}
    api = _Api(listed, listed)
    monkeypatch.setattr(kube, "core", api)
    assert [p["n"] for p in kube.list_pods("n0")] == [1]  # a server that ignored the field selector
    assert api.calls[0][2]["field_selector"] == "spec.nodeName=n0"
    assert [p["n"] for p in kube.list_pods()] == [1, 2, 3]


def test_node_patch_is_a_json_merge_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    kube = _kube()
    api = _Api({"metadata": {"name": "n0"}})
    monkeypatch.setattr(kube, "core", api)
    assert kube.patch_node("n0", {"metadata": {"labels": {"a": None}}}) == {"metadata": {"name": "n0"}}
    method, args, kw = api.calls[0]
    assert (method, args, kw["_content_type"]) == (
        "patch_node",
        ("n0", {"metadata": {"labels": {"a": None}}}),
        MERGE_PATCH,
    )


def test_resource_slices_are_read_page_by_page_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    kube = _kube()
    api = _Api(
        {"items": [{"a": 1}, "junk"], "metadata": {"continue": "t1"}},
        {"items": [{"a": 2}], "metadata": {"continue": ""}},
    )
    monkeypatch.setattr(kube, "resource", api)
    assert kube.list_resource_slices("n0", "gpu.nvidia.com", page=2) == [{"a": 1}, {"a": 2}]
    assert [c[2].get("_continue") for c in api.calls] == [None, "t1"]
    assert api.calls[0][2]["field_selector"] == "spec.nodeName=n0,spec.driver=gpu.nvidia.com"
    endless = _Api(*({"items": [], "metadata": {"continue": "more"}} for _ in range(3)))
    monkeypatch.setattr(kube, "resource", endless)
    with pytest.raises(PermanentError, match="more than 6 slices"):
        kube.list_resource_slices("n0", "gpu.nvidia.com", page=2, max_pages=3)
    assert len(endless.calls) == 3
