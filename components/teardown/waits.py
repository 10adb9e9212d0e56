"""What destroy does besides deleting the stack's resources. Creating one does nothing; each acts
only when it is deleted.

- PodsGoneBeforeUninstall waits until no pod matches a selector, then lets what it depends on go.
  The build guide's uninstall waits for the mpsd pods to terminate (about a minute) after the
  `default` GpuFractioningConfig is deleted and before the chart goes: MPS daemons still holding
  the GPUs would outlive their operator, and the GPU Operator's driver cannot unload under them.
- NamespacesGone waits, once, until the namespaces of the components above it are gone. Their
  Namespace resources do not wait for their own deletion: the guide's uninstall deletes
  `kai-resource-reservation`, `kai-scheduler` and `gpu-fractioning` in one command after the charts,
  and one wait for all of them saves the 5 s the namespace controller spends on each in turn (its
  fixed namespaceDeletionGracePeriod, k8s.io/kubernetes v1.37.2 namespace_controller.go:50). What
  the wait depends on (the GPU Operator) goes only once no pod of theirs is left.
- KeptObjectsDeleted deletes cluster-scoped objects a chart keeps on uninstall, whether or not the
  stack got to own them (an install whose gate never held), so the next install does not meet them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult
from urllib3.exceptions import HTTPError

from components.cluster.client import KubeClient
from components.cluster.engine import (
    ClusterAccess,
    PackageResource,
    cluster_props,
    report_failures_without_traceback,
)
from components.cluster.protocol import Cluster, Json
from components.cluster.results import ReportedFailure
from components.cluster.waiting import Clock, Deadline, poll

report_failures_without_traceback()


class PodsStillRunning(ReportedFailure):
    """Pods that should be gone are still there at the deadline."""


def wait_until_gone(
    list_pods: Callable[[], list[str]],
    where: str,
    timeout_seconds: float,
    fix: str,
    now: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Returns once `list_pods` lists none; raises PodsStillRunning naming those left after
    `timeout_seconds`."""
    pods = poll(list_pods, lambda pods: not pods, Deadline.after(timeout_seconds, Clock(now, sleep)))
    if pods:
        raise PodsStillRunning(
            f"{len(pods)} pod(s) in {where} still there after {timeout_seconds:g}s: {', '.join(sorted(pods))}. "
            f"{fix} Then run `pulumi destroy` again."
        )


class NamespacesStillTerminating(ReportedFailure):
    """Namespaces being deleted are still there at the deadline."""


# As long as the Kubernetes provider waits for one namespace to be deleted.
NAMESPACES_GONE_TIMEOUT_SECONDS = 600
NAMESPACES_FIX = (
    "Each one's status says what is left in it (`kubectl get namespace NAME -o yaml`): usually an object whose "
    "finalizer belongs to an operator that is already gone. Remove that finalizer."
)


def still_there(namespace: Json) -> str:
    """What the namespace controller says is left in a terminating namespace, from its conditions."""
    left = [
        str(c.get("message") or c.get("reason") or c.get("type"))
        for c in (namespace.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    ]
    return "; ".join(left) or "terminating"


def terminating(cluster: Cluster, names: Iterable[str]) -> dict[str, str]:
    """Those of `names` being deleted and not gone yet, with what is left in each. A namespace that
    nothing deleted (no deletionTimestamp) is not waited for: this operation did not remove it."""
    left = {}
    for name in names:
        namespace = cluster.read_namespace(name)
        if namespace is not None and (namespace.get("metadata") or {}).get("deletionTimestamp"):
            left[name] = still_there(namespace)
    return left


def wait_until_namespaces_gone(
    left: Callable[[], dict[str, str]],
    timeout_seconds: float,
    now: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Returns once `left` names none; raises NamespacesStillTerminating naming each left, and why,
    after `timeout_seconds`."""
    remaining = poll(left, lambda names: not names, Deadline.after(timeout_seconds, Clock(now, sleep)))
    if remaining:
        found = "; ".join(f"{name} ({why})" for name, why in sorted(remaining.items()))
        raise NamespacesStillTerminating(
            f"namespace(s) still terminating after {timeout_seconds:g}s: {found}. {NAMESPACES_FIX} "
            "Then run `pulumi destroy` again."
        )


class _OnDeleteProvider(ResourceProvider):
    """Create and update only keep the inputs; subclasses act in `delete`."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=uuid.uuid4().hex, outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # Cluster access counts too: the wait runs at destroy with what the state holds.
        changed = any(olds.get(k) != news.get(k) for k in set(olds) | set(news) if k != "__provider")
        return DiffResult(changes=changed, replaces=[], delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=news)


class _PodsGoneProvider(_OnDeleteProvider):
    def delete(self, _id: str, props: dict[str, Any]) -> None:
        namespace, selector = str(props["namespace"]), str(props["label_selector"])
        cluster = KubeClient.connect(props.get("kubeconfig"), props.get("context"))

        def names() -> list[str]:
            return [str(pod["metadata"]["name"]) for pod in cluster.list_pods(namespace, selector)]

        try:
            wait_until_gone(names, f"{namespace} ({selector})", float(props["timeout_seconds"]), str(props["fix"]))
        except HTTPError as error:
            # No connection at all: the cluster is gone or unreachable, and the uninstalls that
            # follow say so. Any answer from the API server (403, 500) is an error here.
            pulumi.log.warn(f"could not reach the cluster to wait for pods {selector} in {namespace}: {error}")


class PodsGoneBeforeUninstall(PackageResource, handler=_PodsGoneProvider):
    """Depend on the release to be uninstalled after the pods are gone; make what stops the pods
    depend on this, so it is deleted first."""

    def __init__(
        self,
        name: str,
        *,
        access: ClusterAccess,
        namespace: str,
        label_selector: str,
        timeout_seconds: int,
        fix: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = cluster_props(
            access,
            namespace=namespace,
            label_selector=label_selector,
            timeout_seconds=timeout_seconds,
            fix=fix,
        )
        super().__init__(name, props, opts)


class _NamespacesGoneProvider(_OnDeleteProvider):
    def delete(self, _id: str, props: dict[str, Any]) -> None:
        names = [str(name) for name in props["namespaces"]]
        cluster = KubeClient.connect(props.get("kubeconfig"), props.get("context"))
        try:
            wait_until_namespaces_gone(lambda: terminating(cluster, names), float(props["timeout_seconds"]))
        except HTTPError as error:  # the cluster is gone or unreachable: the uninstalls that follow say so
            pulumi.log.warn(f"could not reach the cluster to wait for namespaces {', '.join(names)}: {error}")


class NamespacesGone(PackageResource, handler=_NamespacesGoneProvider):
    """Make the components whose namespaces are listed depend on this, and this on what must outlive
    them; their namespaces skip their own deletion wait (helm.install's `deletion_awaited_elsewhere`)."""

    def __init__(
        self,
        name: str,
        *,
        access: ClusterAccess,
        namespaces: list[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = cluster_props(access, namespaces=namespaces, timeout_seconds=NAMESPACES_GONE_TIMEOUT_SECONDS)
        super().__init__(name, props, opts)


def waited_by(opts: pulumi.ResourceOptions | None, gone: NamespacesGone | None) -> pulumi.ResourceOptions | None:
    """A component's options, made to depend on the NamespacesGone that waits for its namespaces."""
    return opts if gone is None else pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[gone]))


class _KeptObjectsProvider(_OnDeleteProvider):
    def delete(self, _id: str, props: dict[str, Any]) -> None:
        cluster = KubeClient.connect(props.get("kubeconfig"), props.get("context"))
        for kept in props["objects"]:
            try:
                cluster.delete_cluster_object(kept["group"], kept["version"], kept["plural"], kept["name"])
            except HTTPError as error:  # the cluster is gone or unreachable: the uninstalls that follow say so
                pulumi.log.warn(f"could not reach the cluster to delete {kept['plural']}/{kept['name']}: {error}")
                return


class KeptObjectsDeleted(PackageResource, handler=_KeptObjectsProvider):
    """Depend on the release that keeps `objects` ((group, version, plural, name), cluster-scoped):
    destroy deletes them before the release is uninstalled."""

    def __init__(
        self,
        name: str,
        *,
        access: ClusterAccess,
        objects: list[tuple[str, str, str, str]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        kept = [dict(zip(("group", "version", "plural", "name"), o, strict=True)) for o in objects]
        props = cluster_props(access, objects=kept)
        super().__init__(name, props, opts)
