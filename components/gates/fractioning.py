"""The gate after gpu-fractioning: its operator Available, mpsd and fractiond rolled out and ready,
the `default` GpuFractioningConfig's conditions healthy, KAI's kai-config seeing it
(DependenciesFulfilled), every GPU node Ready for fractions, and mpsd's log showing the multi-user
server and the `default` namespace capped at 10 %. `check_gpu_fractioning` reads the cluster; each
`decide_*` decides from plain JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from components.cluster.objects import Json, conditions, name
from components.cluster.protocol import Cluster
from components.cluster.results import CheckResult, guarded
from components.gates.daemonsets import rollout_gap
from components.gates.deployments import decide_deployments
from components.gates.kai_config import dependencies_detail, kai_config_look, read_kai_config
from components.gates.spec import GateSpec
from components.vocabulary import fractioning
from components.vocabulary.fractioning import CONFIG_CONDITIONS_WHEN_HEALTHY, DAEMONS, NODE_READY_CONDITION
from components.vocabulary.nvidia import GPU_PRESENT_LABEL

# The MPS control daemon's own echo of the `default` namespace's cap.
DAEMON_CAP = re.compile(r"active thread percentage\D{0,20}10(?:\.0+)?(?!\d)")

# One attribute of a line from slog's text handler: key=value, the value quoted when it must be.
TEXT_ATTRIBUTE = re.compile(r'([A-Za-z_][\w.\-]*)=("(?:[^"\\]|\\.)*"|\S*)')


def decide_daemonsets(daemonsets: Sequence[Json], namespace: str) -> CheckResult:
    """The operator's mpsd and fractiond DaemonSets exist, run somewhere, have desired == ready, and run
    their latest template everywhere: a pin bump rolls mpsd one node at a time (day2-upstream.md 6)."""
    check = "daemonsets"
    by_name = {name(d): d for d in daemonsets}
    gaps, counts = [], []
    for daemon in DAEMONS:
        found = by_name.get(f"gpu-fractioning-{daemon}")
        if found is None:
            gaps.append(f"gpu-fractioning-{daemon} not created yet")
            continue
        status = found.get("status") or {}
        desired, ready = int(status.get("desiredNumberScheduled", 0)), int(status.get("numberReady", 0))
        counts.append(f"{name(found)} {ready}/{desired}")
        if desired == 0:
            gaps.append(f"{name(found)} matches no node (are the GPU nodes labelled {GPU_PRESENT_LABEL}=true?)")
        elif ready != desired:
            gaps.append(f"{name(found)} {ready} of {desired} ready")
        elif gap := rollout_gap(found):
            gaps.append(f"{name(found)}: {gap}")
    if gaps:
        look = f"kubectl -n {namespace} get ds,pods -o wide; kubectl -n {namespace} logs deploy/gpu-fractioning"
        return CheckResult(check, False, f"{'; '.join(gaps)} ({look})")
    return CheckResult(check, True, ", ".join(counts))


def decide_fractioning_config(config: Json | None) -> CheckResult:
    """Each condition the operator reports has the status upstream means by healthy (Ready is True,
    DriverUpgradeInProgress is False); a type the program does not know is reported, not failed on."""
    check = "gpu-fractioning-config"
    look = "kubectl get gpufractioningconfig default -o yaml"
    if config is None:
        return CheckResult(
            check, False, f"no GpuFractioningConfig default: the chart creates it after install ({look})"
        )
    found = conditions(config)
    if not found:
        return CheckResult(check, False, f"the operator has not reported on it yet ({look})")
    known = {t: c for t, c in found.items() if t in CONFIG_CONDITIONS_WHEN_HEALTHY}
    unhealthy = [
        f"{t}={c.get('status')} ({c.get('reason')}: {c.get('message')})"
        for t, c in known.items()
        if c.get("status") != CONFIG_CONDITIONS_WHEN_HEALTHY[t]
    ]
    if "Ready" not in found:
        unhealthy.append("no Ready condition")
    if unhealthy:
        return CheckResult(check, False, f"{'; '.join(unhealthy)} ({look})")
    held = ", ".join(f"{t}={c.get('status')}" for t, c in known.items())
    unknown = ", ".join(f"{t}={c.get('status')}" for t, c in found.items() if t not in known)
    return CheckResult(check, True, held + (f"; not read (unknown to this program): {unknown}" if unknown else ""))


def decide_kai_sees_fractioning(config: Json | None, kai_namespace: str) -> CheckResult:
    """KAI's operator has seen the GpuFractioningConfig: kai-config's DependenciesFulfilled, False
    (`GpuFractioningConfig not found`) until gpu-fractioning is installed, turns True. The smoke pods
    need KAI and the node agents to agree; a KAI that does not report the condition passes, saying so."""
    check = "kai-dependencies-fulfilled"
    look = kai_config_look(kai_namespace)
    if config is None:
        return CheckResult(check, False, f"no Config kai-config ({look})")
    dependencies = conditions(config).get("DependenciesFulfilled")
    if dependencies is None:
        return CheckResult(check, True, "kai-config reports no DependenciesFulfilled condition")
    if dependencies.get("status") != "True":
        return CheckResult(
            check,
            False,
            f"kai-config {dependencies_detail(dependencies)}: "
            f"KAI's operator has not seen the GpuFractioningConfig Ready yet ({look})",
        )
    return CheckResult(check, True, "kai-config DependenciesFulfilled=True")


def decide_node_readiness(gpu_nodes: Sequence[Json]) -> CheckResult:
    check = "node-ready"
    if not gpu_nodes:
        return CheckResult(check, False, f"no node is labelled {GPU_PRESENT_LABEL}=true")
    gaps = []
    for node in gpu_nodes:
        condition = next(
            (c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == NODE_READY_CONDITION),
            None,
        )
        if condition is None:
            gaps.append(f"{name(node)}: no {NODE_READY_CONDITION} condition yet")
        elif condition.get("status") != "True":
            gaps.append(
                f"{name(node)}: {condition.get('status')} ({condition.get('reason')}: {condition.get('message')})"
            )
    if gaps:
        look = f"kubectl get nodes -o jsonpath='{{.items[*].status.conditions[?(@.type==\"{NODE_READY_CONDITION}\")]}}'"
        return CheckResult(check, False, f"{'; '.join(gaps)} ({look})")
    return CheckResult(check, True, f"{NODE_READY_CONDITION}=True on {', '.join(name(n) for n in gpu_nodes)}")


def log_attributes(line: str) -> dict[str, Any]:
    """The attributes of one log line from either of slog's handlers: JSON (`{"k":v,...}`) or text
    (`k=v k2="quoted value"`); a line in neither format has none."""
    start = line.find("{")
    if start >= 0:
        try:
            found = json.loads(line[start:])
        except ValueError:
            found = None
        if isinstance(found, dict):
            return found
    return {key: unquote(value) for key, value in TEXT_ATTRIBUTE.findall(line)}


def unquote(value: str) -> str:
    """A text-handler value: slog quotes it as Go's strconv.Quote does when it has spaces or quotes."""
    if not value.startswith('"'):
        return value
    try:
        return str(json.loads(value))
    except ValueError:
        return value.strip('"')


def caps_default_namespace(line: str) -> bool:
    """mpsd's line capping the `default` MPS namespace at 10 %, in slog's text or JSON format, or
    the control daemon's echo of that cap."""
    if "default" in line and DAEMON_CAP.search(line):
        return True
    attributes = log_attributes(line)
    try:
        percent = float(attributes.get("activeThreadPercent", ""))
    except (TypeError, ValueError):
        return False
    return attributes.get("namespace") == "default" and percent == 10


def decide_mpsd_logs(logs: Mapping[str, str], namespace: str) -> CheckResult:
    """Each mpsd pod started MPS in multi-user mode and capped the `default` namespace at 10 %."""
    check = "mpsd-log"
    if not logs:
        return CheckResult(
            check, False, f"no mpsd pod (kubectl -n {namespace} get pods -l app.kubernetes.io/component=mpsd)"
        )
    gaps = []
    for pod, log in sorted(logs.items()):
        if "multiuser enabled" not in log:
            gaps.append(f"{pod}: no multi-user server ('Adding server ... [multiuser enabled]')")
        if not any(caps_default_namespace(line) for line in log.splitlines()):
            gaps.append(f"{pod}: no cap of the default namespace at 10%")
    if gaps:
        return CheckResult(check, False, f"{'; '.join(gaps)} (kubectl -n {namespace} logs <pod>)")
    return CheckResult(check, True, f"multi-user server, default namespace at 10% on {len(logs)} pod(s)")


def check_gpu_fractioning(cluster: Cluster, spec: GateSpec) -> list[CheckResult]:
    namespace = spec.namespace

    def mpsd_logs() -> dict[str, str]:
        pods = cluster.list_pods(namespace, fractioning.MPSD_SELECTOR)
        return {str(p["metadata"]["name"]): cluster.pod_logs(namespace, str(p["metadata"]["name"])) for p in pods}

    return [
        guarded(
            "operator",
            lambda: decide_deployments(
                cluster.list_deployments(namespace), [fractioning.OPERATOR_DEPLOYMENT], namespace
            ),
        ),
        guarded(
            "daemonsets",
            lambda: decide_daemonsets(cluster.list_daemonsets(namespace, fractioning.DAEMONSET_SELECTOR), namespace),
        ),
        guarded(
            "gpu-fractioning-config",
            lambda: decide_fractioning_config(
                cluster.read_cluster_object(
                    fractioning.CONFIG_GROUP,
                    fractioning.CONFIG_VERSION,
                    fractioning.CONFIG_PLURAL,
                    "default",
                )
            ),
        ),
        guarded(
            "kai-dependencies-fulfilled",
            lambda: decide_kai_sees_fractioning(read_kai_config(cluster), spec.kai_namespace),
        ),
        guarded(
            "node-ready",
            lambda: decide_node_readiness(cluster.list_nodes(f"{GPU_PRESENT_LABEL}=true")),
        ),
        guarded("mpsd-log", lambda: decide_mpsd_logs(mpsd_logs(), namespace)),
    ]
