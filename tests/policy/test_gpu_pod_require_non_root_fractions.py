"""gpu-pod-require-non-root-fractions: fractional pods cannot control the MPS server."""

from __future__ import annotations

import pytest
from gpu_policies.facts import SYSTEM_NAMESPACE_LABEL
from gpu_policies.gpu_pod_require_non_root_fractions import policy
from gpu_policies.kube import NAMESPACE
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.golden import Resource
from tests.policy.harness import run_resource, run_stack

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


def system_namespace(name: str, value: str = "true") -> Resource:
    return Resource(NAMESPACE, name, {"metadata": {"name": name, "labels": {SYSTEM_NAMESPACE_LABEL: value}}})


def root_pod_in(namespace: str) -> golden.Props:
    pod = golden.smoke_pod()
    del pod["spec"]["securityContext"]
    pod["metadata"]["namespace"] = namespace
    return pod


# The namespaces the program creates and labels as system namespaces (components/config/model.py
# created_namespaces of both profiles, and KAI's reservation namespace).
OWNED_NAMESPACES = (
    "gpu-operator",
    "gpu-fractioning",
    "kai-scheduler",
    "kai-resource-reservation",
    "kai-resource-isolator",
    "nvml-mock",
)


@pytest.mark.parametrize("namespace", OWNED_NAMESPACES)
def test_a_root_fraction_is_refused_in_every_system_namespace_of_this_stack(namespace: str) -> None:
    stack = [system_namespace(namespace), Resource(golden.POD, "root", root_pod_in(namespace))]
    assert run_stack(policy, stack).violations == [MAY_RUN_AS_ROOT], (
        "no system daemon is a fractional pod: the label exempts no fraction from the guide's rules"
    )


@pytest.mark.parametrize("namespace", ["kube-system", "gpu-operator", "gpu-fractioning", "kai-scheduler"])
def test_a_namespace_name_alone_exempts_nothing(namespace: str) -> None:
    assert run_resource(policy, golden.POD, root_pod_in(namespace)).violations == [MAY_RUN_AS_ROOT], (
        "anyone can create a pod in a namespace named like a system one"
    )


@pytest.mark.parametrize("value", ["true", "false", "yes", "", UNKNOWN_STRING_VALUE])
def test_no_label_value_exempts_a_fraction(value: str) -> None:
    stack = [system_namespace("team-a", value), Resource(golden.POD, "root", root_pod_in("team-a"))]
    outcome = run_stack(policy, stack)
    assert outcome.violations == [MAY_RUN_AS_ROOT] and outcome.not_applicable is None, "refused, also at preview"


def test_a_namespace_unknown_during_preview_is_refused_even_beside_a_system_namespace() -> None:
    pod = root_pod_in(UNKNOWN_STRING_VALUE)
    assert run_resource(policy, golden.POD, pod).violations == [MAY_RUN_AS_ROOT]
    outcome = run_stack(policy, [system_namespace("gpu-fractioning"), Resource(golden.POD, "root", pod)])
    assert outcome.violations == [MAY_RUN_AS_ROOT], "wherever the pod lands, a root fraction is refused"


@pytest.mark.parametrize(
    "marker",
    [
        "gpu-memory",
        "gpu-fraction-num-devices",
        "nvidia.com/container.main.gpu-memory.request",
        "nvidia.com/container.main.gpu-memory.limit",
    ],
)
def test_every_fraction_marker_makes_a_pod_fractional(marker: str) -> None:
    pod = root_pod_in("default")
    pod["metadata"]["annotations"] = {marker: "1024"}
    assert run_resource(policy, golden.POD, pod).violations == [MAY_RUN_AS_ROOT], f"{marker} asks for a fraction"


@pytest.mark.parametrize(
    "annotation", ["nvidia.com/container.main.gpu-compute.mode", "nvidia.com/container.a.b.gpu-memory.request"]
)
def test_other_nvidia_annotations_do_not_make_a_pod_fractional(annotation: str) -> None:
    pod = root_pod_in("default")
    pod["metadata"]["annotations"] = {annotation: "sm-sharing"}
    assert run_resource(policy, golden.POD, pod).violations == [], "only the memory request and limit count"


def test_an_annotation_on_the_workload_itself_does_not_reach_its_pods() -> None:
    pod = root_pod_in("default")
    annotations = pod["metadata"].pop("annotations")
    props = golden.in_workload(golden.DEPLOYMENT, pod)
    props["metadata"]["annotations"] = annotations
    assert run_resource(policy, golden.DEPLOYMENT, props).violations == [], "the template carries no fraction"


def test_added_capabilities_fail() -> None:
    pod = golden.smoke_pod()
    container(pod)["capabilities"] = {"add": ["SYS_ADMIN"], "drop": ["ALL"]}
    assert run_resource(policy, golden.POD, pod).violations == [
        f"{SUBJECT} adds the capabilities 'SYS_ADMIN'; remove securityContext.capabilities.add (and drop ALL): an "
        "added capability widens what the container may do to the node and its MPS server."
    ], "a capability is root's power in pieces"


def test_an_ephemeral_container_is_checked_too() -> None:
    pod = golden.smoke_pod()
    pod["spec"]["ephemeralContainers"] = [{"name": "debug", "image": "busybox", "securityContext": {"runAsUser": 0}}]
    assert len(run_resource(policy, golden.POD, pod).violations) == 2, "UID 0 and escalation allowed"


@pytest.mark.parametrize("workload", ["kubernetes:core/v1:ReplicationController", "kubernetes:example.com/v1:Trainer"])
def test_any_resource_with_a_pod_template_is_checked(workload: str) -> None:
    props = golden.in_workload(golden.DEPLOYMENT, root_pod_in("default"))
    assert len(run_resource(policy, workload, props).violations) == 1, f"a {workload} creates pods from its template"


def test_a_pod_template_resource_is_checked() -> None:
    pod = root_pod_in("default")
    props = {"metadata": {"name": "t"}, "template": {"metadata": pod["metadata"], "spec": pod["spec"]}}
    assert run_resource(policy, "kubernetes:core/v1:PodTemplate", props).violations == [
        f"{SUBJECT} may run as root; set template.spec.securityContext.runAsNonRoot: true "
        "(or runAsNonRoot: true on every container)."
    ], "a PodTemplate is a pod for whoever instantiates it"


def test_a_patch_is_judged_by_what_it_sets() -> None:
    patch = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "template": {
                "metadata": {"annotations": {"gpu-fraction": "0.5"}},
                "spec": {"containers": [{"name": "web", "securityContext": {"runAsUser": 0, "privileged": True}}]},
            }
        },
    }
    assert run_resource(policy, "kubernetes:apps/v1:DeploymentPatch", patch).violations == [
        "Container 'web' of a pod that asks for a GPU fraction runs as UID 0 through securityContext.runAsUser; "
        "run it as a non-zero UID.",
        "Container 'web' of a pod that asks for a GPU fraction is privileged; remove securityContext.privileged: true.",
    ], "what the patch leaves out is the cluster's, but what it sets is known"


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
