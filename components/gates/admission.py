"""The gate after the fractional-pod admission policy: the ValidatingAdmissionPolicy compiled, its
binding in the configured mode, and a dry run of a fractional pod that runs as root met as the mode
says: refused in deny mode, admitted with the policy's warning in warn mode, admitted without it in
audit mode. `check_fraction_admission` reads the cluster; each `decide_*` decides from plain JSON."""

from __future__ import annotations

from components.cluster.objects import Json, name, one_line
from components.cluster.protocol import Cluster, DryRun
from components.cluster.protocol import Json as Manifest
from components.cluster.results import CheckResult, guarded
from components.gates.spec import GateSpec
from components.vocabulary.fractions import FRACTION_ANNOTATION, POLICY_NAME, VALIDATION_ACTIONS


def decide_admission_objects(policy: Json | None, binding: Json | None, mode: str) -> CheckResult:
    """The fractional-pod policy and its binding exist, the binding in the configured mode, and the
    API server has compiled the policy's current generation without type warnings."""
    check = "policy"
    if policy is None or binding is None:
        missing = " and ".join(k for k, found in (("policy", policy), ("binding", binding)) if found is None)
        return CheckResult(check, False, f"{POLICY_NAME}: no {missing} yet (kubectl get validatingadmissionpolicies)")
    actions = (binding.get("spec") or {}).get("validationActions") or []
    wanted = VALIDATION_ACTIONS[mode]
    if actions != wanted:
        return CheckResult(check, False, f"binding {name(binding)} has validationActions {actions}, not {wanted}")
    status = policy.get("status") or {}
    generation = (policy.get("metadata") or {}).get("generation")
    if status.get("observedGeneration") != generation:
        return CheckResult(
            check, False, f"the API server has not compiled generation {generation} of {POLICY_NAME} yet"
        )
    warnings = [w.get("warning", "") for w in (status.get("typeChecking") or {}).get("expressionWarnings") or []]
    if warnings:
        return CheckResult(check, False, f"{POLICY_NAME} does not type-check: {one_line('; '.join(warnings))}")
    return CheckResult(check, True, f"{POLICY_NAME} compiled (generation {generation}), binding in {mode} mode")


def decide_admission_refusal(dry_run: DryRun, mode: str) -> CheckResult:
    """What a server-side dry run of a fractional pod that runs as root met. The API server loads a
    changed policy or binding a moment after it is stored, so only the answer tells that the mode
    asked for is the one in force: in deny mode the policy's refusal; in warn mode admitted with the
    policy's warning; in audit mode admitted with none (audit annotations reach only the audit log)."""
    check = "refuses-root-fraction-pod"
    ours = f"ValidatingAdmissionPolicy '{POLICY_NAME}'"
    refusal, warned = dry_run.refusal, [w for w in dry_run.warnings if ours in w]
    if mode == "deny":
        if refusal is not None and ours in refusal:
            return CheckResult(check, True, "a root fractional pod is refused: " + one_line(refusal))
        seen = f"refused by something else: {one_line(refusal)}" if refusal else "admitted"
        return CheckResult(check, False, f"a root fractional pod was {seen}; the policy is not in force yet")
    if refusal is not None:
        return CheckResult(check, False, f"a root fractional pod was refused in {mode} mode: {one_line(refusal)}")
    if mode == "warn" and not warned:
        return CheckResult(check, False, "a root fractional pod is admitted with no warning from the policy yet")
    if mode == "audit" and warned:
        return CheckResult(
            check, False, f"a root fractional pod still gets the policy's warning: {one_line(warned[0])}"
        )
    seen = "admitted with the policy's warning" if warned else "admitted"
    return CheckResult(check, True, f"a root fractional pod is {seen}, as {mode} mode does")


def admission_probe() -> Manifest:
    """A fractional pod without the runtime class that runs as root, for the API server to refuse in
    a dry run. It names no runtime class and no scheduler, so no other admission step (RuntimeClass,
    KAI's pod webhooks) gets to answer first."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "kgf-admission-probe-", "annotations": {FRACTION_ANNOTATION: "0.5"}},
        "spec": {
            "securityContext": {"runAsUser": 0},
            "containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def check_fraction_admission(cluster: Cluster, spec: GateSpec) -> list[CheckResult]:
    mode = spec.admission_mode or "deny"
    group, version = "admissionregistration.k8s.io", "v1"
    return [
        guarded(
            "policy",
            lambda: decide_admission_objects(
                cluster.read_cluster_object(group, version, "validatingadmissionpolicies", POLICY_NAME),
                cluster.read_cluster_object(group, version, "validatingadmissionpolicybindings", POLICY_NAME),
                mode,
            ),
        ),
        guarded(
            "refuses-root-fraction-pod",
            lambda: decide_admission_refusal(
                cluster.dry_run_create("v1", "pods", spec.namespace, admission_probe()), mode
            ),
        ),
    ]
