"""Violates gpu-pod-require-runtime-class: a Deployment whose pods ask for a GPU without the nvidia RuntimeClass."""

import pulumi_kubernetes as k8s

labels = {"app": "trainer"}
k8s.apps.v1.Deployment(
    "trainer",
    metadata={"name": "trainer"},
    spec={
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "containers": [{"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
            },
        },
    },
)
