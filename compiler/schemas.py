"""JSON Schemas (draft 2020-12) of the policy language, one per kind, plus the editor schema.

The schemas are built here, in one place, so shared definitions (names, durations, quotas) are
written once; ``schema/*.schema.json`` are generated from this module (``python -m
compiler.schemas --write``) for editors (``yaml-language-server`` modelines) and a test keeps
them identical. Every field has a ``description``: it is the hover text users see.

Names, durations and percentages carry their patterns in ``$defs``; the validator recognises
those patterns to give a specific code (MIGC109 names, MIGC114 durations) instead of a generic one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

API_VERSION = "migc.dev/v1alpha1"
HUMAN_KINDS = ("Fleet", "Tenant", "Workload", "PartitionPolicy")  # what people write; messages list these
# ObservedDemand: machine-owned recommender state (migc recommend) kept beside the human files
KINDS = (*HUMAN_KINDS, "ObservedDemand")
SCHEMA_FILES = {
    "Fleet": "fleet.schema.json",
    "Tenant": "tenant.schema.json",
    "Workload": "workload.schema.json",
    "PartitionPolicy": "partitionpolicy.schema.json",
    "ObservedDemand": "observeddemand.schema.json",
}
POLICY_FILE = "policy.schema.json"
# No "$id" in the files: editors then resolve the editor schema's relative "$ref"s against the file's
# own location (schema/fleet.schema.json next to it) instead of trying to download an $id URL.
# Python code that needs absolute URIs registers the files under this base.
BASE_URI = "https://migc.dev/schema/"

# Patterns are ECMA-262 (JSON Schema's dialect), where "$" is the end of the string. Python's re also
# lets "$" match before a final newline; migc's validator reads "$" as the true end
# (compiler.validate.common.ecma_anchors), so "c1\n" is not a name.
DNS_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DURATION_PATTERN = "^([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?$"
PERCENT_PATTERN = "^[0-9]{1,3}%$"
TIME_OF_DAY_PATTERN = "^([01][0-9]|2[0-3]):[0-5][0-9]$"
NODE_NAME_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_KEY_PATTERN = "^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
LABEL_VALUE_PATTERN = "^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$"
PROFILE_PATTERN = "^[1-8]g\\.[0-9]+gb(\\+me)?$"
HAMI_MEMORY_PATTERN = "^[1-9][0-9]{0,6}(Mi|Gi|%)$"
TARGET_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


_LABEL_KEY = {"type": "string", "maxLength": 317, "pattern": LABEL_KEY_PATTERN}
_LABEL_VALUE = {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_PATTERN}


def _s(description: str, **schema: Any) -> dict[str, Any]:
    return {"description": description, **schema}


def _set_of(description: str, ref: str) -> dict[str, Any]:
    """A non-empty array of distinct values, each a ``#/$defs/<ref>``."""
    return _s(description, type="array", items={"$ref": f"#/$defs/{ref}"}, minItems=1, uniqueItems=True)


def _common_defs() -> dict[str, Any]:
    return {
        "dnsLabel": _s(
            "A DNS-1123 label: at most 63 lower-case letters, digits and '-', starting and ending "
            "with a letter or digit. Used as Kubernetes object name and as a path under output/.",
            type="string",
            minLength=1,
            maxLength=63,
            pattern=DNS_LABEL_PATTERN,
        ),
        "duration": _s(
            "A duration such as 30s, 10m, 1h30m or 2d (units d, h, m, s, in that order).",
            type="string",
            minLength=2,
            pattern=DURATION_PATTERN,
        ),
        "profileName": _s(
            "A MIG GPU-instance profile as nvidia-smi and mig-parted name it, e.g. 1g.10gb, 3g.40gb, "
            "7g.141gb; '+me' variants carry the media engines (1g.10gb+me).",
            type="string",
            pattern=PROFILE_PATTERN,
        ),
        "metadata": _s(
            "Object metadata.",
            type="object",
            additionalProperties=False,
            required=["name"],
            properties={
                "name": _s("Name of the object, unique per kind.", **{"$ref": "#/$defs/dnsLabel"}),
                "labels": _s(
                    "Free-form labels, copied to nothing; for humans and tooling.",
                    type="object",
                    additionalProperties={"type": "string"},
                ),
                "annotations": _s(
                    "Free-form annotations, copied to nothing; for humans and tooling.",
                    type="object",
                    additionalProperties={"type": "string"},
                ),
            },
        ),
        "quota": _s(
            "Amounts per resource. Every field is optional; unset means no amount of that resource.",
            type="object",
            additionalProperties=False,
            properties={
                "profiles": _s(
                    "MIG instances per profile, e.g. {1g.10gb: 4, 3g.40gb: 1}.",
                    type="object",
                    propertyNames={"$ref": "#/$defs/profileName"},
                    additionalProperties={"type": "integer", "minimum": 0},
                ),
                "gpus": _s("Whole (MIG-disabled) GPUs.", type="integer", minimum=0),
                "gpuMemoryGB": _s(
                    "GPU memory in GB, a normalised unit across profiles and models.",
                    type="number",
                    minimum=0,
                ),
                "computeSlices": _s(
                    "Compute slices (the 'g' of a profile: 1g.10gb = 1, a whole 7-slice GPU = 7), a "
                    "normalised compute unit.",
                    type="integer",
                    minimum=0,
                ),
                "hami": _s(
                    "Shares on HAMi pools (ResourceQuota on HAMi's resource names).",
                    type="object",
                    additionalProperties=False,
                    properties={
                        "vgpus": _s("vGPUs (nvidia.com/gpu on HAMi pools): pods' GPU shares.", type="integer",
                                    minimum=0),
                        "memory": _s("GPU memory (nvidia.com/gpumem), e.g. 96Gi or 40960Mi.", type="string",
                                     pattern="^[1-9][0-9]{0,6}(Mi|Gi)$"),
                        "cores": _s("GPU cores in percent of one GPU (nvidia.com/gpucores), e.g. 250.",
                                    type="integer", minimum=0),
                    },
                ),
            },
        ),
    }


def _kind_schema(kind: str, title: str, description: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": description,
        "type": "object",
        "additionalProperties": False,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": _s(f"Policy language version; always {API_VERSION}.", const=API_VERSION),
            "kind": _s(f"Object kind; always {kind} in this schema.", const=kind),
            "metadata": {"$ref": "#/$defs/metadata"},
            "spec": spec,
        },
        "$defs": _common_defs(),
    }


def _hami_settings() -> dict[str, Any]:
    # Field meanings follow HAMi v2.10.0 pkg/device/nvidia/device.go (NodeDefaultConfig, DevicePluginConfigs)
    return _s(
        "HAMi per-node settings of a sharing: hami pool (rendered into HAMi's device-plugin nodeconfig).",
        type="object",
        additionalProperties=False,
        properties={
            "splitCount": _s("devicesplitcount: most pods (vGPUs) one GPU holds. Default 10.",
                             type="integer", minimum=1, maximum=128),
            "memoryScaling": _s("devicememoryscaling: factor on each GPU's memory HAMi hands out; above 1 "
                                "oversubscribes memory (MIGC173). Default 1.", type="number",
                                exclusiveMinimum=0, maximum=16),
            "coreScaling": _s("devicecorescaling: factor on each GPU's 100% cores. Default 1.", type="number",
                              exclusiveMinimum=0, maximum=16),
            "operatingMode": _s("operatingmode: hami-core (CUDA interception, any GPU) or mig (HAMi "
                                "creates MIG instances itself; MIG-capable models only). Default hami-core.",
                                enum=["hami-core", "mig"]),
            "nodePolicy": _s("hami.io/node-scheduler-policy for the pool's pods. Default binpack.",
                             enum=["binpack", "spread"]),
            "gpuPolicy": _s("hami.io/gpu-scheduler-policy for the pool's pods. Default spread.",
                            enum=["binpack", "spread"]),
        },
    )


def _fleet() -> dict[str, Any]:
    window = _s(
        "A weekly window in which the controller may take nodes of the pool out of service.",
        type="object",
        additionalProperties=False,
        required=["start", "end"],
        properties={
            "days": _s(
                "Days of the week the window opens; empty or unset means every day.",
                type="array",
                items={"enum": list(DAYS)},
                uniqueItems=True,
            ),
            "start": _s("Opening time, HH:MM (24 h).", type="string", pattern=TIME_OF_DAY_PATTERN),
            "end": _s(
                "Closing time, HH:MM (24 h); an end before the start wraps past midnight.",
                type="string",
                pattern=TIME_OF_DAY_PATTERN,
            ),
            "timezone": _s("IANA time zone of start and end, e.g. UTC or Europe/Berlin.", type="string",
                           minLength=1, default="UTC"),
        },
    )
    nodes = _s(
        "The pool's nodes: an explicit list of node names, or a label selector plus the node count.",
        type="object",
        additionalProperties=False,
        properties={
            "names": _set_of("Node names (as `kubectl get nodes` shows them).", "nodeName"),
            "selector": _s(
                "Label selector that picks the pool's nodes.",
                type="object",
                additionalProperties=False,
                required=["matchLabels"],
                properties={
                    "matchLabels": _s(
                        "Labels every node of the pool carries (Kubernetes label syntax: they end up in "
                        "node selectors).",
                        type="object",
                        minProperties=1,
                        propertyNames=_LABEL_KEY,
                        additionalProperties=_LABEL_VALUE,
                    )
                },
            ),
            "count": _s("How many nodes the selector matches (used to size layouts).", type="integer",
                        minimum=1),
        },
        oneOf=[
            {"required": ["names"], "not": {"anyOf": [{"required": ["selector"]}, {"required": ["count"]}]}},
            {"required": ["selector", "count"], "not": {"required": ["names"]}},
        ],
    )
    pool = _s(
        "A set of identical GPU nodes.",
        type="object",
        additionalProperties=False,
        required=["name", "gpuProduct", "gpusPerNode", "nodes"],
        properties={
            "name": _s("Pool name, unique in its cluster.", **{"$ref": "#/$defs/dnsLabel"}),
            "gpuProduct": _s(
                "GPU model as the nvidia.com/gpu.product node label shows it (NVIDIA-A100-SXM4-80GB, "
                "NVIDIA-H100-80GB-HBM3, NVIDIA-H200, NVIDIA-L40S) or a catalog model key.",
                type="string",
                minLength=1,
            ),
            "gpusPerNode": _s("GPUs in each node of the pool.", type="integer", minimum=1, maximum=16),
            "nodes": nodes,
            "maxUnavailable": _s(
                "Most nodes the controller may reconfigure at once: a node count or a percentage of "
                "the pool (\"25%\", rounded down, at least one node). Default 1.",
                oneOf=[
                    {"type": "integer", "minimum": 1},
                    {"type": "string", "pattern": PERCENT_PATTERN},
                ],
            ),
            "idleSurge": _s(
                "Nodes running no GPU pod that the controller may reconfigure beyond maxUnavailable: their "
                "re-carve evicts nothing, so a node that drains or waits Failed does not hold an idle "
                "node's re-carve for a pending pod. A node count; default 0 (every reconfiguration "
                "within maxUnavailable). Busy nodes never use it.",
                type="integer",
                minimum=0,
                maximum=10000,
            ),
            "maintenanceWindows": _s(
                "When the controller may reconfigure nodes; unset means any time.",
                type="array",
                items=window,
            ),
            "reserve": _s(
                "Capacity kept MIG-disabled and unallocated by demand (debugging, emergencies).",
                type="object",
                additionalProperties=False,
                properties={
                    "wholeGpus": _s("Whole GPUs kept free across the pool.", type="integer", minimum=0),
                    "wholeNodes": _s("Whole nodes kept free.", type="integer", minimum=0),
                },
            ),
            "partitioning": _s(
                "mig: migc chooses MIG layouts for the pool's GPUs; none: GPUs stay whole (the "
                "default for GPUs without MIG).",
                enum=["mig", "none"],
            ),
            "sharing": _s(
                "How whole GPUs of a non-MIG pool are shared between pods (device-plugin sharing).",
                type="object",
                additionalProperties=False,
                required=["mode"],
                properties={
                    "mode": _s("none, time-slicing, mps (never with MIG), or hami: HAMi's device plugin "
                               "shares each GPU by memory and cores (hami.* below).",
                               enum=["none", "time-slicing", "mps", "hami"]),
                    "replicas": _s("Pods per GPU when shared.", type="integer", minimum=2, maximum=64),
                    "hami": _hami_settings(),
                },
                # replicas is what makes sharing mean anything; no silent default
                **{
                    "if": {"properties": {"mode": {"enum": ["time-slicing", "mps"]}}, "required": ["mode"]},
                    "then": {"required": ["replicas"]},
                },
            ),
            "allocation": _s(
                "How pods get the pool's GPUs: device-plugin (default: the NVIDIA device plugin's "
                "nvidia.com/mig-<profile> and nvidia.com/gpu resources) or dra (Kubernetes Dynamic "
                "Resource Allocation, resource.k8s.io/v1, through NVIDIA's DRA driver; Kubernetes >= 1.34). "
                "See docs/dra.md.",
                enum=["device-plugin", "dra"],
            ),
            "dra": _s(
                "DRA settings of an allocation: dra pool.",
                type="object",
                additionalProperties=False,
                properties={
                    "mig": _s(
                        "static (default): migc solves the layouts and the MIG manager applies them; the "
                        "DRA driver advertises the instances. dynamic: the driver's DynamicMIG feature "
                        "creates an instance when a claim is prepared; migc renders no layout.",
                        enum=["static", "dynamic"],
                    ),
                    "migModeEnabled": _s(
                        "The GPUs already have MIG mode on (set out of band). Required for dynamic on "
                        "Ampere (A100, A30): the driver cannot toggle MIG mode there without a GPU reset.",
                        type="boolean",
                    ),
                },
            ),
            "labels": _s(
                "Extra node labels migc may rely on for this pool (informational).",
                type="object",
                propertyNames=_LABEL_KEY,
                additionalProperties=_LABEL_VALUE,
            ),
        },
    )
    cluster = _s(
        "One Kubernetes cluster; rendered into output/<cluster>/.",
        type="object",
        additionalProperties=False,
        required=["name", "nodePools"],
        properties={
            "name": _s("Cluster name, unique in the fleet; also the output folder.",
                       **{"$ref": "#/$defs/dnsLabel"}),
            "kubernetesVersion": _s("Target Kubernetes minor version, e.g. \"1.31\".", type="string",
                                    pattern="^1\\.[0-9]{1,2}$"),
            "gpuOperatorNamespace": _s("Namespace of the NVIDIA GPU Operator.",
                                       **{"$ref": "#/$defs/dnsLabel"}),
            "nodePools": _s("The cluster's GPU node pools.", type="array", items=pool, minItems=1),
        },
    )
    spec = _s(
        "The GPU fleet: clusters, their GPU node pools, prices.",
        type="object",
        additionalProperties=False,
        required=["clusters"],
        properties={
            "clusters": _s("Clusters of the fleet.", type="array", items=cluster, minItems=1),
            "pricing": _s(
                "Price in $ per GPU-hour, keyed by gpu.product or catalog model; used by plans.",
                type="object",
                additionalProperties={"type": "number", "minimum": 0},
            ),
        },
    )
    schema = _kind_schema("Fleet", "migc Fleet", "The GPU fleet (exactly one per policy set).", spec)
    schema["$defs"]["nodeName"] = _s(
        "A Kubernetes node name (DNS-1123 subdomain).",
        type="string",
        minLength=1,
        maxLength=253,
        pattern=NODE_NAME_PATTERN,
    )
    return schema


def _tenant() -> dict[str, Any]:
    spec = _s(
        "A team that owns namespaces and gets guaranteed and burst GPU capacity.",
        type="object",
        additionalProperties=False,
        required=["namespaces"],
        properties={
            "namespaces": _set_of(
                "Namespaces of the tenant; each belongs to exactly one tenant.",
                "dnsLabel",
            ),
            "createNamespaces": _s("Render Namespace objects (false: they exist already).",
                                   type="boolean", default=True),
            "priorityClass": _s(
                "Priority tier of the tenant's workloads (a PartitionPolicy priorityTiers name; "
                "default tiers critical, high, low). Default low.",
                **{"$ref": "#/$defs/dnsLabel"},
            ),
            "guaranteed": _s("Capacity the solver must provide (ResourceQuota requests).",
                             **{"$ref": "#/$defs/quota"}),
            "burst": _s("Upper limit the tenant may use when capacity is free (ResourceQuota limits).",
                        **{"$ref": "#/$defs/quota"}),
            "rewriteGpuRequests": _s(
                "Pods of the tenant that ask nvidia.com/gpu: 1 with a migc.dev/profile-preference "
                "annotation (\"1g.10gb,2g.20gb\") or a migc.dev/gpu-memory-gb annotation are rewritten at "
                "admission to the first preferred, else the smallest fitting, MIG profile the tenant's quota "
                "names on device-plugin pools (a MutatingAdmissionPolicy; Kubernetes >= 1.34; no "
                "availability check). See docs/dra.md.",
                type="boolean",
            ),
        },
    )
    return _kind_schema("Tenant", "migc Tenant", "A tenant: namespaces, priority, quotas.", spec)


def _spread() -> dict[str, Any]:
    share = [
        {"type": "integer", "minimum": 1},
        {"type": "string", "pattern": PERCENT_PATTERN},
    ]
    return _s(
        "How the served replicas are spread (hard constraints of the solver, like Kubernetes "
        "topologySpreadConstraints with whenUnsatisfiable: DoNotSchedule): over at least minNodes "
        "nodes, at most maxPerNode per node, at most maxPerDomain per value of the node label "
        "topologyKey. MIG-instance and single-GPU workloads only.",
        type="object",
        additionalProperties=False,
        minProperties=1,
        properties={
            "minNodes": _s("Serve the replicas on at least this many nodes (every replica on its own "
                           "node when fewer are served).", type="integer", minimum=1, maximum=5000),
            "maxPerNode": _s("Most replicas on one node: a count, or a percentage of the replicas "
                             "served (\"50%\", rounded down).", oneOf=share),
            "topologyKey": _s("Node label whose values are the failure domains, e.g. "
                              "topology.kubernetes.io/zone (a pool's nodes carry the labels of its "
                              "selector and its labels).", **_LABEL_KEY),
            "maxPerDomain": _s("Most replicas in one domain of topologyKey: a count, or a percentage of "
                               "the replicas served (rounded down).", oneOf=share),
        },
        dependentRequired={"topologyKey": ["maxPerDomain"], "maxPerDomain": ["topologyKey"]},
    )


def _workload() -> dict[str, Any]:
    # Each oneOf branch only states which keys make a form; the field constraints live in
    # "properties" so a wrong value is reported at the field (e.g. "profiles must be an array"),
    # never as an opaque "not valid under any of the given schemas".
    need = _s(
        "What one replica needs, in exactly one form: profile, profiles (preference list), "
        "gpuMemoryGB and/or computeSlices (the smallest fitting profile is derived per GPU model), "
        "gpus (whole GPUs on one node), or hami (a memory/cores share on a HAMi pool).",
        type="object",
        additionalProperties=False,
        properties={
            "profile": _s("One exact MIG profile.", **{"$ref": "#/$defs/profileName"}),
            "profiles": _set_of("MIG profiles in preference order (first = most preferred).", "profileName"),
            "gpuMemoryGB": _s("GPU memory per replica in GB.", type="number", exclusiveMinimum=0,
                              maximum=1024),
            "computeSlices": _s("Compute slices per replica (1..7).", type="integer", minimum=1, maximum=8),
            "gpus": _s("Whole GPUs per replica, all on one node.", type="integer", minimum=1, maximum=16),
            "hami": _s(
                "A HAMi share of one GPU per replica (sharing: hami pools only).",
                type="object",
                additionalProperties=False,
                required=["memory"],
                properties={
                    "memory": _s("GPU memory: MiB (12288Mi), GiB (12Gi) or percent of the GPU (25%).",
                                 type="string", pattern=HAMI_MEMORY_PATTERN),
                    "cores": _s("GPU cores in percent of one GPU (0-100); unset: no core limit (0).",
                                type="integer", minimum=0, maximum=100),
                    "distinctGpus": _s("Place every replica on a different GPU (anti-affinity per GPU).",
                                       type="boolean", default=False),
                },
            ),
        },
        oneOf=[
            {"required": ["profile"]},
            {"required": ["profiles"]},
            {"anyOf": [{"required": ["gpuMemoryGB"]}, {"required": ["computeSlices"]}]},
            {"required": ["gpus"]},
            {"required": ["hami"]},
        ],
    )
    spec = _s(
        "Demand: a workload of a tenant and what each replica needs.",
        type="object",
        additionalProperties=False,
        required=["tenant", "replicas", "need"],
        properties={
            "tenant": _s("Owning tenant (a Tenant's metadata.name).", **{"$ref": "#/$defs/dnsLabel"}),
            "cluster": _s("Cluster it runs in; required when the fleet has several clusters.",
                          **{"$ref": "#/$defs/dnsLabel"}),
            "pools": _set_of(
                "Restrict placement to these pools of the cluster; unset = any pool that can serve it.",
                "dnsLabel",
            ),
            "replicas": _s("Number of replicas (pods) to provision for.", type="integer", minimum=0,
                           maximum=100000),
            "need": need,
            "spread": _spread(),
            "isolation": _s(
                "hardware: a MIG instance; shared: a time-sliced/MPS/HAMi share of a whole GPU; "
                "exclusive: whole GPUs. Default: exclusive for need.gpus, shared for need.hami, else "
                "hardware.",
                enum=["hardware", "shared", "exclusive"],
            ),
            "priorityClass": _s("Priority tier; defaults to the tenant's.", **{"$ref": "#/$defs/dnsLabel"}),
            "target": _s(
                "The object that runs the workload's pods; migc renders a kustomize patch for it under "
                "<cluster>/patches/ that sets the resources the solution resolved, the priority class "
                "and, with --with kueue, the queue label.",
                type="object",
                additionalProperties=False,
                required=["apiVersion", "kind", "name"],
                properties={
                    "apiVersion": _s("API version of the target, e.g. apps/v1 or batch/v1.", type="string",
                                     pattern="^([a-z0-9.-]+/)?v[0-9]+((alpha|beta)[0-9]+)?$"),
                    "kind": _s("Kind of the target (an object with a pod template).",
                               enum=list(TARGET_KINDS)),
                    "name": _s("Name of the target.", type="string", minLength=1, maxLength=253,
                               pattern=NODE_NAME_PATTERN),
                    "namespace": _s("Namespace of the target (one of the tenant's); default: the tenant's "
                                    "only namespace.", **{"$ref": "#/$defs/dnsLabel"}),
                    "container": _s("Container that gets the GPU resources (strategic-merge patch); unset: "
                                    "the first container (JSON 6902 patch; its resources.limits must exist).",
                                    **{"$ref": "#/$defs/dnsLabel"}),
                },
            ),
        },
    )
    return _kind_schema("Workload", "migc Workload", "Demand of one workload.", spec)


def _partition_policy() -> dict[str, Any]:
    rule = _s(
        "When pending demand matches `when`, prefer layouts that maximise `prefer.maximize`.",
        type="object",
        additionalProperties=False,
        required=["name", "when", "prefer"],
        properties={
            "name": _s("Rule name, unique.", **{"$ref": "#/$defs/dnsLabel"}),
            "when": _s(
                "Condition on pending GPU pods.",
                type="object",
                additionalProperties=False,
                minProperties=1,
                properties={
                    "pendingPodsGreaterThan": _s("More than this many pods are pending.", type="integer",
                                                 minimum=0),
                    "maxRequestedMemoryGBBelow": _s("Each pending pod asks for less GPU memory than this.",
                                                    type="number", exclusiveMinimum=0),
                    "profile": _s("Only pods asking for this profile count.",
                                  **{"$ref": "#/$defs/profileName"}),
                },
            ),
            "prefer": _s(
                "Layout preference while the condition holds.",
                type="object",
                additionalProperties=False,
                required=["maximize"],
                properties={
                    "maximize": _s("Maximise the number of instances of this profile.",
                                   **{"$ref": "#/$defs/profileName"}),
                },
            ),
            "pools": _set_of("Pools whose GPUs the rule's extra instances must land on: `migc recommend` "
                             "grows only a Workload that cannot be placed elsewhere (MIGC181, MIGC428); "
                             "unset = the first Workload asking for the profile, on any pool.", "dnsLabel"),
        },
    )
    tier = _s(
        "A priority tier, rendered as PriorityClass migc-<name>.",
        type="object",
        additionalProperties=False,
        required=["name", "value"],
        properties={
            "name": _s("Tier name.", **{"$ref": "#/$defs/dnsLabel"}),
            "value": _s("PriorityClass value; higher is served first.", type="integer", minimum=0,
                        maximum=1000000000),
            "description": _s("What the tier is for.", type="string"),
            "spread": {
                **_spread(),
                "description": "Default spread of the tier's MIG-instance and single-GPU workloads that "
                "set none (each workload's own replicas; see Workload spec.spread).",
            },
        },
    )
    spec = _s(
        "How and when partitions may change.",
        type="object",
        additionalProperties=False,
        properties={
            "mode": _s("static (default): layouts change only when people edit the policy; "
                       "`migc recommend` proposes nothing (MIGC422). dynamic: `migc recommend`, run on a "
                       "schedule, edits Workload replicas from observed demand when every gate passes "
                       "(threshold, stabilization window, minDwell, backoff, dailyChangeBudget); the edit is "
                       "an ordinary policy change, compiled and reviewed like any other. Nothing changes the "
                       "cluster on its own.",
                       enum=["static", "dynamic"]),
            "interval": _s(
                "How often `migc recommend` is scheduled to run in dynamic mode (default 15m): a state file "
                "older than three intervals (at least the stabilization window) no longer proves that demand "
                "persisted, and `migc simulate` steps at this interval.", **{"$ref": "#/$defs/duration"}
            ),
            "reconfigurationThreshold": _s(
                "Gain in percent a new layout must bring before a change is proposed (default 20).",
                type="number", minimum=0, maximum=100),
            "stabilizationWindow": _s("Demand must persist this long before it counts (default 10m).",
                                      **{"$ref": "#/$defs/duration"}),
            "scaleDownWindow": _s(
                "Capacity is given back only down to the most a (tenant, profile) ran and waited for at "
                "any sample of this window (default 24h; Kubernetes HPA's scale-down stabilization window): "
                "demand that comes back within it finds its capacity still there. Shorter than "
                "stabilizationWindow it has no effect (MIGC182).", **{"$ref": "#/$defs/duration"}),
            "minDwell": _s("Minimum time a layout stays before it may change again (default 1h).",
                           **{"$ref": "#/$defs/duration"}),
            "backoff": _s(
                "Exponential backoff after a failed reconfiguration.",
                type="object",
                additionalProperties=False,
                properties={
                    "initial": _s("First wait (default 5m).", **{"$ref": "#/$defs/duration"}),
                    "max": _s("Longest wait (default 2h).", **{"$ref": "#/$defs/duration"}),
                    "factor": _s("Multiplier per failure (default 2).", type="number", minimum=1, maximum=10),
                },
            ),
            "dailyChangeBudget": _s("Node reconfigurations allowed per day per cluster; 0 = unlimited.",
                                    type="integer", minimum=0),
            "unmetDemand": _s("Whether demand the solver cannot place is a warning or an error.",
                              enum=["warning", "error"]),
            "allowMediaExtensions": _s(
                "Allow +me profiles in quotas and rules without a workload naming them (default false).",
                type="boolean"),
            "objective": _s(
                "Order of the solver's goals after guarantees and served demand: fewest GPUs, least "
                "disruption of deployed nodes, workloads' preferred profiles. Goals left out follow in "
                "the default order [disruption, gpus, preference].",
                type="array", items={"enum": ["gpus", "disruption", "preference"]}, uniqueItems=True,
                maxItems=3),
            "priorityTiers": _s("Priority tiers (default critical, high, low).", type="array", items=tier,
                                minItems=1),
            "rules": _s("Layout preference rules.", type="array", items=rule),
        },
    )
    return _kind_schema("PartitionPolicy", "migc PartitionPolicy",
                        "Partitioning policy (at most one per policy set).", spec)


TIMESTAMP_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
# tenant/profile: a DNS label, then a MIG profile or "gpu" (whole GPUs)
HISTORY_KEY_PATTERN = DNS_LABEL_PATTERN[:-1] + "/(" + PROFILE_PATTERN[1:-1] + "|gpu)$"


def _observed_demand() -> dict[str, Any]:
    ts = {"type": "string", "pattern": TIMESTAMP_PATTERN}
    spec = _s(
        "The recommender's memory between runs. Written by `migc recommend`, never by hand; losing or "
        "breaking it only means no change is proposed until the demand has been stable again.",
        type="object",
        additionalProperties=False,
        required=["updated"],
        properties={
            "updated": _s("When `migc recommend` last evaluated (UTC, RFC 3339).", **ts),
            "history": _s(
                "Demand samples over the stabilization window, oldest first: per `tenant/profile`, the "
                "running and pending instances one run observed (keys with none are left out). Kept: the "
                "sample in force at the window's start and every later one, at most one per half interval "
                "and at most 100 (docs/recommend.md).",
                type="array",
                maxItems=100,
                items={
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["at", "demand"],
                    "properties": {
                        "at": _s("When the sample was observed.", **ts),
                        "demand": _s(
                            "`tenant/profile` → [running, pending] instances.",
                            type="object",
                            propertyNames={"pattern": HISTORY_KEY_PATTERN},
                            additionalProperties={"type": "array", "minItems": 2, "maxItems": 2,
                                                  "items": {"type": "integer", "minimum": 0}},
                        ),
                    },
                },
            ),
            "lastChange": _s("When a change was last proposed.", **ts),
            "changes": _s(
                "Node changes proposed within the last day, or within the policy's minDwell when that "
                "is longer (the dailyChangeBudget counts the day; minDwell runs from a node's last change).",
                type="array",
                maxItems=10000,
                items={
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["node", "at"],
                    "properties": {
                        "node": _s("Node name.", type="string", maxLength=253),
                        "at": _s("When its change was proposed.", **ts),
                    },
                },
            ),
            "failures": _s("Consecutive failed or rejected changes (backoff grows with it).",
                           type="integer", minimum=0),
            "lastFailure": _s("When the last failure or rejection was seen.", **ts),
        },
    )
    return _kind_schema("ObservedDemand", "migc ObservedDemand",
                        "Machine-owned recommender state kept beside the policy files.", spec)


def kind_schemas() -> dict[str, dict[str, Any]]:
    """Fresh copies of the per-kind schemas, keyed by kind."""
    return {
        "Fleet": _fleet(),
        "Tenant": _tenant(),
        "Workload": _workload(),
        "PartitionPolicy": _partition_policy(),
        "ObservedDemand": _observed_demand(),
    }


def policy_schema() -> dict[str, Any]:
    """The editor schema: any policy document, dispatched on ``kind`` (if/then acts as a discriminator)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "migc policy document",
        "description": "Any document of a migc policy set: Fleet, Tenant, Workload, PartitionPolicy or "
        "ObservedDemand.",
        "type": "object",
        "required": ["apiVersion", "kind"],
        "properties": {
            "apiVersion": _s(f"Policy language version; always {API_VERSION}.", const=API_VERSION),
            "kind": _s("Object kind.", enum=list(KINDS)),
        },
        "allOf": [
            {
                "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                "then": {"$ref": SCHEMA_FILES[kind]},
            }
            for kind in KINDS
        ],
    }


def all_schema_files() -> dict[str, dict[str, Any]]:
    """File name → schema, for every schema file (``compiler/data/schema/``, ``schema/``) this module owns."""
    files = {SCHEMA_FILES[k]: s for k, s in kind_schemas().items()}
    files[POLICY_FILE] = policy_schema()
    return files


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def main(argv: list[str]) -> int:
    """``python -m compiler.schemas --write [DIR]`` regenerates the policy-kind schema files.

    Without DIR it writes both copies in the source tree: the bundled one the package reads
    (``compiler/data/schema/``) and the published one (``schema/`` at the repository root).
    """
    if not argv or argv[0] != "--write":
        print("usage: python -m compiler.schemas --write [DIR]", file=sys.stderr)
        return 2
    here = Path(__file__).resolve().parent
    outs = [Path(argv[1])] if len(argv) > 1 else [here / "data" / "schema", here.parent / "schema"]
    for out in outs:
        for name, schema in sorted(all_schema_files().items()):
            (out / name).write_text(dumps(schema), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
