"""Golden, fully compliant props for every resource the pack looks at, shaped like engine inputs."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

TAG = "smshare-44d1d0a-af0544e"
REGISTRY = "registry.example.com/team/kai-fork"
NODE_AGENTS = ("operator", "mpsd", "fractiond", "metricsd")

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
    return {
        "name": "kai-scheduler",
        "chart": "/work/forks/KAI-Scheduler/deployments/kai-scheduler",
        "namespace": "kai-scheduler",
        "values": {
            "global": {
                "gpuSharingMode": "NvFractions",
                "registry": f"{REGISTRY}/kai-scheduler",
                "tag": TAG,
                "nvFractions": {"set": False},
                "imagePullSecrets": [{"name": "regcred"}],
            },
            "binder": {"runtimeClassName": "nvidia"},
            "kaiConfig": {"render": True},
            "kaiConfigDeployer": {"enabled": False},
        },
    }


def fractioning_release() -> Props:
    return {
        "name": "gpu-fractioning",
        "chart": "/work/forks/kai-gpu-fractioning/operator/charts",
        "namespace": "gpu-fractioning",
        "values": {
            "images": {
                agent: {"repository": f"{REGISTRY}/kai-gpu-fractioning/{agent}", "tag": TAG} for agent in NODE_AGENTS
            },
            "gpuOperator": {"minimumVersion": "v26.7.1"},
            "mpsDaemon": {"resources": {"limits": {"memory": "1Gi"}}},
        },
    }


def gpu_operator_release() -> Props:
    return {
        "name": "gpu-operator",
        "chart": "gpu-operator",
        "version": "v26.7.1",
        "namespace": "gpu-operator",
        "repositoryOpts": {"repo": "https://charts.example.com/nvidia"},
        "values": {"driver": {"enabled": True, "version": "615.71.09"}},
    }


def lab_kai_release() -> Props:
    """The laptop lab: public KAI v0.17.0 with HAMi-core, no fork and no gpu-fractioning release."""
    return {
        "name": "kai-scheduler",
        "chart": "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler",
        "version": "v0.17.0",
        "namespace": "kai-scheduler",
        "values": {
            "global": {"gpuSharing": True},
            "binder": {"plugins": {"hamicore": {"enabled": True}}, "runtimeClassName": "nvidia"},
        },
    }


def kai_build() -> Props:
    return {
        "create": "make build",
        "environment": {
            "DOCKER_REPO_BASE": f"{REGISTRY}/kai-scheduler",
            "DOCKER_TAG": TAG,
            "DOCKER_BUILDX_ADDITIONAL_ARGS": "--push",
        },
    }


def fractioning_build() -> Props:
    return {
        "create": "make docker-build docker-push",
        "environment": {"DOCKER_REPO_BASE": f"{REGISTRY}/kai-gpu-fractioning", "VERSION": TAG},
    }


def smoke_pod(name: str = "fraction-smoke-a") -> Props:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kai.scheduler/queue": "default-queue", "app": "nvfractions-smoke"},
            "annotations": {
                "gpu-fraction": "0.5",
                "nvidia.com/container.main.gpu-compute.mode": "sm-sharing",
            },
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "runtimeClassName": "nvidia",
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
            "containers": [
                {
                    "name": "main",
                    "image": "nvidia/cuda:13.3.1-base-ubuntu24.04",
                    "command": ["sleep", "3600"],
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }


def whole_gpu_pod() -> Props:
    return {
        "metadata": {"name": "kai-whole-gpu", "labels": {"kai.scheduler/queue": "default-queue"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "runtimeClassName": "nvidia",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "3600"],
                    "resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}},
                }
            ],
        },
    }


def shared_lab_pod() -> Props:
    """The lab's HAMi pod, with the RuntimeClass and non-root context this project's dev stack adds."""
    return {
        "metadata": {
            "name": "gpu-sharing-with-isolation",
            "labels": {"kai.scheduler/queue": "default-queue"},
            "annotations": {"gpu-memory": "20480"},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "runtimeClassName": "nvidia",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
            "containers": [
                {
                    "name": "main",
                    "image": "nvidia/cuda:13.3.1-base-ubuntu24.04",
                    "env": [{"name": "CUDA_DISABLE_CONTROL", "value": "true"}],
                    "securityContext": {"allowPrivilegeEscalation": False},
                }
            ],
        },
    }


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
