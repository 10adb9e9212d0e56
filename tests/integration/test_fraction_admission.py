"""The fractional-pod admission policy in the real API server: the `admission` profile (only the
policy, as a platform team adds it to an existing cluster) deployed by the real engine, then every
case of the shared table (tests/fixtures/guide-rules) created as a server-side dry run, `kubectl
debug`'s ephemeral containers, the exemption by label (GPU daemons only, never a fractional pod),
the three modes, and destroy.

The fork and lab profiles install the same policy; their modules check that it was in force
before their own fractional pods (tests/integration/test_dev_stack.py, test_fork_stack.py).
"""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from components.cluster.client import KubeClient
from components.config.model import GPU_PROFILES, SmokeTestConfig
from components.lab.lab_pods import shared_pod_manifest, whole_gpu_pod_manifest
from components.proofs.smoke import SMOKE_POD_NAMES, smoke_pod_manifest
from components.vocabulary.fractions import POLICY_NAME, SYSTEM_NAMESPACE_LABEL
from standins.operators.cluster import path
from tests.attack_corpus import corpus, measured
from tests.guide_rules import GuideCase, cases
from tests.integration.admission import api_server, dry_run_create
from tests.integration.workspace import Workspace, api, kubectl, kubectl_json, wait_until

pytestmark = pytest.mark.integration
STACK = "admission"
# Where a case that names no namespace is created, and an existing namespace of someone else's
# privileged GPU daemons, which the stack labels as a system namespace.
CASES_NAMESPACE = "kgf-guide-cases"
EXEMPT = "kgf-existing-gpu-daemons"
# The RuntimeClasses a GPU cluster has: the GPU Operator's, and a plain one.
RUNTIME_CLASSES = [
    {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": name}
    for name in ("nvidia", "runc")
]


def config(mode: str = "deny") -> dict[str, Any]:
    return {
        "profile": "admission",
        "cluster": {"kubeconfig": os.environ["KUBECONFIG"]},
        "admission": {"mode": mode, "exemptNamespaces": [EXEMPT]},
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    # The cluster as a platform team has it: its namespaces and RuntimeClasses
    # (the API server's RuntimeClass admission refuses a pod naming one that does not exist).
    kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": RUNTIME_CLASSES}))
    for namespace in (CASES_NAMESPACE, EXEMPT):
        kubectl("create", "namespace", namespace)
    workspace = Workspace.create(tmp_path_factory.mktemp("admission"))
    workspace.new_stack(STACK, config())
    try:
        workspace.pulumi("up", "--yes", "--skip-preview", stack=STACK)
        yield workspace
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack=STACK, check=False)
        # Waited for: a later module that creates one of them (a case names `gpu-operator`) must not
        # meet it still terminating, which removes it from under that module's release.
        kubectl("delete", "namespace", CASES_NAMESPACE, EXEMPT, *CREATED_NAMESPACES, "--ignore-not-found")
        CREATED_NAMESPACES.clear()
        kubectl("delete", "runtimeclass", "nvidia", "runc", "--ignore-not-found")


@pytest.fixture(scope="module")
def server(stack: Workspace) -> Iterator[KubeClient]:
    with api_server() as found:
        yield found


CREATED_NAMESPACES: list[str] = []


def namespace_for(case: GuideCase) -> str:
    """The namespace a case runs in, created with its labels the first time a case names it."""
    if case.namespace is None:
        return CASES_NAMESPACE
    name, labels = case.namespace.name, dict(case.namespace.labels)
    if api().get(path("v1", "namespaces", name=name)) is None:
        manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        api().create(path("v1", "namespaces"), manifest)
        CREATED_NAMESPACES.append(name)
    return name


def test_up_installs_the_policy_and_its_gate_saw_it_refuse(stack: Workspace) -> None:
    report = stack.outputs(STACK)["admission"]
    assert "refuses-root-fraction-pod" in report and POLICY_NAME in report, report
    policy = kubectl_json("get", "validatingadmissionpolicy", POLICY_NAME)
    assert policy["status"].get("typeChecking", {}).get("expressionWarnings") is None, policy["status"]
    labels = kubectl_json("get", "namespace", EXEMPT)["metadata"]["labels"]
    assert labels.get(SYSTEM_NAMESPACE_LABEL) == "true", "admission.exemptNamespaces labels existing namespaces"


@pytest.mark.parametrize("case", cases("admission"), ids=lambda case: case.case)
def test_every_case_of_the_shared_table(server: KubeClient, case: GuideCase) -> None:
    assert case.manifest is not None, f"{case.case}: an admission case is a Kubernetes object"
    manifest = copy.deepcopy(case.manifest)
    namespace = manifest.setdefault("metadata", {}).setdefault("namespace", namespace_for(case))
    refusal = dry_run_create(server, manifest, namespace)
    if case.expect == "allow":
        assert refusal is None, f"{case.case} must be admitted: {refusal}"
        return
    assert refusal is not None, f"{case.case} must be refused"
    assert case.token is not None, f"{case.case}: a deny case names its token"
    assert f"ValidatingAdmissionPolicy '{POLICY_NAME}'" in refusal, f"{case.case}: refused by something else: {refusal}"
    assert case.token in refusal, f"{case.case}: the message must name {case.token!r}: {refusal}"


def test_the_attack_corpus_gets_past_only_the_recorded_gaps(server: KubeClient) -> None:
    """tests/attack_corpus.py as server-side dry runs: an attack counts as stopped whether the policy or
    the API server's own validation refused it; a compliant entry must be admitted."""
    entries = corpus("admission")
    refused: dict[str, str] = {}
    for entry in entries:
        assert entry.case.manifest is not None
        manifest = copy.deepcopy(entry.case.manifest)
        namespace = manifest["metadata"].setdefault("namespace", namespace_for(entry.case))
        refusal = dry_run_create(server, manifest, namespace)
        if refusal is not None:
            refused[entry.case.case] = (
                "policy" if f"ValidatingAdmissionPolicy '{POLICY_NAME}'" in refusal else "api-server"
            )
    by_server = Counter(e.technique for e in entries if refused.get(e.case.case) == "api-server")
    print("refused by the API server's own validation:", dict(by_server))  # noqa: T201
    assert measured("admission", entries, refused) == []


def project_pods() -> list[tuple[str, dict[str, Any]]]:
    smoke = SmokeTestConfig()
    profile = GPU_PROFILES["a100"]
    return [
        *((name, smoke_pod_manifest(name, smoke)) for name in SMOKE_POD_NAMES),
        ("lab-whole-gpu", whole_gpu_pod_manifest(await_ready=False)),
        ("lab-shared", shared_pod_manifest(profile)),
    ]


@pytest.mark.parametrize(("name", "manifest"), project_pods(), ids=[name for name, _ in project_pods()])
def test_the_projects_own_pods_are_admitted(server: KubeClient, name: str, manifest: dict[str, Any]) -> None:
    manifest = {"apiVersion": "v1", "kind": "Pod", **copy.deepcopy(manifest)}
    manifest["metadata"]["namespace"] = CASES_NAMESPACE
    assert dry_run_create(server, manifest, CASES_NAMESPACE) is None


def fraction_pod(name: str, namespace: str, **security: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"gpu-fraction": "0.5"}},
        "spec": {
            "runtimeClassName": "nvidia",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, **security},
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.37",
                    "command": ["sleep", "3600"],
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }


def test_kubectl_debug_cannot_add_a_root_container_to_a_fractional_pod(server: KubeClient) -> None:
    pod = fraction_pod("kgf-debug-target", CASES_NAMESPACE)
    kubectl("create", "-f", "-", input_text=json.dumps(pod))
    try:
        as_root = {
            "name": "debugger",
            "image": "busybox:1.37",
            "securityContext": {"runAsNonRoot": False, "runAsUser": 0, "allowPrivilegeEscalation": False},
        }
        refusal = server.dry_run_debug(CASES_NAMESPACE, "kgf-debug-target", as_root)
        assert refusal is not None and POLICY_NAME in refusal and "debugger" in refusal, refusal
        # `kubectl debug` sets no securityContext: allowPrivilegeEscalation is then allowed.
        plain = server.dry_run_debug(CASES_NAMESPACE, "kgf-debug-target", {"name": "plain", "image": "busybox:1.37"})
        assert plain is not None and "allowPrivilegeEscalation" in plain, plain
        restricted = {
            "name": "restricted",
            "image": "busybox:1.37",
            "securityContext": {"allowPrivilegeEscalation": False},
        }
        assert server.dry_run_debug(CASES_NAMESPACE, "kgf-debug-target", restricted) is None, (
            "a debug container that keeps the pod's non-root settings is admitted"
        )
    finally:
        kubectl("-n", CASES_NAMESPACE, "delete", "pod", "kgf-debug-target", "--grace-period=0")


def gpu_daemon_pod(name: str, namespace: str) -> dict[str, Any]:
    """A pod shaped like KAI's GPU reservation pod: one nvidia.com/gpu, root, no runtime class."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "kai-resource-reservation"}},
        "spec": {
            "containers": [
                {
                    "name": "resource-reservation",
                    "image": "busybox:1.37",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ]
        },
    }


def test_a_labelled_namespace_exempts_only_gpu_daemons_and_kube_system_by_name_nothing(server: KubeClient) -> None:
    root = fraction_pod("kgf-root-daemon", EXEMPT, runAsNonRoot=False, runAsUser=0)
    refusal = dry_run_create(server, root, EXEMPT)
    assert refusal is not None and POLICY_NAME in refusal and "runAsUser" in refusal, (
        "a root fractional pod is refused in a labelled system namespace too"
    )
    assert dry_run_create(server, gpu_daemon_pod("kgf-gpu-daemon", EXEMPT), EXEMPT) is None, (
        "a GPU daemon without the runtime class is admitted in a labelled system namespace"
    )
    refusal = dry_run_create(server, gpu_daemon_pod("kgf-gpu-daemon", "kube-system"), "kube-system")
    assert refusal is not None and POLICY_NAME in refusal and "runtimeClassName" in refusal, (
        "kube-system is not exempt by its name"
    )
    in_kube_system = {**root, "metadata": {**root["metadata"], "namespace": "kube-system"}}
    refusal = dry_run_create(server, in_kube_system, "kube-system")
    assert refusal is not None and POLICY_NAME in refusal, "kube-system is not exempt by its name"


def root_pod_as_kubectl_sees_it() -> Any:
    pod = fraction_pod("kgf-mode-probe", CASES_NAMESPACE, runAsNonRoot=False, runAsUser=0)
    return kubectl("create", "--dry-run=server", "-f", "-", check=False, input_text=json.dumps(pod))


@pytest.mark.parametrize("mode", ["warn", "audit", "deny"])
def test_each_mode_is_what_the_api_server_does(stack: Workspace, mode: str) -> None:
    stack.pulumi("config", "set", "--path", "admission.mode", mode, stack=STACK)
    stack.pulumi("up", "--yes", "--skip-preview", stack=STACK)
    created = root_pod_as_kubectl_sees_it()
    if mode == "deny":
        assert created.returncode != 0 and POLICY_NAME in created.stderr, created.stderr
    elif mode == "warn":
        assert created.returncode == 0, created.stderr
        assert "Warning:" in created.stderr and "run as UID 0" in created.stderr, created.stderr
    else:
        assert created.returncode == 0 and "Warning:" not in created.stderr, created.stderr


def test_destroy_removes_the_policy_and_the_exemption_it_added(stack: Workspace) -> None:
    stack.pulumi("destroy", "--yes", "--skip-preview", stack=STACK)
    for kind in ("validatingadmissionpolicy", "validatingadmissionpolicybinding"):
        assert kubectl("get", kind, POLICY_NAME, check=False).returncode != 0, f"{kind} left behind"
    wait_until(
        lambda: SYSTEM_NAMESPACE_LABEL
        not in (kubectl_json("get", "namespace", EXEMPT)["metadata"].get("labels") or {}),
        30,
        "the exemption label to be removed",
    )
    pod = fraction_pod("kgf-after-destroy", CASES_NAMESPACE, runAsNonRoot=False, runAsUser=0)
    wait_until(
        lambda: kubectl("create", "--dry-run=server", "-f", "-", check=False, input_text=json.dumps(pod)).returncode
        == 0,
        30,
        "the API server to stop enforcing the removed policy",
    )
