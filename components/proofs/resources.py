"""SmokeProof, LabProof, GpusAllocatable and StepGate: dynamic resources that run a proof (or a
wait) during `up` and fail the update naming each check that does not hold.

Each takes one spec object, whose fields are its inputs besides cluster access; the results and a
report are its outputs. They do nothing during preview. The providers are pickled into the state by
module and class name (and loaded from there on refresh and destroy): keep both, or leave an alias.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult
from pydantic import ValidationError

from components.checks.dynamic import (
    ACCESS_KEYS,
    ClusterAccess,
    cluster_props,
    report_failures_without_traceback,
    spec_from_props,
    spec_props,
    with_secret_kubeconfig,
)
from components.checks.kube import KubeClient
from components.checks.lab_proof import AllocatableSpec, LabSpec, prove_lab, wait_for_allocatable
from components.checks.results import CheckResult, format_results, raise_on_failure
from components.checks.smoke_proof import DEVICE_QUERY_POD, SmokeSpec, prove_smoke
from components.checks.step_gates import GateSpec, wait_for_gate

report_failures_without_traceback()

# Inputs that do not change what is proved; everything else re-runs the proof when it changes.
_UNPROVED_KEYS = ACCESS_KEYS | {"results", "report"}


class _ProofProvider(ResourceProvider):
    kind: ClassVar[str] = "proof"
    report_title: ClassVar[str] = "Proof"
    spec_type: ClassVar[type[Any]]

    def prove(self, cluster: KubeClient, spec: Any) -> list[CheckResult]:
        raise NotImplementedError

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        cluster = KubeClient.connect(props.get("kubeconfig"), props.get("context"))
        results = self.prove(cluster, spec_from_props(self.spec_type, props))
        raise_on_failure(self.kind, results)
        return {
            **props,
            "results": [r.to_dict() for r in results],
            "report": format_results(results, self.report_title),
        }

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=uuid.uuid4().hex, outs=self._run(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._run(news))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old, new = self._proved(olds), self._proved(news)
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def _proved(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """What the inputs ask to prove: a spec field added since the last update reads as its
        default, so it re-runs the proof only when it asks for something else."""
        proved = {k: v for k, v in props.items() if k not in _UNPROVED_KEYS}
        try:
            spec = spec_from_props(self.spec_type, props)
        except ValidationError:  # an input still unknown in a preview: compared as it is
            return proved
        return {**proved, **spec_props(spec)}


class SmokeProofProvider(_ProofProvider):
    spec_type = SmokeSpec
    kind = "SmokeProof"

    def prove(self, cluster: KubeClient, spec: SmokeSpec) -> list[CheckResult]:
        return prove_smoke(cluster, spec)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        # The deviceQuery pod is removed after each run; this only clears one an interrupted run left.
        try:
            cluster = KubeClient.connect(props.get("kubeconfig"), props.get("context"))
            cluster.delete_pod(str(props.get("namespace") or "default"), DEVICE_QUERY_POD)
        except Exception as error:  # an unreachable cluster must not block destroy
            pulumi.log.warn(f"SmokeProof: could not check for a leftover {DEVICE_QUERY_POD} pod: {error}")


class LabProofProvider(_ProofProvider):
    spec_type = LabSpec
    kind = "LabProof"

    def prove(self, cluster: KubeClient, spec: LabSpec) -> list[CheckResult]:
        return prove_lab(cluster, spec)


class GpusAllocatableProvider(_ProofProvider):
    spec_type = AllocatableSpec
    kind = "GpusAllocatable"

    def prove(self, cluster: KubeClient, spec: AllocatableSpec) -> list[CheckResult]:
        return wait_for_allocatable(cluster, spec)


class StepGateProvider(_ProofProvider):
    spec_type = GateSpec
    kind = "StepGate"
    report_title = "Checks"

    def prove(self, cluster: KubeClient, spec: GateSpec) -> list[CheckResult]:
        return wait_for_gate(cluster, spec)


class _ProofResource(Resource):
    results: pulumi.Output[list[dict[str, Any]]]
    report: pulumi.Output[str]

    def __init__(
        self,
        provider: _ProofProvider,
        name: str,
        spec: SmokeSpec | LabSpec | AllocatableSpec | GateSpec,
        access: ClusterAccess,
        opts: pulumi.ResourceOptions | None,
        **extra: Any,
    ) -> None:
        # The outputs start empty.
        props = cluster_props(access, **spec_props(spec), **extra, results=None, report=None)
        super().__init__(provider, name, props, with_secret_kubeconfig(opts))


class SmokeProof(_ProofResource, module="kai-gpu-fractions", name="SmokeProof"):
    """Proves the a100 smoke pods' caps are enforced; fails the update naming each failed check.

    Needs a real GPU cluster: it execs into the smoke pods and the mpsd pod, and runs deviceQuery.
    A change of `triggers` (a release's revision) runs it again.
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
        super().__init__(SmokeProofProvider(), name, spec, access, opts, triggers=triggers)


class LabProof(_ProofResource, module="kai-gpu-fractions", name="LabProof"):
    """Proves what the laptop lab can show on fake GPUs, and reports the reservation-pod boundary."""

    def __init__(
        self,
        name: str,
        spec: LabSpec,
        *,
        access: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(LabProofProvider(), name, spec, access, opts, triggers=None)


class GpusAllocatable(_ProofResource, module="kai-gpu-fractions", name="GpusAllocatable"):
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
        super().__init__(GpusAllocatableProvider(), name, spec, access, opts)


class StepGate(_ProofResource, module="kai-gpu-fractions", name="StepGate"):
    """Waits, during `up`, until what the guide verifies after a step holds (components/checks/
    step_gates.py); fails the update, naming what is missing, when it does not in time. Resources
    of the next step depend on it. A change of `triggers` (the release's revision) waits again.
    """

    def __init__(
        self,
        name: str,
        spec: GateSpec,
        *,
        access: ClusterAccess,
        triggers: pulumi.Input[Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(StepGateProvider(), name, spec, access, opts, triggers=triggers)
