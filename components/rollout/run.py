"""The driver rollout as `up` runs it: once the GPU Operator's release carries a new driver, take each
GPU node to it, a few at a time (gpuOperator.rollout): cordon, let fractional jobs finish for the
grace period, delete what is left of them and KAI's reservation pods, delete the old driver pod, wait
until the node shows the new driver, the validator and the node agents Ready, uncordon, prove
fractions there, next.

A node that fails stops the rollout at once, naming the node, what failed and the command to look;
it stays cordoned and the others keep serving. A rerun finishes that node first and never takes a
node already on the new driver again. Decisions are in driver.py; this module reads and acts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pulumi

from components.cluster.checking import CheckProvider
from components.cluster.client import KubeClient
from components.cluster.engine import (
    CheckResource,
    ClusterAccess,
    report_failures_without_traceback,
    show_progress,
)
from components.cluster.facts import is_gpu_node, node_facts
from components.cluster.objects import labels_of, name, qualified
from components.cluster.protocol import Cluster, Conflict, Json
from components.cluster.results import CheckResult, ReportedFailure
from components.cluster.waiting import Clock, Deadline, poll, poll_delays
from components.proofs.smoke import measure_sm_share
from components.rollout.driver import (
    REVISION_LABEL,
    RolloutSpec,
    agents_missing,
    carries_version,
    cordon_patch,
    drain_targets,
    driver_missing,
    driver_trouble,
    fractional_jobs,
    gpu_users,
    in_groups,
    latest_revision,
    live,
    nodes_to_roll,
    taint_patch,
    uncordon_patch,
    untaint_patch,
)
from components.vocabulary.fractioning import AGENT_LABEL, DAEMONS, DAEMONSET_SELECTOR
from components.vocabulary.nvidia import (
    DRIVER_FULL_LABEL,
    DRIVER_MANAGER_CONTAINER,
    DRIVER_POD_SELECTOR,
    VALIDATOR_POD_SELECTOR,
)

report_failures_without_traceback()

# How long the GPU Operator may take to render the driver DaemonSet for a new version after its
# release is upgraded (a reconcile: seconds).
RENDER_TIMEOUT_SECONDS = 300.0
# A taint patch that meets a node changed since it was read is decided anew this many times.
PATCH_ATTEMPTS = 5


def node_delays() -> Iterator[float]:
    """The waits between two looks at a node in the rollout: 0.2 s for the first 30 s (a stand-in
    driver's load, a real mpsd's stop), then never more than a second apart, since each node's wait
    past its step adds up over the cluster (a look is one list of the node's pods and one read of
    the node)."""
    return poll_delays(first=0.2, longest=1.0, steady_for=30.0)


class RolloutStopped(ReportedFailure):
    """A node did not take the new driver: the rollout stopped there."""


def say(line: str) -> None:
    show_progress(f"driver rollout: {line}")


class Rollout:
    def __init__(self, cluster: Cluster, spec: RolloutSpec, clock: Clock, progress: Callable[[str], None]) -> None:
        self.cluster, self.spec, self.clock, self.progress = cluster, spec, clock, progress
        self.look = (
            f"kubectl get nodes -L {DRIVER_FULL_LABEL}; "
            f"kubectl -n {spec.namespace} get pods -l {DRIVER_POD_SELECTOR} -o wide"
        )

    def pods_on(self, node: str) -> list[Json]:
        return self.cluster.list_all_pods(f"spec.nodeName={node}")

    def operator_pods(self, pods: list[Json], selector: str) -> list[Json]:
        """The GPU Operator's pods among `pods` that a `key=value` selector picks."""
        key, value = selector.split("=")
        return [
            p for p in pods if p["metadata"].get("namespace") == self.spec.namespace and labels_of(p).get(key) == value
        ]

    def driver_on(self, pods: list[Json]) -> Json | None:
        return next(iter(live(self.operator_pods(pods, DRIVER_POD_SELECTOR))), None)

    def run(self) -> list[CheckResult]:
        nodes = [n for n in self.cluster.list_nodes() if is_gpu_node(node_facts(n))]
        if not nodes:
            return [CheckResult("driver-rollout", True, "no GPU node: nothing to roll")]
        if not self.cluster.list_daemonsets(self.spec.namespace, DRIVER_POD_SELECTOR):
            # A first install: no node runs an older driver; the GPU Operator's gate waits for this one.
            return [CheckResult("driver-rollout", True, "no driver DaemonSet yet: nothing to roll")]
        revision = self.rendered_revision()
        drivers = self.cluster.list_pods(self.spec.namespace, DRIVER_POD_SELECTOR)
        todo, done = nodes_to_roll(nodes, drivers, revision)
        results = [CheckResult(node, True, f"already on driver {self.spec.driver_version}") for node in done]
        if todo:
            size = self.spec.max_nodes_at_once
            version = self.spec.driver_version
            self.progress(f"{version} to {len(todo)} of {len(nodes)} GPU nodes, {size} at a time: {', '.join(todo)}")
        for group in in_groups(todo, self.spec.max_nodes_at_once):
            results += self.roll(group, revision)
        return results

    def rendered_revision(self) -> str:
        """The driver DaemonSet's newest revision, once the operator has rendered it for the new driver."""
        version = self.spec.driver_version

        def look() -> str | None:
            found = next(iter(self.cluster.list_daemonsets(self.spec.namespace, DRIVER_POD_SELECTOR)), None)
            if found is None or not carries_version(found, version):
                return None
            return latest_revision(found, self.cluster.list_controller_revisions(self.spec.namespace))

        revision = poll(look, lambda found: found is not None, Deadline.after(RENDER_TIMEOUT_SECONDS, self.clock))
        if revision is None:
            raise RolloutStopped(
                f"the GPU Operator has not rendered its driver DaemonSet for driver {version} within "
                f"{RENDER_TIMEOUT_SECONDS:g}s; no node was touched "
                f"(kubectl -n {self.spec.namespace} logs deploy/gpu-operator)"
            )
        return revision

    def roll(self, group: list[str], revision: str) -> list[CheckResult]:
        start = self.clock.now()
        deadline = Deadline.after(self.spec.node_timeout_seconds, self.clock)
        self.patch_nodes(group, lambda node: cordon_patch(node, revision))
        self.progress(f"{', '.join(group)}: cordoned")
        self.wait_for_jobs(group, deadline)
        self.patch_nodes(group, lambda node: taint_patch(node, revision))
        agents = self.agents()
        self.drain(group, agents, deadline)
        for node in group:
            driver = self.driver_on(self.pods_on(node))
            if driver is not None and labels_of(driver).get(REVISION_LABEL) != revision:
                self.cluster.delete_pod(self.spec.namespace, name(driver), wait=False, grace_period_seconds=None)
        self.progress(f"{', '.join(group)}: drained, old driver pods deleted; waiting for the new driver")
        validating = bool(self.cluster.list_daemonsets(self.spec.namespace, VALIDATOR_POD_SELECTOR))
        self.wait_for(
            group,
            deadline,
            lambda node, pods: driver_missing(
                node,
                self.driver_on(pods),
                revision,
                self.spec.driver_version,
                self.operator_pods(pods, VALIDATOR_POD_SELECTOR) if validating else None,
            ),
        )
        self.patch_nodes(group, untaint_patch)
        self.wait_for(group, deadline, lambda node, pods: agents_missing(node, self.agents_on(pods, agents)))
        self.patch_nodes(group, uncordon_patch)
        self.prove(group, revision)
        took = self.clock.now() - start
        self.progress(f"{', '.join(group)}: on driver {self.spec.driver_version} and uncordoned after {took:.1f}s")
        done = f"driver {self.spec.driver_version}, validated, uncordoned after {took:.1f}s"
        return [CheckResult(node, True, done) for node in group]

    def prove(self, group: list[str], revision: str) -> None:
        """Fractions on each node of the group, measured by a deviceQuery pod there; a node that fails is
        cordoned again, so that KAI places no fraction on it, and the rollout stops."""
        if self.spec.proof is None:
            return
        for node in group:
            proved = measure_sm_share(self.cluster, self.spec.proof, node, self.clock, pinned=True)
            if not proved.passed:
                self.patch_nodes([node], lambda found: cordon_patch(found, revision))
                raise RolloutStopped(
                    f"driver rollout stopped at {node}: it runs driver {self.spec.driver_version}, but fractions "
                    f"there failed their proof: {proved.detail}. It is cordoned again; once it is fixed, `pulumi up` "
                    "proves it again and goes on with the other GPU nodes, which keep serving."
                )
            self.progress(f"{node}: fractions proved ({proved.detail})")

    def patch_nodes(self, group: list[str], patch: Callable[[Json], dict[str, Any]]) -> None:
        """Each node patched from what it is now; a node that changed between read and patch is read again."""
        for node in group:
            for attempt in range(PATCH_ATTEMPTS):
                found = self.cluster.read_node(node)
                if found is None:
                    break
                try:
                    self.cluster.patch_node(node, patch(found))
                    break
                except Conflict:
                    if attempt == PATCH_ATTEMPTS - 1:
                        raise RolloutStopped(
                            f"node {node} changed under every one of {PATCH_ATTEMPTS} patches of its taints; "
                            f"another controller keeps rewriting it (kubectl get node {node} -o yaml)"
                        ) from None

    def agents(self) -> list[str]:
        """The node agents gpu-fractioning runs (none where it is not installed)."""
        installed = self.cluster.list_daemonsets(self.spec.agents_namespace, DAEMONSET_SELECTOR)
        found = {labels_of(ds).get(AGENT_LABEL) for ds in installed}
        return [daemon for daemon in DAEMONS if daemon in found]

    def agents_on(self, pods: list[Json], agents: list[str]) -> dict[str, list[Json]]:
        mine = [p for p in pods if p["metadata"].get("namespace") == self.spec.agents_namespace]
        return {daemon: [p for p in mine if labels_of(p).get(AGENT_LABEL) == daemon] for daemon in agents}

    def wait_for_jobs(self, group: list[str], deadline: Deadline) -> None:
        grace = Deadline(self.clock, min(deadline.at, self.clock.now() + self.spec.drain_grace_seconds))
        jobs = poll(
            lambda: [qualified(p) for node in group for p in fractional_jobs(self.pods_on(node))],
            lambda jobs: not jobs,
            grace,
        )
        if jobs:
            self.progress(
                f"{', '.join(group)}: {len(jobs)} fractional pods still running after the grace period: deleting them"
            )

    def drain(self, group: list[str], agents: list[str], deadline: Deadline) -> None:
        """The taint evicts what does not tolerate it; what does and is fractional is deleted. Then waits
        until none of them, and none of the node agents, is left on the node."""
        for node in group:
            for pod in drain_targets(self.pods_on(node)):
                self.cluster.delete_pod(pod["metadata"]["namespace"], name(pod), wait=False, grace_period_seconds=None)

        def left() -> list[str]:
            found = []
            for node in group:
                pods = self.pods_on(node)
                found += [qualified(p) for p in drain_targets(pods)]
                found += [qualified(p) for on_node in self.agents_on(pods, agents).values() for p in on_node]
            return found

        still = poll(left, lambda still: not still, deadline, node_delays())
        if still:
            raise RolloutStopped(
                f"driver rollout stopped at {', '.join(group)}: these pods were deleted or evicted and are still "
                f"there, so the driver was not touched: {', '.join(still)} (kubectl get pod -A -o wide "
                f"--field-selector spec.nodeName={group[0]}). {self.after_stop(group)}"
            )

    def wait_for(self, group: list[str], deadline: Deadline, missing: Callable[[Json, list[Json]], list[str]]) -> None:
        """Until nothing is `missing` on any node of the group; stops at once at a driver pod in trouble."""

        def look() -> dict[str, tuple[str | None, list[str], list[Json]]]:
            found = {}
            for node in group:
                pods = self.pods_on(node)
                driver = self.driver_on(pods)
                current = self.cluster.read_node(node) or {"metadata": {"name": node}}
                found[node] = (driver_trouble(driver) if driver else None, missing(current, pods), pods)
            return found

        found = poll(
            look,
            lambda found: all(not gaps for _, gaps, _ in found.values()) or any(t for t, _, _ in found.values()),
            deadline,
            node_delays(),
        )
        for node, (trouble, gaps, pods) in found.items():
            if trouble:
                raise RolloutStopped(self.failed(node, self.driver_on(pods), trouble, pods, group))
            if gaps:
                raise RolloutStopped(
                    f"driver rollout stopped at {node}: not serving again {self.spec.node_timeout_seconds}s after it "
                    f"was cordoned (gpuOperator.rollout.nodeTimeoutSeconds); waiting for: {'; '.join(gaps)} "
                    f"({self.look}). {self.after_stop(group)}"
                )

    def failed(self, node: str, driver: Json | None, trouble: str, pods: list[Json], group: list[str]) -> str:
        pod = name(driver) if driver is not None else "?"
        what = "the old driver could not be unloaded" if trouble.startswith("Init:") else "the new driver did not start"
        users = gpu_users(pods, self.spec.namespace)
        holding = f"; still using the GPU on {node}: {', '.join(users)}" if users else ""
        container = f" -c {DRIVER_MANAGER_CONTAINER}" if trouble.startswith("Init:") else ""
        return (
            f"driver rollout stopped at {node}: its new driver pod {self.spec.namespace}/{pod} is in {trouble}: "
            f"{what}{holding}. Look: kubectl -n {self.spec.namespace} logs {pod}{container}. {self.after_stop(group)}"
        )

    def after_stop(self, group: list[str]) -> str:
        return (
            f"{', '.join(group)} stay{'s' if len(group) == 1 else ''} cordoned and tainted; the other GPU nodes keep "
            "serving. "
            f"Once it is fixed, `pulumi up` resumes there; nodes already on driver {self.spec.driver_version} are not "
            "taken again."
        )


def roll_driver(
    cluster: Cluster, spec: RolloutSpec, clock: Clock | None = None, progress: Callable[[str], None] = say
) -> list[CheckResult]:
    """Each GPU node's result once all of them run the new driver; raises RolloutStopped at a node that fails."""
    return Rollout(cluster, spec, clock or Clock(), progress).run()


class DriverRolloutProvider(CheckProvider):
    spec_type = RolloutSpec
    kind = "driver rollout"
    report_title = "Driver rollout"

    def verify(self, cluster: KubeClient, spec: RolloutSpec) -> list[CheckResult]:
        return roll_driver(cluster, spec)


class DriverRollout(CheckResource, handler=DriverRolloutProvider):
    """Takes a new driver to the GPU nodes during `up`, after the GPU Operator's release and before its
    gate; runs again when `triggers` (the driver version and the release's revision) change."""

    def __init__(
        self,
        name: str,
        spec: RolloutSpec,
        *,
        access: ClusterAccess,
        triggers: pulumi.Input[Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(name, spec, access, opts, triggers=triggers)
