"""NvmlMock: fake A100s on the lab node (nvml-mock) and the device plugin that advertises them."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.config.model import LabConfig

DEVICE_PLUGIN_NAME = "nvidia-device-plugin-mock"
MOCK_DRIVER_ROOT = "/var/lib/nvml-mock/driver"

# nvml-mock's image is not published for every commit; the lab builds it from source and
# loads it into kind.
IMAGE_SCRIPT = """set -eu
mkdir -p "$SOURCE_DIR" && cd "$SOURCE_DIR"
git rev-parse --git-dir >/dev/null 2>&1 || git init -q .
git fetch -q "$SOURCE_REPOSITORY" "$SOURCE_COMMIT"
git checkout -q --detach "$SOURCE_COMMIT"
docker build -t "$IMAGE" -f deployments/nvml-mock/Dockerfile . >&2
kind load docker-image "$IMAGE" --name "$KIND_CLUSTER" >&2
printf '%s' "$IMAGE"
"""


def nvml_mock_values(lab: LabConfig) -> dict[str, Any]:
    return {
        "image": {"repository": lab.nvml_mock.image_repository, "tag": lab.nvml_mock.image_tag},
        "gpu": {"profile": lab.gpu_profile},
    }


def device_plugin_manifest(image: str) -> dict[str, Any]:
    """nvml-mock's own device-plugin shape: the plain chart cannot find the mock driver root and
    fails with ERROR_LIBRARY_NOT_FOUND."""
    labels = {"name": DEVICE_PLUGIN_NAME}
    return {
        "metadata": {"name": DEVICE_PLUGIN_NAME, "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"nvidia.com/gpu.present": "true"},
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": "device-plugin",
                            "image": image,
                            "args": [
                                f"--nvidia-driver-root={MOCK_DRIVER_ROOT}",
                                f"--driver-root-ctr-path={MOCK_DRIVER_ROOT}",
                                "--device-discovery-strategy=nvml",
                                "--pass-device-specs=true",
                            ],
                            "securityContext": {"privileged": True},
                            "volumeMounts": [
                                {"name": "nvml-mock", "mountPath": "/var/lib/nvml-mock", "readOnly": True},
                                {"name": "device-plugins", "mountPath": "/var/lib/kubelet/device-plugins"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "nvml-mock", "hostPath": {"path": "/var/lib/nvml-mock"}},
                        {"name": "device-plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
                    ],
                },
            },
        },
    }


class NvmlMock(pulumi.ComponentResource):
    """Builds and loads the nvml-mock image (when asked), installs its chart, then the device plugin.

    Ready means the device plugin DaemonSet rolled out on every GPU node.
    """

    device_plugin: k8s.apps.v1.DaemonSet

    def __init__(self, name: str, lab: LabConfig, workdir: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kai-gpu-fractions:lab:NvmlMock", name, None, opts)
        depends: list[pulumi.Resource] = []
        if lab.nvml_mock.build_image and lab.kind is not None:
            from pulumi_command import local

            mock = lab.nvml_mock
            depends.append(
                local.Command(
                    f"{name}-image",
                    create=IMAGE_SCRIPT,
                    environment={
                        "SOURCE_DIR": f"{workdir}/k8s-test-infra",
                        "SOURCE_REPOSITORY": mock.source_repository,
                        "SOURCE_COMMIT": mock.source_commit,
                        "IMAGE": f"{mock.image_repository}:{mock.image_tag}",
                        "KIND_CLUSTER": lab.kind.name,
                    },
                    triggers=[mock.source_commit, lab.kind.name],
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        release = helm.install(
            self,
            name,
            release_name="nvml-mock",
            namespace=lab.nvml_mock.namespace,
            values=nvml_mock_values(lab),
            source=lab.nvml_mock.chart,
            privileged=True,
            # The chart takes the image by name; kind must hold it before any pod starts.
            depends_on=depends,
        )
        self.device_plugin = k8s.apps.v1.DaemonSet(
            f"{name}-device-plugin",
            **device_plugin_manifest(lab.device_plugin_image),
            # The device plugin finds GPUs only once nvml-mock has written the mock driver root.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[release]),
        )
        self.register_outputs({"device_plugin": self.device_plugin.metadata.name})
