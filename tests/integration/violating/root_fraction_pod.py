"""Violates gpu-pod-require-non-root-fractions: a half-GPU pod that runs as root."""

import pulumi_kubernetes as k8s

k8s.core.v1.Pod(
    "root-fraction",
    metadata={
        "name": "root-fraction",
        "labels": {"kai.scheduler/queue": "default-queue"},
        "annotations": {"gpu-fraction": "0.5"},
    },
    spec={
        "schedulerName": "kai-scheduler",
        "runtimeClassName": "nvidia",
        "securityContext": {"runAsUser": 0},
        "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}],
    },
)
