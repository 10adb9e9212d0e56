"""Recovery after a killed `pulumi up`: which Helm release records are dropped."""

from __future__ import annotations

from tools.recover_interrupted import interrupted_releases

RELEASE = "kubernetes:helm.sh/v3:Release"


def pending(kind: str, resource_type: str, inputs: dict[str, str]) -> dict[str, object]:
    return {"type": kind, "resource": {"type": resource_type, "urn": "urn:x", "inputs": inputs}}


def test_a_release_the_killed_run_was_creating_loses_all_its_records() -> None:
    deployment = {"pending_operations": [pending("creating", RELEASE, {"name": "kai-scheduler", "namespace": "kai"})]}
    assert interrupted_releases(deployment) == [("kai", "kai-scheduler", "owner=helm,name=kai-scheduler")], (
        "the state does not know the release, so the next install must start over"
    )


def test_a_release_the_killed_run_was_upgrading_loses_only_its_stuck_record() -> None:
    deployment = {"pending_operations": [pending("updating", RELEASE, {"name": "gpu-fractioning"})]}
    ((namespace, name, selector),) = interrupted_releases(deployment)
    assert (namespace, name) == ("default", "gpu-fractioning")
    assert selector == "owner=helm,name=gpu-fractioning,status in (pending-install,pending-upgrade,pending-rollback)"


def test_other_pending_resources_need_no_helm_repair() -> None:
    deployment = {
        "pending_operations": [
            pending("creating", "kubernetes:core/v1:Namespace", {"metadata": "x"}),
            pending("creating", "command:local:Command", {}),
        ]
    }
    assert interrupted_releases(deployment) == []
    assert interrupted_releases({}) == []
