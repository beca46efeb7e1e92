"""Fixtures for the controller scenarios: an API emulator over real HTTP, a fake MIG manager,
controllers running in threads with tiny timeouts, and invariant checks that read the emulator's
request history (never the controller's own bookkeeping)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import gc
import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from emulation import (
    CONFIGMAPS,
    DEVICE_PLUGIN_CONFIGMAP,
    GPU_COUNT,
    NODES,
    PODS,
    Call,
    EmulatorThread,
    FakeDevicePlugin,
    FakeDraDriver,
    FakeMigManager,
    assignment_configmap,
    device_plugin_configmap,
    mig_parted_configmap,
    node_object,
    pod_object,
    revision_of,
)
from kubernetes import client

from controller import logs
from controller import state as st
from controller.kube import USER_AGENT
from controller.metrics import Metrics
from controller.runner import Controller, utcnow, wait_for
from controller.settings import (
    ApiSettings,
    ApplySettings,
    DrainSettings,
    FailureSettings,
    LeaderSettings,
    LoopSettings,
    Settings,
)

# For the whole test process, not only these scenarios (issue 27). CPython's default first-generation
# GC threshold (700) runs the cyclic collector thousands of times while pytest collects: assertion
# rewriting builds an AST per test module, and each pass walks a heap that grows with every import;
# that was ~3 s CPU per process, and each of the default run's 4 workers collects the whole suite.
# 50,000 keeps the collector running (reference counting still frees everything outside a cycle at
# once) and changes no test. It sits here because tests/controller sorts first, so this is the first
# conftest pytest imports: a tests/conftest.py would be a second rootless ``conftest`` module (mypy
# refuses the duplicate), and a conftest.py at the root would make ``conftest`` first-party for ruff's
# import sorting in every scenario file. --collect-only: 9.55 -> ~6 s user+sys per process.
gc.set_threshold(50_000, 20, 100)

CONFIGS: dict[str, dict[str, Any]] = {
    "all-1g.10gb": {
        "devices": [{"migEnabled": True, "profiles": {"1g.10gb": 7}}] * 8,
        "migStrategy": "mixed",
        "devicePluginConfig": "mixed",
        "resources": {"nvidia.com/mig-1g.10gb": 56},
    },
    "all-3g.40gb": {
        "devices": [{"migEnabled": True, "profiles": {"3g.40gb": 2}}] * 8,
        "migStrategy": "mixed",
        "devicePluginConfig": "mixed",
        "resources": {"nvidia.com/mig-3g.40gb": 16},
    },
    "all-balanced": {
        "devices": [{"migEnabled": True, "profiles": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}] * 8,
        "migStrategy": "mixed",
        "devicePluginConfig": "mixed",
        "resources": {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8},
    },
    # Whole GPUs on a MIG-capable node: the MIG manager still applies it (switches MIG off).
    "all-disabled-8gpu-whole-gpus": {
        "devices": [{"migEnabled": False, "profiles": {}}] * 8,
        "migStrategy": "none",
        "devicePluginConfig": "migc-whole-gpus",
        "resources": {"nvidia.com/gpu": 8},
    },
    # What the renderer writes for a 4-GPU pool without MIG (e.g. L40S), whole or time-sliced.
    "all-disabled-4gpu-whole-gpus": {
        "devices": [{"migEnabled": False, "profiles": {}}] * 4,
        "migStrategy": "none",
        "devicePluginConfig": "migc-whole-gpus",
        "resources": {"nvidia.com/gpu": 4},
    },
    "all-disabled-4gpu-time-slicing-4": {
        "devices": [{"migEnabled": False, "profiles": {}}] * 4,
        "migStrategy": "none",
        "devicePluginConfig": "migc-time-slicing-4",
        "resources": {"nvidia.com/gpu": 16},
    },
}
RESOURCES = {name: c["resources"] for name, c in CONFIGS.items()}
# The device-plugin configs those name, as migc renders them (compiler/render/manifests.py
# _device_plugin_body): the body the device plugin's config-manager selects by node label.
DEVICE_PLUGIN_CONFIGS: dict[str, dict[str, Any]] = {
    "mixed": {"version": "v1", "flags": {"migStrategy": "mixed"}},
    "migc-whole-gpus": {"version": "v1", "flags": {"migStrategy": "none"}},
    "migc-time-slicing-4": {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    },
}
# Where the compiler renders the mig-parted ConfigMap (compiler/render/manifests.py MIG_CONFIGMAP).
MIG_PARTED = ("gpu-operator", "migc-mig-parted-config")

FAST = Settings(
    api=ApiSettings(retry_backoff=0.02, retry_backoff_max=0.2, request_timeout=5.0),
    drain=DrainSettings(
        grace_timeout=0.0, eviction_timeout=5.0, eviction_backoff=0.02, eviction_backoff_max=0.1
    ),
    apply=ApplySettings(configmap_sync_delay=0.0, apply_timeout=3.0, verify_timeout=2.0),
    failures=FailureSettings(backoff=0.05, max_attempts=2),
    loop=LoopSettings(poll_interval=0.02, resync_interval=0.5, watch_timeout=5.0),
    leader=LeaderSettings(lease_duration=0.6, identity="ctl-a"),
)


def tuned(settings: Settings, **overrides: Any) -> Settings:
    """``settings`` with some fields replaced: ``group__field=value`` for a field of a group (the
    spelling factory_boy uses for a sub-factory's field), ``field=value`` for a top-level one
    (``dry_run``). A misspelt group or field raises, as :func:`dataclasses.replace` does."""
    top: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for key, value in overrides.items():
        group, sep, name = key.partition("__")
        if sep:
            groups.setdefault(group, {})[name] = value
        else:
            top[key] = value
    nested = {g: dataclasses.replace(getattr(settings, g), **fields) for g, fields in groups.items()}
    return dataclasses.replace(settings, **top, **nested)


def assignment(
    nodes: Mapping[str, str],
    *,
    max_unavailable: int = 2,
    pool: str = "a100",
    gpu_model: str = "A100-SXM4-80GB",
    windows: list[dict[str, Any]] | None = None,
    idle_surge: int | None = None,
) -> dict[str, Any]:
    """One named pool; its ``idleSurge`` only where ``idle_surge`` is given (absent: as compiled
    before the field, no surge)."""
    doc: dict[str, Any] = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "NodeAssignment",
        "cluster": "test",
        "revision": "",
        "migConfigMap": {"namespace": MIG_PARTED[0], "name": MIG_PARTED[1]},
        "configs": {k: v for k, v in CONFIGS.items() if k in set(nodes.values())},
        "pools": [
            {
                "name": pool,
                "gpuModel": gpu_model,
                "maxUnavailable": max_unavailable,
                "maintenanceWindows": windows or [],
                "nodes": [{"name": n, "config": c} for n, c in sorted(nodes.items())],
            }
        ],
    }
    if idle_surge is not None:
        doc["pools"][0]["idleSurge"] = idle_surge
    doc["revision"] = revision_of(doc)
    return doc


class Clock:
    """Wall time by default; a test may pin it to exercise maintenance windows."""

    def __init__(self) -> None:
        self.fixed: dt.datetime | None = None

    def __call__(self) -> dt.datetime:
        return self.fixed if self.fixed is not None else utcnow()


class Killed(BaseException):
    """Raised at the next API request of a killed controller: SIGKILL at a request boundary.

    A BaseException so that no ``except Exception`` in the controller can swallow it or write
    anything "on the way out" -- a killed process gets no chance to clean up either.
    """


class KillableApiClient(client.ApiClient):
    """The official client, plus a kill switch checked before every request (tests only)."""

    def __init__(self, configuration: client.Configuration) -> None:
        super().__init__(configuration)
        self.killed = threading.Event()

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        if self.killed.is_set():
            raise Killed(str(args[:2]))
        return super().call_api(*args, **kwargs)


@dataclasses.dataclass
class Running:
    controller: Controller
    thread: threading.Thread
    api: KillableApiClient


def _run_until_killed(ctl: Controller) -> None:
    with contextlib.suppress(Killed):
        ctl.run()


class Cluster:
    def __init__(self) -> None:
        self.mig = FakeMigManager(resources=RESOURCES, configmap=MIG_PARTED)
        self.device_plugin = FakeDevicePlugin()
        self.dra = FakeDraDriver()
        self.emu = EmulatorThread(self.mig, self.device_plugin, self.dra).start()
        self.clock = Clock()
        self.running: list[Running] = []
        self.set_mig_parted(CONFIGS)
        self.set_device_plugin_configs(DEVICE_PLUGIN_CONFIGS)

    # --- fleet ---------------------------------------------------------------------------------
    def add_nodes(self, names: list[str], config: str, *, mig_capable: str | None = "true") -> None:
        """Nodes carrying ``config``; ``mig_capable`` is GFD's nvidia.com/mig.capable (None: unset)."""
        gpus = len(CONFIGS[config]["devices"])
        for n in names:
            labels = {GPU_COUNT: str(gpus)}
            if mig_capable is not None:
                labels[st.MIG_CAPABLE] = mig_capable
            obj = node_object(n, labels, RESOURCES[config])
            if mig_capable == "true":
                labels.update({st.MIG_CONFIG: config, st.MIG_STATE: "success"})
                labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"
            else:
                # No MIG manager there: the config migc applied is in its own annotation.
                labels.update({st.DEVICE_PLUGIN_CONFIG: CONFIGS[config]["devicePluginConfig"]})
                obj["metadata"]["annotations"] = {st.APPLIED: config}
            obj["metadata"]["labels"] = labels
            self.emu.upsert(NODES, None, n, obj)

    def add_pod(self, name: str, node: str, **kw: Any) -> None:
        ns = kw.get("namespace", "default")
        self.emu.upsert(PODS, ns, name, pod_object(name, node, **kw))

    def set_mig_parted(self, configs: Mapping[str, Mapping[str, Any]]) -> None:
        """The GPU Operator's mig-parted ConfigMap, defining exactly ``configs``."""
        ns, name = MIG_PARTED
        self.emu.upsert(CONFIGMAPS, ns, name, mig_parted_configmap(configs, ns, name))

    def set_device_plugin_configs(self, configs: Mapping[str, Mapping[str, Any]]) -> None:
        """The device-plugin ConfigMap (one key per device-plugin config name)."""
        ns, name = DEVICE_PLUGIN_CONFIGMAP
        self.emu.upsert(CONFIGMAPS, ns, name, device_plugin_configmap(configs, ns, name))

    def set_assignment(
        self, doc: Mapping[str, Any], *, paused: bool = False, mig_parted: bool = True
    ) -> None:
        """Sync ``doc``; with ``mig_parted`` (as a GitOps sync of the rendered output would) the
        mig-parted ConfigMap first gains the configs the document names."""
        if mig_parted:
            self.set_mig_parted({**CONFIGS, **doc["configs"]})
        self.emu.upsert(
            CONFIGMAPS, "migc-system", "migc-assignment", assignment_configmap(doc, paused=paused)
        )

    def node(self, name: str) -> dict[str, Any]:
        obj = self.emu.get(NODES, None, name)
        assert obj is not None
        return obj

    def label(self, node: str, labels: Mapping[str, str | None]) -> None:
        """Relabel a node through the API (as kubectl or the operator would), so that the
        emulated MIG manager and device plugin see the change."""
        cfg = client.Configuration()
        cfg.host = self.emu.url
        client.CoreV1Api(client.ApiClient(cfg)).patch_node(
            node, {"metadata": {"labels": dict(labels)}}, _content_type="application/merge-patch+json"
        )

    def annotate(self, node: str, annotations: Mapping[str, str | None]) -> None:
        self.emu.patch(NODES, None, node, {"metadata": {"annotations": dict(annotations)}})

    # --- controllers ---------------------------------------------------------------------------
    def start(self, settings: Settings = FAST, *, http: bool = False, **overrides: Any) -> Controller:
        cfg = client.Configuration()
        cfg.host = self.emu.url
        s = tuned(settings, **overrides)
        api = KillableApiClient(cfg)
        ctl = Controller(
            s,
            api,
            clock=self.clock,
            metrics=Metrics(),
            http_address="127.0.0.1" if http else None,
            http_port=0 if http else None,
        )
        t = threading.Thread(
            target=_run_until_killed, args=(ctl,), name=f"controller-{s.leader.identity}", daemon=True
        )
        t.start()
        self.running.append(Running(ctl, t, api))
        return ctl

    def kill(self, ctl: Controller) -> None:
        """Die at the next API request without any cleanup, like a SIGKILL between two requests."""
        for r in self.running:
            if r.controller is ctl:
                r.api.killed.set()
        ctl.stop()

    def stop_all(self) -> None:
        for r in self.running:
            r.controller.stop()
        for r in self.running:
            r.thread.join(10)
            assert not r.thread.is_alive(), "controller did not stop"
        self.running.clear()

    # --- observations --------------------------------------------------------------------------
    def phases(self) -> dict[str, str]:
        return {
            n: (o["metadata"].get("annotations") or {}).get(st.PHASE, "Idle")
            for n, o in self.emu.nodes().items()
        }

    def wait(self, cond: Callable[[], bool], timeout: float = 20.0) -> None:
        assert wait_for(cond, timeout, 0.02), "condition not reached in time"

    def settle(self, ctl: Controller, passes: int = 8) -> None:
        """Let a controller make a few more full passes (to show that something does NOT happen)."""
        seen = ctl.passes
        self.wait(lambda: ctl.passes >= seen + passes)

    def converged(self, targets: Mapping[str, str]) -> bool:
        nodes = self.emu.nodes()
        for name, cfg in targets.items():
            o = nodes[name]
            ann = o["metadata"].get("annotations") or {}
            if (
                not st.NodeView.from_obj(o).converged_to(cfg)  # label and state success
                or ann.get(st.PHASE, "Idle") != "Idle"
                or o["spec"].get("unschedulable")
                or any(t["key"] == st.TAINT_KEY for t in o["spec"].get("taints") or [])
                or st.CORDONED in ann
            ):
                return False
        return True

    def controller_calls(self) -> list[Call]:
        return [c for c in self.emu.calls() if c.user_agent.startswith(USER_AGENT)]


def writes(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.verb in ("create", "patch", "update", "delete")]


def max_cordoned(calls: list[Call], initially: set[str] | None = None) -> int:
    """Replay successful node PATCHes in order; the most nodes cordoned by migc at one time."""
    cordoned = set(initially or ())
    peak = len(cordoned)
    for c in calls:
        if c.resource != "nodes" or c.verb != "patch" or c.refused:
            continue
        ann = ((c.body or {}).get("metadata") or {}).get("annotations") or {}
        if st.CORDONED in ann:  # "true" when migc cordons, null when it uncordons
            if ann[st.CORDONED]:
                cordoned.add(str(c.name))
            else:
                cordoned.discard(str(c.name))
        peak = max(peak, len(cordoned))
    return peak


def assert_within_budget(
    calls: list[Call],
    limit: int,
    initially_cordoned: set[str],
    converged: set[str],
    pod_node: Mapping[str, str],
    *,
    idle_surge: int = 0,
) -> None:
    """Replay the controller's requests in order: it cordons a node only while at most ``limit``
    nodes are out (cordoned, or acted on), evicts from / relabels only cordoned nodes, at most
    ``limit`` at once, never a node of ``converged``, and never writes a mig.config value
    outside CONFIGS (the mig-parted ConfigMap). ``pod_node``: "namespace/pod" -> its node.

    ``idle_surge`` (the pool's idleSurge, 0 where the document has none): beyond ``limit``, up to
    that many more nodes may be out and acted on, but only nodes that run no GPU pod: a node where
    a pod of ``pod_node`` runs is cordoned only while at most ``limit`` are out, and at most
    ``limit`` nodes that had GPU pods when cordoned (or were evicted from) are out at once. A pod
    of ``pod_node`` counts as running until its eviction: a scenario that ends one otherwise does
    so only after its node was cordoned. With 0 the checks are those above (and what they imply)."""
    cordoned = set(initially_cordoned)
    acting: set[str] = set()
    running = dict(pod_node)  # GPU pods not evicted yet -> their node
    busy: set[str] = set()  # out (cordoned or acted on) with GPU pods on them when cordoned
    for c in calls:
        if c.refused or c.verb not in ("patch", "create"):
            continue
        if c.resource == "pods" and c.subresource == "eviction":
            node = pod_node[f"{c.namespace}/{c.name}"]
            running.pop(f"{c.namespace}/{c.name}", None)
            assert node not in converged, f"evicted from {node}, which carries its assigned config"
            assert node in cordoned, f"evicted from {node}, which is not cordoned"
            acting.add(node)
            busy.add(node)
            assert len(acting) <= limit + idle_surge, (
                f"acting on {sorted(acting)} at once (maxUnavailable {limit}, idleSurge {idle_surge})"
            )
            assert len(busy) <= limit, f"{sorted(busy)} with GPU pods out at once (maxUnavailable {limit})"
        if c.resource != "nodes" or c.verb != "patch":
            continue
        node = str(c.name)
        body = c.body or {}
        spec = body.get("spec") or {}
        labels = (body.get("metadata") or {}).get("labels") or {}
        ann = (body.get("metadata") or {}).get("annotations") or {}
        if spec.get("unschedulable") is True and node not in cordoned:
            cordoned.add(node)
            out = cordoned | acting
            if node in running.values():
                busy.add(node)
                assert len(out) <= limit, f"cordoned {node}, which runs GPU pods: {sorted(out)} out"
            assert len(out) <= limit + idle_surge, f"cordoned {node}: {sorted(out)} out"
        if spec.get("unschedulable") is False:
            cordoned.discard(node)
            acting.discard(node)
            busy.discard(node)
        if st.MIG_CONFIG in labels:
            assert labels[st.MIG_CONFIG] in CONFIGS, f"label outside the ConfigMap: {c}"
            assert node not in converged, f"relabelled {node}, which carries its assigned config"
            assert node in cordoned, f"relabelled {node}, which is not cordoned"
            acting.add(node)
            assert len(acting) <= limit + idle_surge, (
                f"acting on {sorted(acting)} at once (maxUnavailable {limit}, idleSurge {idle_surge})"
            )
        if ann.get(st.PHASE) in ("Idle", "Done"):
            acting.discard(node)
            busy.discard(node)


def assert_cordons_are_marked(calls: list[Call]) -> None:
    """Every write that cordons a node also records the migc phase and the cordon annotation,
    in the same request, and never adds a taint; every uncordon clears the annotation."""
    for c in calls:
        spec = (c.body or {}).get("spec") or {} if c.resource == "nodes" and c.verb == "patch" else {}
        ann = ((c.body or {}).get("metadata") or {}).get("annotations") or {}
        assert not any(t.get("key") == st.TAINT_KEY for t in spec.get("taints") or []), f"taint added: {c}"
        if spec.get("unschedulable") is True:
            assert ann.get(st.PHASE) == "Cordoned", f"cordon without a phase annotation: {c}"
            assert ann.get(st.CORDONED) == "true", f"cordon without the cordon annotation: {c}"
        if spec.get("unschedulable") is False:
            assert st.CORDONED in ann and ann[st.CORDONED] is None, f"uncordon keeps the annotation: {c}"


def assert_mig_config_never_removed(calls: list[Call]) -> None:
    """No controller write leaves a node without a nvidia.com/mig.config value (the GPU
    Operator's labeler would put all-disabled there)."""
    for c in calls:
        if c.resource == "nodes" and c.verb == "patch":
            labels = ((c.body or {}).get("metadata") or {}).get("labels") or {}
            assert not (st.MIG_CONFIG in labels and labels[st.MIG_CONFIG] is None), f"label removed: {c}"


def assert_only_gpu_pods_evicted(calls: list[Call], gpu_pods: set[str]) -> set[str]:
    evicted = {
        f"{c.namespace}/{c.name}"
        for c in calls
        if c.resource == "pods" and c.subresource == "eviction" and c.verb == "create"
    }
    assert evicted <= gpu_pods, f"non-GPU or DaemonSet pods evicted: {sorted(evicted - gpu_pods)}"
    assert not [c for c in calls if c.resource == "pods" and c.verb == "delete"], "pods deleted, not evicted"
    return evicted


DEPLOY = Path(__file__).resolve().parents[2] / "controller" / "deploy"


def deploy_objects() -> list[dict[str, Any]]:
    """Every object of the controller's deploy manifests: what ``controller/deploy/kustomization.yaml``
    lists, then its optional ServiceMonitor component, in that order."""
    docs: list[dict[str, Any]] = []
    for folder in (DEPLOY, DEPLOY / "servicemonitor"):
        listed = yaml.safe_load((folder / "kustomization.yaml").read_text(encoding="utf-8"))["resources"]
        for name in listed:
            docs.extend(d for d in yaml.safe_load_all((folder / name).read_text(encoding="utf-8")) if d)
    return docs


def granted_rbac(kind: str | None = None) -> set[tuple[str, str, str, str]]:
    """(group, resource, subresource, verb) the deploy manifests' ClusterRole and Role (or ``kind``) grant."""
    out = set()
    for obj in deploy_objects():
        if obj["kind"] not in ((kind,) if kind else ("ClusterRole", "Role")):
            continue
        for rule in obj["rules"]:
            for group, res, verb in itertools.product(rule["apiGroups"], rule["resources"], rule["verbs"]):
                resource, _, sub = res.partition("/")
                out.add((group, resource, sub, verb))
    return out


@dataclasses.dataclass(frozen=True)
class Rule:
    """One PolicyRule of a role bound to the controller's ServiceAccount; ``namespace`` None: cluster-wide."""

    namespace: str | None
    groups: frozenset[str]
    resources: frozenset[str]  # "pods" or "pods/eviction"
    verbs: frozenset[str]
    names: frozenset[str]  # resourceNames; empty: any name


def bound_rules() -> list[Rule]:
    """The rules of every role a binding in the deploy manifests grants the Deployment's ServiceAccount.

    A ClusterRoleBinding grants its ClusterRole everywhere; a RoleBinding grants its Role only in the
    binding's namespace (Kubernetes RBAC, https://kubernetes.io/docs/reference/access-authn-authz/rbac/).
    """
    objects = deploy_objects()
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    account_ns = deployment["metadata"]["namespace"]
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects}
    rules: list[Rule] = []
    for binding in objects:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == account and s.get("namespace") == account_ns
            for s in binding["subjects"]
        ):
            continue
        scope = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        role = roles[(ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"])]
        for r in role["rules"]:
            rules.append(
                Rule(
                    scope,
                    frozenset(r["apiGroups"]),
                    frozenset(r["resources"]),
                    frozenset(r["verbs"]),
                    frozenset(r.get("resourceNames", ())),
                )
            )
    return rules


def authorized(call: Call, rules: list[Rule]) -> bool:
    """Whether the RBAC authorizer would allow ``call`` under ``rules``, as the Kubernetes docs define it
    (https://kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources): resourceNames
    cannot restrict ``create`` of a top-level resource (the name is not known at authorization time),
    and a name-restricted ``list``/``watch`` is allowed only with a ``metadata.name=<name>`` field
    selector naming an allowed object."""
    resource = f"{call.resource}/{call.subresource}" if call.subresource else call.resource
    name = call.name
    if call.verb in ("list", "watch"):
        selector = call.params.get("fieldSelector", "")
        name = selector.removeprefix("metadata.name=") if selector.startswith("metadata.name=") else None
        if name is not None and "," in name:
            name = None
    for rule in rules:
        if rule.namespace is not None and call.namespace != rule.namespace:
            continue
        if call.group not in rule.groups or resource not in rule.resources or call.verb not in rule.verbs:
            continue
        if rule.names:
            if call.verb == "create" and not call.subresource:
                continue
            if name not in rule.names:
                continue
        return True
    return False


def rbac_tuples(calls: list[Call]) -> set[tuple[str, str, str, str]]:
    return {(c.group, c.resource, c.subresource or "", c.verb) for c in calls}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A fresh emulated cluster. On teardown, every request the controllers made in this scenario must
    be one the deploy RBAC grants (checked per scenario, so it holds whatever order tests run in)."""
    c = Cluster()
    try:
        yield c
        c.stop_all()
        rules = bound_rules()
        denied = [call for call in c.controller_calls() if not authorized(call, rules)]
        assert not denied, f"controller calls the deploy RBAC would refuse: {denied}"
    finally:
        c.stop_all()
        c.emu.stop()


@pytest.fixture(autouse=True)
def _migc_logger_restored() -> Iterator[None]:
    """``logs.setup`` (which ``cli.main`` and ``demo.main`` run in-process) gives the "migc" logger its
    own handler, a level (the demo's: ERROR) and ``propagate=False`` for the whole process: a later
    test in the same worker then captured none of the controller's records (``caplog``), so a test
    asserting on a log line failed or passed by xdist's test order. Restored after every test."""
    logger = logging.getLogger(logs.LOGGER_NAME)
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate
