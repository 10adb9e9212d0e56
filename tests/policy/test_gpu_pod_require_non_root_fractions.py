"""gpu-pod-require-non-root-fractions: fractional pods cannot control the MPS server."""

from __future__ import annotations

import pytest
from gpu_policies.gpu_pod_require_non_root_fractions import policy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.harness import run_resource

SUBJECT = "Container 'main' of a pod that asks for a GPU fraction"
MAY_RUN_AS_ROOT = (
    f"{SUBJECT} may run as root; set spec.securityContext.runAsNonRoot: true "
    "(or runAsNonRoot: true on every container)."
)


def container(pod: golden.Props) -> golden.Props:
    """The security context of the pod's only container, for mutating it in place."""
    context: golden.Props = pod["spec"]["containers"][0]["securityContext"]
    return context


@pytest.mark.parametrize("pod", [golden.smoke_pod(), golden.shared_lab_pod()], ids=["smoke", "shared"])
def test_golden_fractional_pods_pass(pod: golden.Props) -> None:
    assert run_resource(policy, golden.POD, pod).violations == [], "both run non-root without escalation"


def test_a_whole_gpu_pod_is_not_a_fraction_and_is_ignored() -> None:
    assert run_resource(policy, golden.POD, golden.whole_gpu_pod()).violations == [], (
        "only pods sharing an MPS server are restricted"
    )


def test_a_fractional_pod_without_run_as_non_root_fails() -> None:
    pod = golden.smoke_pod()
    del pod["spec"]["securityContext"]
    assert run_resource(policy, golden.POD, pod).violations == [MAY_RUN_AS_ROOT], "a root pod can raise its own MPS cap"


def test_run_as_non_root_on_every_container_is_enough() -> None:
    pod = golden.smoke_pod()
    del pod["spec"]["securityContext"]
    container(pod)["runAsNonRoot"] = True
    assert run_resource(policy, golden.POD, pod).violations == [], "container-level settings count"


def test_a_container_that_overrides_run_as_non_root_fails() -> None:
    pod = golden.smoke_pod()
    container(pod)["runAsNonRoot"] = False
    assert run_resource(policy, golden.POD, pod).violations == [MAY_RUN_AS_ROOT], (
        "the container's own setting wins over the pod's"
    )


def test_uid_zero_on_the_pod_fails() -> None:
    pod = golden.smoke_pod()
    pod["spec"]["securityContext"]["runAsUser"] = 0
    assert run_resource(policy, golden.POD, pod).violations == [
        f"{SUBJECT} runs as UID 0 through spec.securityContext.runAsUser; run it as a non-zero UID."
    ], "UID 0 is root whatever runAsNonRoot says"


def test_uid_zero_on_a_container_fails() -> None:
    pod = golden.smoke_pod()
    container(pod)["runAsUser"] = 0
    assert run_resource(policy, golden.POD, pod).violations == [
        f"{SUBJECT} runs as UID 0 through securityContext.runAsUser; run it as a non-zero UID."
    ], "a container-level UID 0 is root too"


def test_a_privileged_container_fails() -> None:
    pod = golden.smoke_pod()
    container(pod)["privileged"] = True
    assert run_resource(policy, golden.POD, pod).violations == [
        f"{SUBJECT} is privileged; remove securityContext.privileged: true."
    ], "a privileged container is root on the node"


@pytest.mark.parametrize("allowed", [True, None], ids=["true", "absent"])
def test_allowing_privilege_escalation_fails_and_absent_means_allowed(allowed: bool | None) -> None:
    pod = golden.smoke_pod()
    del container(pod)["allowPrivilegeEscalation"]
    if allowed is not None:
        container(pod)["allowPrivilegeEscalation"] = allowed
    assert run_resource(policy, golden.POD, pod).violations == [
        f"{SUBJECT} allows privilege escalation; set securityContext.allowPrivilegeEscalation: false."
    ], "Kubernetes allows escalation unless it is set to false"


@pytest.mark.parametrize("workload", golden.WORKLOADS)
def test_a_root_workload_template_fails(workload: str) -> None:
    pod = golden.smoke_pod()
    del pod["spec"]["securityContext"]
    props = golden.in_workload(workload, pod)
    prefix = "spec.jobTemplate.spec.template." if workload == golden.CRON_JOB else "spec.template."
    assert run_resource(policy, workload, props).violations == [
        f"{SUBJECT} may run as root; set {prefix}spec.securityContext.runAsNonRoot: true "
        "(or runAsNonRoot: true on every container)."
    ], f"the pods a {workload} creates share the MPS server"


def test_every_container_and_init_container_is_checked() -> None:
    pod = golden.smoke_pod()
    pod["spec"]["initContainers"] = [{"name": "setup", "image": "busybox", "securityContext": {"runAsUser": 0}}]
    assert run_resource(policy, golden.POD, pod).violations == [
        "Container 'setup' of a pod that asks for a GPU fraction runs as UID 0 through "
        "securityContext.runAsUser; run it as a non-zero UID.",
        "Container 'setup' of a pod that asks for a GPU fraction allows privilege escalation; set "
        "securityContext.allowPrivilegeEscalation: false.",
    ], "an init container runs in the same pod"


def test_exempt_namespaces_are_ignored_and_configurable() -> None:
    pod = golden.smoke_pod()
    del pod["spec"]["securityContext"]
    pod["metadata"]["namespace"] = "gpu-fractioning"
    assert run_resource(policy, golden.POD, pod).violations == [], "system daemons may run as root"
    pod["metadata"]["namespace"] = "team-a"
    assert run_resource(policy, golden.POD, pod, {"exemptNamespaces": ["team-a"]}).violations == [], (
        "config replaces the exemption list"
    )


def test_an_unknown_annotation_value_still_marks_the_pod_as_fractional() -> None:
    pod = golden.smoke_pod()
    pod["metadata"]["annotations"]["gpu-fraction"] = UNKNOWN_STRING_VALUE
    container(pod)["privileged"] = True
    assert run_resource(policy, golden.POD, pod).violations == [
        f"{SUBJECT} is privileged; remove securityContext.privileged: true."
    ], "asking for a fraction is decided by the key, which is known at preview"


def test_an_unknown_security_setting_is_not_applicable() -> None:
    pod = golden.smoke_pod()
    container(pod)["allowPrivilegeEscalation"] = UNKNOWN_STRING_VALUE
    outcome = run_resource(policy, golden.POD, pod)
    assert outcome.violations == [] and outcome.not_applicable, "unknown means not applicable, not a crash"


@pytest.mark.parametrize(
    ("key", "what"),
    [
        ("hostIPC", "the node's IPC namespace, where the MPS server and other pods' MPS clients share memory"),
        ("hostPID", "the node's process namespace, where it can see and signal the MPS daemons"),
    ],
)
def test_joining_the_nodes_ipc_or_process_namespace_fails(key: str, what: str) -> None:
    pod = golden.smoke_pod()
    pod["spec"][key] = True
    assert run_resource(policy, golden.POD, pod).violations == [
        f"A pod that asks for a GPU fraction joins {what}; remove spec.{key}: true."
    ], "gpu-fractioning gives each pod its own MPS pipe; the node's namespaces reach everyone's"
    pod["spec"][key] = False
    assert run_resource(policy, golden.POD, pod).violations == [], "explicitly off is fine"


def test_a_workload_template_that_joins_the_nodes_ipc_namespace_names_the_template_field() -> None:
    pod = golden.smoke_pod()
    pod["spec"]["hostIPC"] = True
    props = golden.in_workload(golden.DEPLOYMENT, pod)
    violations = run_resource(policy, golden.DEPLOYMENT, props).violations
    assert violations == [
        "A pod that asks for a GPU fraction joins the node's IPC namespace, where the MPS server and other pods' "
        "MPS clients share memory; remove spec.template.spec.hostIPC: true."
    ]
