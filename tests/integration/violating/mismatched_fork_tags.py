"""Violates kai-fork-require-paired-image-tags: the node agents deploy a different tag than KAI."""

import pulumi_kubernetes as k8s

REGISTRY = "registry.example.com/team/kai-fork"
k8s.helm.v3.Release(
    "kai",
    name="kai-scheduler",
    chart="charts/kai-scheduler",
    namespace="default",
    values={
        "global": {"gpuSharingMode": "NvFractions", "registry": f"{REGISTRY}/kai-scheduler", "tag": "smshare-a"},
        "binder": {"runtimeClassName": "nvidia"},
    },
)
k8s.helm.v3.Release(
    "agents",
    name="gpu-fractioning",
    chart="charts/gpu-fractioning",
    namespace="default",
    values={
        "images": {
            name: {"repository": f"{REGISTRY}/kai-gpu-fractioning/{name}", "tag": "smshare-b"}
            for name in ("operator", "mpsd", "fractiond", "metricsd")
        }
    },
)
