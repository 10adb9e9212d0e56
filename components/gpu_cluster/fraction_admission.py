"""FractionAdmission: a ValidatingAdmissionPolicy that holds every fractional pod in the cluster to
the guide's rules, whoever creates it (a Helm chart, an operator, `kubectl apply`, `kubectl debug`).

The guide: "A fractional pod that runs as root can raise its own cap or delete a neighbor's
namespace. A non-root pod cannot. Enforce this with Pod Security Admission or a policy engine
instead of trusting each manifest." The API server evaluates the policy (CEL) on create and update
of pods, of their ephemeral containers and of every built-in kind with a pod template, after the
mutating webhooks (KAI's adds the runtime class to fraction pods) and before the object is stored, in
every namespace (one exemption: a system daemon's non-fractional GPU pod may lack the runtime class)."""

from __future__ import annotations

from typing import Any, Literal

import pulumi
import pulumi_kubernetes as k8s

from components.vocabulary.fractions import (
    CONTAINER_MEMORY_MARKER,
    FRACTION_ANNOTATION,
    FRACTION_ANNOTATIONS,
    FRACTION_PATTERN,
    MEMORY_ANNOTATION,
    MPS_PIPE_DIRECTORIES,
    NUM_DEVICES_ANNOTATION,
    POLICY_NAME,
    POSITIVE_INTEGER_PATTERN,
    SYSTEM_NAMESPACE_LABEL,
    SYSTEM_NAMESPACE_LABELS,
    VALIDATION_ACTIONS,
)
from components.vocabulary.nvidia import GPU_RESOURCE as GPU_RESOURCE
from components.vocabulary.nvidia import GPU_RESOURCE_PATTERN

Json = dict[str, Any]
AdmissionMode = Literal["deny", "warn", "audit"]

# Every built-in kind that carries a pod, and pods' own ephemeral containers (`kubectl debug`).
MATCHED_RESOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("pods", "pods/ephemeralcontainers", "replicationcontrollers", "podtemplates")),
    ("apps", ("deployments", "replicasets", "statefulsets", "daemonsets")),
    ("batch", ("jobs", "cronjobs")),
)


def _cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _or_empty(path: str, empty: str = "{}") -> str:
    """`path` when the object has it, else an empty value: CEL has no optional chaining for maps."""
    return f"(has({path}) ? {path} : {empty})"


def _variables() -> list[Json]:
    """The pod the object runs, and what the validations ask of it, each computed once."""
    setting = "(has(c.securityContext) && has(c.securityContext.{key}))"
    pod_setting = "has(variables.podSecurity.{key})"
    pipe_dirs = _cel_list(MPS_PIPE_DIRECTORIES)
    expressions = {
        # The object's pod: a Pod (also through pods/ephemeralcontainers) or a workload's template.
        "pod": (
            "object.kind == 'Pod' ? object : "
            f"object.kind == 'PodTemplate' ? {_or_empty('object.template')} : "
            "object.kind == 'CronJob' ? object.spec.jobTemplate.spec.template : "
            f"{_or_empty('object.spec.template')}"
        ),
        "prefix": (
            "object.kind == 'Pod' ? '' : object.kind == 'PodTemplate' ? 'template.' : "
            "object.kind == 'CronJob' ? 'spec.jobTemplate.spec.template.' : 'spec.template.'"
        ),
        "annotations": (f"has(variables.pod.metadata) ? {_or_empty('variables.pod.metadata.annotations')} : {{}}"),
        "fractional": (
            f"variables.annotations.exists(k, k in {_cel_list(FRACTION_ANNOTATIONS)} || "
            f"k.matches('{CONTAINER_MEMORY_MARKER}'))"
        ),
        "spec": _or_empty("variables.pod.spec"),
        "podSecurity": _or_empty("variables.spec.securityContext"),
        "containers": " + ".join(
            _or_empty(f"variables.spec.{kind}", "[]")
            for kind in ("initContainers", "containers", "ephemeralContainers")
        ),
        # A container's own setting wins over the pod's (Kubernetes' precedence).
        "mayRunAsRoot": (
            "variables.containers.filter(c, !("
            f"{setting.format(key='runAsNonRoot')} ? c.securityContext.runAsNonRoot : "
            f"({pod_setting.format(key='runAsNonRoot')} && variables.podSecurity.runAsNonRoot))).map(c, c.name)"
        ),
        "runAsUid0": (
            "variables.containers.filter(c, ("
            f"{setting.format(key='runAsUser')} ? c.securityContext.runAsUser : "
            f"{pod_setting.format(key='runAsUser')} ? variables.podSecurity.runAsUser : -1) == 0).map(c, c.name)"
        ),
        "privileged": (
            f"variables.containers.filter(c, {setting.format(key='privileged')} && "
            "c.securityContext.privileged).map(c, c.name)"
        ),
        # Kubernetes allows escalation unless told otherwise: only an explicit false is safe.
        "mayEscalate": (
            f"variables.containers.filter(c, !({setting.format(key='allowPrivilegeEscalation')} && "
            "c.securityContext.allowPrivilegeEscalation == false)).map(c, c.name)"
        ),
        "addsCapabilities": (
            f"variables.containers.filter(c, {setting.format(key='capabilities')} && "
            "has(c.securityContext.capabilities.add) && size(c.securityContext.capabilities.add) > 0)"
            ".map(c, c.name)"
        ),
        # A path the node resolves elsewhere than it reads ('//', '.', '..', a trailing '/') is
        # refused outright; a canonical one must be neither the pipe directory, nor inside it, nor
        # above it (a mount of /run holds the pipes too).
        "pipeHostPaths": (
            f"{_or_empty('variables.spec.volumes', '[]')}.filter(v, has(v.hostPath)).map(v, v.hostPath.path)"
            ".filter(p, !p.matches('^(/|(/[^/]+)+)$') || p.matches('(^|/)[.][.]?(/|$)') || "
            f"{pipe_dirs}.exists(d, p == d || p.startsWith(d + '/') || d.startsWith(p == '/' ? '/' : p + '/')))"
        ),
        # Containers asking for any GPU resource (whole, shared or MIG): each needs the NVIDIA runtime.
        "gpuContainers": (
            "variables.containers.filter(c, has(c.resources) && "
            f"(({_or_empty('c.resources.limits')}).exists(r, r.matches('{GPU_RESOURCE_PATTERN}')) || "
            f"({_or_empty('c.resources.requests')}).exists(r, r.matches('{GPU_RESOURCE_PATTERN}')))).map(c, c.name)"
        ),
        # A system namespace (labelled by the program): exempts only non-fractional GPU pods from the class.
        "systemNamespace": (
            "namespaceObject != null && has(namespaceObject.metadata.labels) && "
            f"'{SYSTEM_NAMESPACE_LABEL}' in namespaceObject.metadata.labels && "
            f"namespaceObject.metadata.labels['{SYSTEM_NAMESPACE_LABEL}'] == "
            f"'{SYSTEM_NAMESPACE_LABELS[SYSTEM_NAMESPACE_LABEL]}'"
        ),
        "wholeGpu": (
            "variables.containers.filter(c, has(c.resources) && "
            f"(({_or_empty('c.resources.limits')}).exists(r, r == '{GPU_RESOURCE}') || "
            f"({_or_empty('c.resources.requests')}).exists(r, r == '{GPU_RESOURCE}'))).map(c, c.name)"
        ),
    }
    return [{"name": name, "expression": expression} for name, expression in expressions.items()]


def _annotation(key: str) -> str:
    return f"variables.annotations['{key}']"


def _field(path: str) -> str:
    """A CEL expression for the field's path in the object, such as `spec.template.spec.hostIPC`."""
    return f"variables.prefix + 'spec.{path}'"


def _containers(variable: str) -> str:
    return f"'container(s) ' + variables.{variable}.join(', ')"


def _validations(runtime_class: str) -> list[Json]:
    """What must hold of every fractional pod: (expression, message, message expression naming the
    field and the fix). The API server reports the first that fails, so the most specific come first."""
    fraction, memory, devices = (
        _annotation(k) for k in (FRACTION_ANNOTATION, MEMORY_ANNOTATION, NUM_DEVICES_ANNOTATION)
    )
    has = {k: f"('{k}' in variables.annotations)" for k in FRACTION_ANNOTATIONS}
    subject = "A pod that asks for a GPU fraction"
    rules: list[tuple[str, str, str]] = [
        (
            f"has(variables.spec.runtimeClassName) && variables.spec.runtimeClassName == '{runtime_class}'",
            f"{subject} has no runtimeClassName: {runtime_class}",
            f"'the pod has no runtimeClassName: {runtime_class}; set ' + {_field('runtimeClassName')} + "
            f"': {runtime_class}' + ' (gpu-fractioning enforces its share only under that runtime)'",
        ),
        (
            "size(variables.runAsUid0) == 0",
            f"{subject} runs as UID 0 (runAsUser)",
            f"{_containers('runAsUid0')} + ' run as UID 0; set runAsUser in ' + {_field('securityContext')} "
            "+ ' or the container\\'s securityContext to a non-zero UID such as 1000'",
        ),
        (
            "size(variables.mayRunAsRoot) == 0",
            f"{subject} may run as root (runAsNonRoot)",
            f"{_containers('mayRunAsRoot')} + ' may run as root; set ' + {_field('securityContext.runAsNonRoot')} "
            "+ ': true, and runAsNonRoot: false on no container'",
        ),
        (
            "size(variables.privileged) == 0",
            f"{subject} is privileged",
            f"{_containers('privileged')} + ' are privileged; remove securityContext.privileged: true'",
        ),
        (
            "size(variables.mayEscalate) == 0",
            f"{subject} allows privilege escalation (allowPrivilegeEscalation)",
            f"{_containers('mayEscalate')} + ' may escalate privileges; set "
            "securityContext.allowPrivilegeEscalation: false on each'",
        ),
        (
            "size(variables.addsCapabilities) == 0",
            f"{subject} adds capabilities (capabilities.add)",
            f"{_containers('addsCapabilities')} + ' add capabilities; remove securityContext.capabilities.add "
            "and drop ALL'",
        ),
        (
            "!(has(variables.spec.hostIPC) && variables.spec.hostIPC)",
            f"{subject} joins the node's IPC namespace (hostIPC)",
            "'the pod joins the node\\'s IPC namespace, where the MPS server and other pods\\' clients share "
            f"memory; remove ' + {_field('hostIPC')} + ': true'",
        ),
        (
            "!(has(variables.spec.hostPID) && variables.spec.hostPID)",
            f"{subject} joins the node's process namespace (hostPID)",
            "'the pod joins the node\\'s process namespace, where it can signal the MPS daemons; remove ' + "
            f"{_field('hostPID')} + ': true'",
        ),
        (
            "size(variables.pipeHostPaths) == 0",
            f"{subject} mounts a hostPath that reaches the MPS pipes",
            "'hostPath ' + variables.pipeHostPaths.join(', ') + ' reaches the MPS pipe directory "
            f"{MPS_PIPE_DIRECTORIES[0]}, or is not a canonical path; remove it from ' + {_field('volumes')} + "
            "' (gpu-fractioning hands each pod its own pipe)'",
        ),
        (
            f"!{has[FRACTION_ANNOTATION]} || ({fraction}.matches('{FRACTION_PATTERN}') && "
            f"double({fraction}) > 0.0 && double({fraction}) < 1.0)",
            f"Annotation {FRACTION_ANNOTATION} must be a number greater than 0 and smaller than 1",
            f"'annotation {FRACTION_ANNOTATION} is \"' + {fraction} + '\"; set it to a number greater than 0 and "
            'smaller than 1, such as "0.5" (KAI refuses 1 and above)\'',
        ),
        (
            f"!{has[MEMORY_ANNOTATION]} || {memory}.matches('{POSITIVE_INTEGER_PATTERN}')",
            f"Annotation {MEMORY_ANNOTATION} must be a positive whole number of MiB",
            f"'annotation {MEMORY_ANNOTATION} is \"' + {memory} + '\"; set it to a positive whole number of MiB "
            'without a unit or spaces, such as "20480"\'',
        ),
        (
            f"!{has[NUM_DEVICES_ANNOTATION]} || ({devices}.matches('{POSITIVE_INTEGER_PATTERN}') && "
            f"({has[FRACTION_ANNOTATION]} || {has[MEMORY_ANNOTATION]}))",
            f"Annotation {NUM_DEVICES_ANNOTATION} must be a positive whole number, with {FRACTION_ANNOTATION} "
            f"or {MEMORY_ANNOTATION}",
            f"'annotation {NUM_DEVICES_ANNOTATION} is \"' + {devices} + '\"; set it to a positive whole number "
            f'such as "2", together with {FRACTION_ANNOTATION} or {MEMORY_ANNOTATION}\'',
        ),
        (
            f"!({has[FRACTION_ANNOTATION]} && {has[MEMORY_ANNOTATION]})",
            f"A pod asks for both {FRACTION_ANNOTATION} and {MEMORY_ANNOTATION}",
            f"'the pod has both annotations {FRACTION_ANNOTATION} and {MEMORY_ANNOTATION}; keep one, KAI "
            "refuses the pair'",
        ),
        (
            "size(variables.wholeGpu) == 0",
            f"{subject} also asks for {GPU_RESOURCE}",
            f"{_containers('wholeGpu')} + ' ask for {GPU_RESOURCE} in a pod that asks for a GPU fraction; "
            "remove one of the two, KAI refuses the combination'",
        ),
    ]
    fractional = [
        {
            "expression": f"!variables.fractional || ({holds})",
            # Shown when the message expression itself cannot be evaluated.
            "message": f"{message}.",
            "messageExpression": message_expression,
        }
        for holds, message, message_expression in rules
    ]
    # Every other pod that asks for a GPU resource needs the runtime class too (fractional pods met the
    # first rule already); a system daemon's pod in a namespace the program labels may go without.
    gpu_pod = {
        "expression": (
            "variables.fractional || size(variables.gpuContainers) == 0 || variables.systemNamespace || "
            f"(has(variables.spec.runtimeClassName) && variables.spec.runtimeClassName == '{runtime_class}')"
        ),
        "message": f"A pod that asks for a GPU has no runtimeClassName: {runtime_class}.",
        "messageExpression": (
            f"{_containers('gpuContainers')} + ' ask for a GPU ({GPU_RESOURCE}, {GPU_RESOURCE}.*, "
            f"nvidia.com/mig-*) and the pod has no runtimeClassName: {runtime_class}; set ' + "
            f"{_field('runtimeClassName')} + "
            f"': {runtime_class}' + ' (without the NVIDIA runtime its containers get no driver libraries)'"
        ),
    }
    return [*fractional, gpu_pod]


def admission_policy(runtime_class: str) -> Json:
    """The ValidatingAdmissionPolicy, as the API server takes it."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY_NAME},
        "spec": {
            # An expression that cannot be evaluated refuses the object rather than letting it through.
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": list(resources),
                    }
                    for group, resources in MATCHED_RESOURCES
                ]
            },
            "variables": _variables(),
            "validations": _validations(runtime_class),
        },
    }


def admission_binding(mode: AdmissionMode) -> Json:
    """The binding that puts the policy in force in every namespace: no namespace is skipped, the
    system namespaces included (the policy itself exempts their daemons' non-fractional GPU pods from
    the runtime class, and nothing else)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY_NAME},
        "spec": {"policyName": POLICY_NAME, "validationActions": VALIDATION_ACTIONS[mode]},
    }


class FractionAdmission(pulumi.ComponentResource):
    """The policy and its binding; with `exempt_namespaces`, labels those existing namespaces (whose
    system daemons this stack does not install) as system namespaces too."""

    policy: k8s.admissionregistration.v1.ValidatingAdmissionPolicy
    binding: k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding

    def __init__(
        self,
        name: str,
        *,
        runtime_class: str,
        mode: AdmissionMode,
        exempt_namespaces: tuple[str, ...] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kai-gpu-fractions:admission:FractionAdmission", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        policy, binding = admission_policy(runtime_class), admission_binding(mode)
        self.policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            f"{name}-policy", metadata=policy["metadata"], spec=policy["spec"], opts=child
        )
        labels = [
            k8s.core.v1.NamespacePatch(
                f"{name}-exempt-{namespace}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=namespace, labels=SYSTEM_NAMESPACE_LABELS),
                opts=child,
            )
            for namespace in exempt_namespaces
        ]
        # The binding puts the policy in force: only once it exists and the exemptions are in place.
        self.binding = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            f"{name}-binding",
            metadata=binding["metadata"],
            spec=binding["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.policy, *labels]),
        )
        self.register_outputs({})
