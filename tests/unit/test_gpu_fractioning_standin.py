"""The stand-in gpu-fractioning operator's DaemonSets schedule as the fork's do around a driver upgrade."""

from __future__ import annotations

from typing import Any

from standins.operators.fractioning_daemons import UPGRADE_STATE_LABEL, daemonset

CONFIG: dict[str, Any] = {
    "apiVersion": "gpu-fractioning.kai.scheduler/v1alpha1",
    "kind": "GpuFractioningConfig",
    "metadata": {"name": "default", "uid": "u"},
    "spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
}


def terms(body: dict[str, Any]) -> list[Any]:
    affinity = body["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    return affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def test_the_daemons_leave_a_node_the_upgrade_controller_labels() -> None:
    for component in ("mpsd", "fractiond"):
        expressions = [term["matchExpressions"] for term in terms(daemonset(component, "ns", CONFIG, {}))]
        assert expressions == [
            [{"key": UPGRADE_STATE_LABEL, "operator": "DoesNotExist"}],
            [{"key": UPGRADE_STATE_LABEL, "operator": "In", "values": ["upgrade-done"]}],
        ]


def test_the_deploy_client_selector_is_a_knob_absent_by_default() -> None:
    absent = daemonset("mpsd", "ns", CONFIG, {})["spec"]["template"]["spec"]["nodeSelector"]
    present = daemonset("mpsd", "ns", CONFIG, {}, deploy_client=True)["spec"]["template"]["spec"]["nodeSelector"]
    assert absent == {"nvidia.com/gpu.present": "true"}
    assert present == {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.client": "true"}
