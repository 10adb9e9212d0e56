"""tools.verify_destroyed: what a destroy must have removed, read from a stack export."""

from __future__ import annotations

from typing import Any

from tools.verify_destroyed import Expected, expected_gone, leftovers

EXPORT: dict[str, Any] = {
    "deployment": {
        "resources": [
            {"type": "pulumi:pulumi:Stack", "outputs": {}},
            {"type": "pulumi:providers:kubernetes", "outputs": {"kind": "x", "metadata": {"name": "x"}}},
            {
                "type": "kubernetes:core/v1:Namespace",
                "outputs": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kai-scheduler"}},
            },
            {
                "type": "kubernetes:helm.sh/v3:Release",
                "outputs": {"name": "kai-scheduler", "namespace": "kai-scheduler", "status": {}},
            },
            {
                "type": "kubernetes:core/v1:NodePatch",
                "outputs": {
                    "__fieldManager": "pulumi-kubernetes-8440c3ef",
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": "gpu-node-0"},
                },
            },
            {
                "type": "kubernetes:core/v1:Pod",
                "outputs": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}},
            },
            {"type": "pulumi-python:dynamic/kai-gpu-fractions:LabProof", "outputs": {"results": []}},
        ]
    }
}


def test_every_kubernetes_object_release_and_patch_of_the_stack_is_expected_gone() -> None:
    assert [str(e) for e in expected_gone(EXPORT)] == [
        "Namespace kai-scheduler",
        "HelmRelease kai-scheduler/kai-scheduler",
        "Node gpu-node-0 (fields of pulumi-kubernetes-8440c3ef)",
        "Pod default/p",
    ], "providers, the stack and dynamic resources put nothing into the cluster"


def test_objects_still_there_and_fields_a_patch_still_owns_are_leftovers() -> None:
    expected = expected_gone(EXPORT)
    live: dict[str, set[str] | None] = {
        "Namespace": None,
        "HelmRelease": {"helm"},
        "Node": {"kubectl-client-side-apply", "kwok"},
        "Pod": set(),
    }

    def read(item: Expected) -> set[str] | None:
        return live[item.kind]

    assert [item.kind for item in leftovers(expected, read)] == ["HelmRelease", "Pod"], (
        "a node that stays is fine once the patch owns nothing on it, even if others own the same labels"
    )
    live["Node"] = {"kwok", "pulumi-kubernetes-8440c3ef"}
    assert "Node" in [item.kind for item in leftovers(expected, read)]
