"""SmokeProof, LabProof and GpusAllocatable: dynamic resources that run a proof (or a wait) during
`up` and fail the update naming each check that does not hold.

Each takes one spec object, whose fields are its inputs besides cluster access; the results and a
report are its outputs. They do nothing during preview. The providers are pickled into the state by
module and class name (and loaded from there on refresh and destroy): keep both, or leave an alias
(components/checks/).
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.cluster.checking import CheckProvider
from components.cluster.client import KubeClient
from components.cluster.engine import (
    CheckResource,
    ClusterAccess,
    report_failures_without_traceback,
)
from components.cluster.results import CheckResult
from components.proofs.lab import AllocatableSpec, LabSpec, prove_lab, wait_for_allocatable
from components.proofs.smoke import DEVICE_QUERY_POD, prove_smoke
from components.proofs.smoke_decisions import SmokeSpec

report_failures_without_traceback()


class SmokeProofProvider(CheckProvider):
    spec_type = SmokeSpec
    kind = "SmokeProof"

    def verify(self, cluster: KubeClient, spec: SmokeSpec) -> list[CheckResult]:
        return prove_smoke(cluster, spec)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        # The deviceQuery pod is removed after each run; this only clears one an interrupted run left.
        try:
            cluster = KubeClient.connect(props.get("kubeconfig"), props.get("context"))
            cluster.delete_pod(str(props.get("namespace") or "default"), DEVICE_QUERY_POD)
        except Exception as error:  # an unreachable cluster must not block destroy
            pulumi.log.warn(f"SmokeProof: could not check for a leftover {DEVICE_QUERY_POD} pod: {error}")


class LabProofProvider(CheckProvider):
    spec_type = LabSpec
    kind = "LabProof"

    def verify(self, cluster: KubeClient, spec: LabSpec) -> list[CheckResult]:
        return prove_lab(cluster, spec)


class GpusAllocatableProvider(CheckProvider):
    spec_type = AllocatableSpec
    kind = "GpusAllocatable"

    def verify(self, cluster: KubeClient, spec: AllocatableSpec) -> list[CheckResult]:
        return wait_for_allocatable(cluster, spec)


class SmokeProof(CheckResource, handler=SmokeProofProvider):
    """Proves the a100 smoke pods' caps are enforced; fails the update naming each failed check.

    Needs a real GPU cluster: it execs into the smoke pods and the mpsd pod, and runs deviceQuery.
    A change of `triggers` (a GPU-side version or a release's revision) runs it again.
    """

    def __init__(
        self,
        name: str,
        spec: SmokeSpec,
        *,
        access: ClusterAccess,
        triggers: pulumi.Input[Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(name, spec, access, opts, triggers=triggers)


class LabProof(CheckResource, handler=LabProofProvider):
    """Proves what the laptop lab can show on fake GPUs, and reports the reservation-pod boundary."""

    def __init__(
        self,
        name: str,
        spec: LabSpec,
        *,
        access: ClusterAccess,
        triggers: pulumi.Input[Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(name, spec, access, opts, triggers=triggers)


class GpusAllocatable(CheckResource, handler=GpusAllocatableProvider):
    """Waits until every lab GPU node advertises the profile's count of `nvidia.com/gpu`; fails the
    update, naming the nodes, when the device plugin does not get there in time."""

    def __init__(
        self,
        name: str,
        spec: AllocatableSpec,
        *,
        access: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(name, spec, access, opts)


def proved_on(proof: SmokeProof | LabProof) -> pulumi.Output[Any]:
    """The versions the proof last held on: its outputs change only when it runs and holds."""
    return proof.triggers.apply(lambda triggers: triggers["versions"])
