"""Golden, fully compliant props for every resource the pack looks at, shaped like engine inputs.

What this project installs comes from the program's own values and manifests, so the golden cases
cannot drift from what the program registers.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from components.config.model import (
    GPU_PROFILES,
    GpuFractioningConfig,
    GpuOperatorConfig,
    KaiConfig,
    SmokeTestConfig,
)
from components.forks.recipes import GPU_FRACTIONING, KAI_SCHEDULER
from components.gpu_cluster.gpu_fractioning import gpu_fractioning_values
from components.gpu_cluster.gpu_operator import gpu_operator_values
from components.gpu_cluster.kai_scheduler import kai_fork_values, kai_lab_values
from components.lab.lab_pods import shared_pod_manifest, whole_gpu_pod_manifest
from components.proofs.smoke import smoke_pod_manifest

TAG = "smshare-44d1d0a-af0544e"
REGISTRY = "registry.example.com/team/kai-fork"
NODE_AGENTS = GPU_FRACTIONING.images

RELEASE = "kubernetes:helm.sh/v3:Release"
CHART_V4 = "kubernetes:helm.sh/v4:Chart"
COMMAND = "command:local:Command"
POD = "kubernetes:core/v1:Pod"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
STATEFUL_SET = "kubernetes:apps/v1:StatefulSet"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
REPLICA_SET = "kubernetes:apps/v1:ReplicaSet"
JOB = "kubernetes:batch/v1:Job"
CRON_JOB = "kubernetes:batch/v1:CronJob"
WORKLOADS = (DEPLOYMENT, STATEFUL_SET, DAEMON_SET, REPLICA_SET, JOB, CRON_JOB)

Props = dict[str, Any]


class Resource(NamedTuple):
    type: str
    name: str
    props: Props


def kai_release() -> Props:
    """The fork's KAI release in NvFractions mode, as this project installs it."""
    values = kai_fork_values(KaiConfig(), KAI_SCHEDULER.repo_base(REGISTRY), TAG, "regcred")
    return {
        "name": "kai-scheduler",
        "chart": "/work/forks/KAI-Scheduler/deployments/kai-scheduler",
        "namespace": "kai-scheduler",
        "values": values,
    }


def fractioning_release() -> Props:
    values = gpu_fractioning_values(GpuFractioningConfig(), GPU_FRACTIONING.repo_base(REGISTRY), TAG, 8, None)
    return {
        "name": "gpu-fractioning",
        "chart": "/work/forks/kai-gpu-fractioning/operator/charts",
        "namespace": "gpu-fractioning",
        "values": values,
    }


def gpu_operator_release() -> Props:
    return {
        "name": "gpu-operator",
        "chart": "gpu-operator",
        "version": "v26.7.1",
        "namespace": "gpu-operator",
        "repositoryOpts": {"repo": "https://charts.example.com/nvidia"},
        "values": gpu_operator_values(GpuOperatorConfig()),
    }


def lab_kai_release() -> Props:
    """The laptop lab: public KAI v0.17.0 with HAMi-core, no fork and no gpu-fractioning release."""
    return {
        "name": "kai-scheduler",
        "chart": "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler",
        "version": "v0.17.0",
        "namespace": "kai-scheduler",
        "values": kai_lab_values(KaiConfig()),
    }


def kai_build() -> Props:
    return {"create": "make build", "environment": KAI_SCHEDULER.build_variables(REGISTRY, TAG, None)}


def fractioning_build() -> Props:
    return {
        "create": "make docker-build docker-push",
        "environment": GPU_FRACTIONING.build_variables(REGISTRY, TAG, None),
    }


def smoke_pod(name: str = "fraction-smoke-a") -> Props:
    return smoke_pod_manifest(name, SmokeTestConfig())


def whole_gpu_pod() -> Props:
    return whole_gpu_pod_manifest(await_ready=True)


def shared_lab_pod() -> Props:
    """The lab's HAMi pod, with the RuntimeClass and non-root context this project's dev stack adds."""
    return shared_pod_manifest(GPU_PROFILES["a100"])


def in_workload(resource_type: str, pod: Props) -> Props:
    """A workload whose pod template is `pod`; the template keeps the pod's labels and annotations."""
    metadata = pod["metadata"]
    template = {
        "metadata": {key: metadata[key] for key in ("labels", "annotations") if key in metadata},
        "spec": pod["spec"],
    }
    selector = {"matchLabels": dict(metadata.get("labels", {}))}
    specs: dict[str, Props] = {
        JOB: {"template": template},
        CRON_JOB: {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}},
    }
    workload_metadata = {key: metadata[key] for key in ("name", "namespace") if key in metadata}
    spec = specs.get(resource_type, {"selector": selector, "template": template})
    return copy.deepcopy({"metadata": workload_metadata, "spec": spec})


def template_of(resource_type: str, workload: Props) -> Props:
    """The pod template inside a workload built by `in_workload`, for mutating it in place."""
    spec: Props = workload["spec"]
    template: Props = spec["jobTemplate"]["spec"]["template"] if resource_type == CRON_JOB else spec["template"]
    return template


def fork_stack() -> list[Resource]:
    """This project's stack: GPU Operator, both forks built and deployed, and the smoke pods."""
    return [
        Resource(RELEASE, "gpu-operator", gpu_operator_release()),
        Resource(COMMAND, "kai-scheduler-build", kai_build()),
        Resource(COMMAND, "kai-gpu-fractioning-build", fractioning_build()),
        Resource(RELEASE, "kai-scheduler", kai_release()),
        Resource(RELEASE, "gpu-fractioning", fractioning_release()),
        Resource(POD, "fraction-smoke-a", smoke_pod("fraction-smoke-a")),
        Resource(POD, "fraction-smoke-b", smoke_pod("fraction-smoke-b")),
    ]


def lab_stack() -> list[Resource]:
    return [
        Resource(RELEASE, "kai-scheduler", lab_kai_release()),
        Resource(POD, "kai-whole-gpu", whole_gpu_pod()),
        Resource(POD, "gpu-sharing-with-isolation", shared_lab_pod()),
    ]


def foreign_stack() -> list[Resource]:
    """Another team's program: an app Deployment, a CPU Job and an unrelated Helm release."""
    web = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "securityContext": {"runAsUser": 0}}]},
    }
    return [
        Resource(DEPLOYMENT, "web", in_workload(DEPLOYMENT, web)),
        Resource(JOB, "migrate", in_workload(JOB, web)),
        Resource(RELEASE, "redis", {"name": "redis", "chart": "oci://registry-1.docker.io/bitnamicharts/redis"}),
        Resource("docker-build:index:Image", "web-image", {"tags": ["registry.example.com/shop/web:v3"]}),
    ]
