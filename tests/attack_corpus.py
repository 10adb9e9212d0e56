"""An attacker's corpus for both enforcers of the guide's pod rules, larger than the shared case table
and generated rather than listed: every way of asking for a fraction, every place a pod spec can hide
(built-in workloads and the custom resources teams run), and every way past a rule the table's cases
suggest (a field left unset, moved to another container, spelt differently, a path written another
way), each applied to a compliant fractional pod. Compliant variants of the same pods measure false
positives.

    from tests.attack_corpus import corpus, measured
    entries = corpus("admission")
    refused = {...}  # each entry a tier refused (entry.case is a GuideCase), and by whom
    assert measured("admission", entries, refused) == []

What an enforcer lets through on purpose or cannot see is written down in
tests/fixtures/attack-corpus/gaps.yaml; `measured` finds any other miss, a recorded gap that is now
refused, a refused compliant entry, and a README whose figures are not the tier's (`figures`).
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from tests.guide_rules import ENFORCERS, Enforcer, GuideCase, Namespace

GAPS = Path(__file__).parent / "fixtures" / "attack-corpus" / "gaps.yaml"
QUEUE = {"kai.scheduler/queue": "default-queue"}
LOCKED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
Spec = dict[str, Any]


def _container(name: str = "main") -> dict[str, Any]:
    return {
        "name": name,
        "image": "busybox:1.37",
        "command": ["sleep", "3600"],
        "securityContext": copy.deepcopy(LOCKED),
    }


def compliant_spec() -> Spec:
    return {
        "schedulerName": "kai-scheduler",
        "runtimeClassName": "nvidia",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
        "containers": [_container()],
    }


# How a pod asks KAI for a fraction: the annotations on its template.
FORMS: dict[str, dict[str, str]] = {
    "fraction": {"gpu-fraction": "0.5"},
    "fraction-quarter": {"gpu-fraction": "0.25"},
    "memory": {"gpu-memory": "4096"},
    "fraction-on-two-devices": {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"},
    "container-memory-request": {"nvidia.com/container.main.gpu-memory.request": "10240"},
    "container-memory-limit": {"nvidia.com/container.main.gpu-memory.limit": "10240"},
}


def _set(path: str, value: Any) -> Callable[[Spec, dict[str, str]], None]:
    def apply(spec: Spec, _annotations: dict[str, str]) -> None:
        *parents, last = path.split(".")
        node: Any = spec
        for key in parents:
            node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(value)

    return apply


def _add_container(kind: str, **security: Any) -> Callable[[Spec, dict[str, str]], None]:
    def apply(spec: Spec, _annotations: dict[str, str]) -> None:
        extra = _container("helper")
        extra["securityContext"] = {**copy.deepcopy(LOCKED), **security}
        spec.setdefault(kind, []).append(extra)

    return apply


def _host_path(path: str) -> Callable[[Spec, dict[str, str]], None]:
    def apply(spec: Spec, _annotations: dict[str, str]) -> None:
        spec["volumes"] = [{"name": "host", "hostPath": {"path": path}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "host", "mountPath": "/host"}]

    return apply


def _annotation(key: str, value: str, drop: tuple[str, ...] = ()) -> Callable[[Spec, dict[str, str]], None]:
    def apply(_spec: Spec, annotations: dict[str, str]) -> None:
        for dropped in drop:
            annotations.pop(dropped, None)
        annotations[key] = value

    return apply


def _fraction_with(
    replaced: Mapping[str, str], limits: Mapping[str, str] | None = None
) -> Callable[[Spec, dict[str, str]], None]:
    """KAI's own fraction annotations, replacing the form's, and optionally a resource limit."""

    def apply(spec: Spec, annotations: dict[str, str]) -> None:
        annotations.clear()
        annotations.update(replaced)
        if limits:
            spec["containers"][0]["resources"] = {"limits": dict(limits)}

    return apply


def _persistent_volume(spec: Spec, _annotations: dict[str, str]) -> None:
    spec["volumes"] = [{"name": "pipes", "persistentVolumeClaim": {"claimName": "node-run"}}]


@dataclass(frozen=True)
class Technique:
    name: str
    rule: str
    apply: Callable[[Spec, dict[str, str]], None]
    # A value-only technique replaces the fraction form's annotations; others keep them.
    value_only: bool = False


FRACTION_KEYS = tuple(sorted({key for form in FORMS.values() for key in form}))
ATTACKS: tuple[Technique, ...] = (
    Technique("pod-security-context-removed", "non-root", _set("securityContext", None)),
    Technique("pod-run-as-user-only", "non-root", _set("securityContext", {"runAsUser": 1000})),
    Technique("pod-run-as-user-0", "non-root", _set("securityContext.runAsUser", 0)),
    Technique("pod-run-as-non-root-false", "non-root", _set("securityContext.runAsNonRoot", False)),
    Technique("container-run-as-user-0", "non-root", _set("containers.0.securityContext.runAsUser", 0)),
    Technique("container-run-as-non-root-false", "non-root", _set("containers.0.securityContext.runAsNonRoot", False)),
    Technique("root-sidecar", "non-root", _add_container("containers", runAsUser=0)),
    Technique("root-init-container", "non-root", _add_container("initContainers", runAsUser=0)),
    Technique("no-runtime-class", "runtime-class", _set("runtimeClassName", None)),
    Technique("runc-runtime-class", "runtime-class", _set("runtimeClassName", "runc")),
    Technique("empty-runtime-class", "runtime-class", _set("runtimeClassName", "")),
    # The API server refuses privileged: true beside allowPrivilegeEscalation: false; an attacker leaves it out.
    Technique("privileged", "privilege", _set("containers.0.securityContext", {"privileged": True})),
    Technique("escalation-allowed", "privilege", _set("containers.0.securityContext.allowPrivilegeEscalation", True)),
    Technique(
        "escalation-left-unset", "privilege", _set("containers.0.securityContext.allowPrivilegeEscalation", None)
    ),
    Technique("container-security-context-removed", "privilege", _set("containers.0.securityContext", None)),
    Technique(
        "capability-sys-admin", "privilege", _set("containers.0.securityContext.capabilities.add", ["SYS_ADMIN"])
    ),
    Technique("capability-all", "privilege", _set("containers.0.securityContext.capabilities.add", ["ALL"])),
    Technique(
        "capability-lower-case", "privilege", _set("containers.0.securityContext.capabilities.add", ["sys_ptrace"])
    ),
    Technique(
        "capability-prefixed", "privilege", _set("containers.0.securityContext.capabilities.add", ["CAP_SYS_ADMIN"])
    ),
    Technique(
        "privileged-init-container",
        "privilege",
        _add_container("initContainers", privileged=True, allowPrivilegeEscalation=True),
    ),
    Technique("escalating-sidecar", "privilege", _add_container("containers", allowPrivilegeEscalation=True)),
    Technique("host-ipc", "host-namespaces", _set("hostIPC", True)),
    Technique("host-pid", "host-namespaces", _set("hostPID", True)),
    *(
        Technique(f"host-path-{label}", "mps-pipe", _host_path(path))
        for label, path in (
            ("pipe-directory", "/run/nvidia-mps"),
            ("trailing-slash", "/run/nvidia-mps/"),
            ("double-slash", "/run//nvidia-mps"),
            ("leading-double-slash", "//run/nvidia-mps"),
            ("dot-segment", "/run/./nvidia-mps"),
            ("trailing-dot", "/run/nvidia-mps/."),
            ("var-run", "/var/run/nvidia-mps"),
            ("var-double-slash-run", "/var//run/nvidia-mps"),
            ("relative", "run/nvidia-mps"),
            ("control-socket", "/run/nvidia-mps/control"),
            ("run", "/run"),
            ("var-run-parent", "/var/run"),
            ("var", "/var"),
            ("root", "/"),
        )
    ),
    Technique("pipes-through-a-persistent-volume", "mps-pipe", _persistent_volume),
    *(
        Technique(f"fraction-{label}", "valid-fraction", _annotation("gpu-fraction", value, FRACTION_KEYS), True)
        for label, value in (
            ("one", "1"),
            ("one-point-zero", "1.0"),
            ("exponent-of-one", "1e0"),
            ("zero", "0"),
            ("negative", "-0.5"),
            ("above-one", "1.5"),
            ("word", "half"),
            ("nan", "NaN"),
            ("infinity", "Inf"),
            ("hex-float", "0x1p-1"),
            ("leading-space", " 0.5"),
            ("trailing-space", "0.5 "),
            ("percent", "50%"),
            ("comma", "0,5"),
            ("empty", ""),
        )
    ),
    *(
        Technique(f"memory-{label}", "valid-fraction", _annotation("gpu-memory", value, FRACTION_KEYS), True)
        for label, value in (("zero", "0"), ("negative", "-1"), ("decimal", "1.5"), ("unit", "4Gi"), ("empty", ""))
    ),
    *(
        Technique(f"devices-{label}", "valid-fraction", _annotation("gpu-fraction-num-devices", value), False)
        for label, value in (("zero", "0"), ("negative", "-1"), ("word", "two"))
    ),
    Technique(
        "fraction-and-memory", "valid-fraction", _fraction_with({"gpu-fraction": "0.5", "gpu-memory": "4096"}), True
    ),
    Technique(
        "fraction-and-a-whole-gpu",
        "valid-fraction",
        _fraction_with({"gpu-fraction": "0.5"}, {"nvidia.com/gpu": "1"}),
        True,
    ),
    Technique(
        "memory-and-a-whole-gpu",
        "valid-fraction",
        _fraction_with({"gpu-memory": "4096"}, {"nvidia.com/gpu": "1"}),
        True,
    ),
)
# Whole or shared GPUs without a fraction: only the runtime class is asked of them.
GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb.shared")
# Values KAI parses as a fraction between 0 and 1 (strconv.ParseFloat), however they are spelt.
VALID_FRACTIONS = {"leading-point": ".5", "exponent": "5e-1", "plus-sign": "+0.5", "trailing-zero": "0.50"}


def _template(spec: Spec, annotations: Mapping[str, str], app: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": {"app": app, **QUEUE}}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"metadata": metadata, "spec": spec}


def _job_spec(spec: Spec) -> Spec:
    return {**spec, "restartPolicy": "Never"}


def _selected(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"selector": {"matchLabels": {"app": name}}, "template": template, **spec}


def _wrap(kind: str, name: str, spec: Spec, annotations: Mapping[str, str]) -> dict[str, Any]:
    """A Kubernetes object of `kind` whose pods run `spec` with `annotations`."""
    pod = _template(spec, annotations, name)
    job = _template(_job_spec(spec), annotations, name)
    objects: dict[str, tuple[str, dict[str, Any]]] = {
        "Pod": ("v1", {"metadata": {"name": name, **pod["metadata"]}, "spec": spec}),
        "PodTemplate": ("v1", {"metadata": {"name": name}, "template": pod}),
        "ReplicationController": (
            "v1",
            {"metadata": {"name": name}, "spec": {"selector": {"app": name}, "template": pod}},
        ),
        "Deployment": ("apps/v1", {"metadata": {"name": name}, "spec": _selected(name, pod)}),
        "ReplicaSet": ("apps/v1", {"metadata": {"name": name}, "spec": _selected(name, pod)}),
        "StatefulSet": ("apps/v1", {"metadata": {"name": name}, "spec": _selected(name, pod, serviceName=name)}),
        "DaemonSet": ("apps/v1", {"metadata": {"name": name}, "spec": _selected(name, pod)}),
        "Job": ("batch/v1", {"metadata": {"name": name}, "spec": {"template": job}}),
        "CronJob": (
            "batch/v1",
            {"metadata": {"name": name}, "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": job}}}},
        ),
        "PyTorchJob": (
            "kubeflow.org/v1",
            {"metadata": {"name": name}, "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": job}}}},
        ),
        "MPIJob": (
            "kubeflow.org/v2beta1",
            {"metadata": {"name": name}, "spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2, "template": job}}}},
        ),
        "RayCluster": (
            "ray.io/v1",
            {
                "metadata": {"name": name},
                "spec": {
                    "headGroupSpec": {"template": _template({"containers": [_container("head")]}, {}, name)},
                    "workerGroupSpecs": [{"groupName": "gpu", "template": pod}],
                },
            },
        ),
        "JobSet": (
            "jobset.x-k8s.io/v1alpha2",
            {
                "metadata": {"name": name},
                "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": job}}}]},
            },
        ),
        "LeaderWorkerSet": (
            "leaderworkerset.x-k8s.io/v1",
            {"metadata": {"name": name}, "spec": {"leaderWorkerTemplate": {"size": 2, "workerTemplate": pod}}},
        ),
        "Service": ("serving.knative.dev/v1", {"metadata": {"name": name}, "spec": {"template": pod}}),
        # Pod specs without a template around them: fields of the pod spec inline, or a bare spec.
        "InferenceService": (
            "serving.kserve.io/v1beta1",
            {
                "metadata": {"name": name, "labels": QUEUE, "annotations": dict(annotations)},
                "spec": {"predictor": spec},
            },
        ),
        "DynamoGraphDeployment": (
            "nvidia.com/v1alpha1",
            {
                "metadata": {"name": name},
                "spec": {
                    "services": {"worker": {"labels": QUEUE, "annotations": dict(annotations), "extraPodSpec": spec}}
                },
            },
        ),
    }
    api_version, body = objects[kind]
    return {"apiVersion": api_version, "kind": kind, **copy.deepcopy(body)}


BUILT_IN = (
    "Pod",
    "PodTemplate",
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
)
CUSTOM = (
    "PyTorchJob",
    "MPIJob",
    "RayCluster",
    "JobSet",
    "LeaderWorkerSet",
    "Service",
    "InferenceService",
    "DynamoGraphDeployment",
)
CUSTOM_BLIND = {
    "admission": "a custom resource is admitted as itself; its operator's pods are admitted when it makes them"
}
# The namespaces the exemption entries run in, as the stack or the platform team labels them.
SYSTEM = Namespace("kgf-corpus-system", {"kai-gpu-fractions/system-namespace": "true"})
ALMOST_SYSTEM = Namespace("kgf-corpus-yes", {"kai-gpu-fractions/system-namespace": "yes"})


@dataclass(frozen=True)
class Entry:
    case: GuideCase
    technique: str
    wrapper: str


def _entry(
    name: str,
    technique: str,
    rule: str,
    expect: Literal["deny", "allow"],
    kind: str,
    spec: Spec,
    annotations: Mapping[str, str],
    namespace: Namespace | None = None,
) -> Entry:
    name = f"{name}-{kind.lower()}"
    custom = kind in CUSTOM
    case = GuideCase(
        case=f"corpus-{name}",
        rule=rule,
        expect=expect,
        token=None,
        enforcers=("pack",) if custom else ENFORCERS,
        blind=CUSTOM_BLIND if custom else {},
        namespace=namespace,
        manifest=_wrap(kind, f"c-{zlib.crc32(name.encode()):08x}", spec, annotations),
        source="attack-corpus",
    )
    return Entry(case, technique, kind)


def _attacked(technique: Technique, form: str) -> tuple[Spec, dict[str, str]]:
    spec, annotations = compliant_spec(), dict(FORMS[form])
    technique.apply(spec, annotations)
    return spec, annotations


def _generate() -> Iterable[Entry]:
    forms = list(FORMS)
    for index, technique in enumerate(ATTACKS):
        for offset, kind in enumerate(BUILT_IN + CUSTOM):
            form = forms[(index + offset) % len(forms)]
            yield _entry(technique.name, technique.name, technique.rule, "deny", kind, *_attacked(technique, form))
    for form in forms:
        for technique in ATTACKS:
            if not technique.value_only:
                name = f"{technique.name}-{form}"
                yield _entry(name, technique.name, technique.rule, "deny", "Pod", *_attacked(technique, form))
        for kind in BUILT_IN + CUSTOM:
            yield _entry(f"compliant-{form}", "compliant", "compliant", "allow", kind, compliant_spec(), FORMS[form])
    for label, value in VALID_FRACTIONS.items():
        name = f"compliant-fraction-{label}"
        yield _entry(name, "compliant", "compliant", "allow", "Pod", compliant_spec(), {"gpu-fraction": value})
    for resource in GPU_RESOURCES:
        bare = {"containers": [{**_container(), "resources": {"limits": {resource: "1"}}}]}
        label = resource.split("/")[1].replace(".", "-")
        for kind in BUILT_IN:
            name = f"gpu-{label}-without-runtime-class"
            yield _entry(name, "gpu-without-runtime-class", "gpu-runtime-class", "deny", kind, bare, {})
            with_class = {**bare, "runtimeClassName": "nvidia"}
            yield _entry(f"compliant-gpu-{label}", "compliant", "compliant", "allow", kind, with_class, {})
        yield _entry(f"gpu-{label}-daemon", "gpu-daemon", "exemption", "allow", "Pod", bare, {}, SYSTEM)
        name = f"gpu-{label}-daemon-label-yes"
        yield _entry(name, "gpu-daemon-label-yes", "exemption", "deny", "Pod", bare, {}, ALMOST_SYSTEM)
    amd = {"containers": [{**_container(), "resources": {"limits": {"amd.com/gpu": "1"}}}]}
    yield _entry("compliant-amd-gpu", "compliant", "compliant", "allow", "Pod", amd, {})
    for technique in ATTACKS:
        if technique.rule in ("non-root", "runtime-class", "privilege", "host-namespaces"):
            spec, annotations = _attacked(technique, "fraction")
            name = f"{technique.name}-in-a-system-namespace"
            yield _entry(name, technique.name, "exemption", "deny", "Pod", spec, annotations, SYSTEM)


def corpus(enforcer: Enforcer | None = None) -> list[Entry]:
    """Every entry, or those `enforcer` runs."""
    entries = list(_generate())
    names = [entry.case.case for entry in entries]
    if len(names) != len(set(names)):
        raise ValueError("two corpus entries share a name")
    return [entry for entry in entries if enforcer is None or enforcer in entry.case.enforcers]


@dataclass(frozen=True)
class Gap:
    tier: str
    technique: str | None
    wrapper: str | None
    why: str

    def covers(self, entry: Entry) -> bool:
        return (self.technique is None or entry.technique == self.technique) and (
            self.wrapper is None or entry.wrapper == self.wrapper
        )


def gaps(enforcer: Enforcer) -> list[Gap]:
    raw = yaml.safe_load(GAPS.read_text())["gaps"]
    return [
        Gap(enforcer, item.get("technique"), item.get("wrapper"), item["why"])
        for item in raw
        if enforcer in item["tiers"]
    ]


def expected_misses(enforcer: Enforcer, entries: list[Entry]) -> set[str]:
    """The attack entries `enforcer` is recorded to let through."""
    known = gaps(enforcer)
    return {e.case.case for e in entries if e.case.expect == "deny" and any(g.covers(e) for g in known)}


def figures(enforcer: Enforcer, entries: list[Entry], refused: Mapping[str, str]) -> str:
    """The README's row for `enforcer`: `refused` maps each refused entry to who refused it."""
    attacks = [e for e in entries if e.case.expect == "deny"]
    allowed = [e for e in entries if e.case.expect == "allow"]
    stopped = [e for e in attacks if e.case.case in refused]
    by_server = [e for e in stopped if refused[e.case.case] == "api-server"]
    false_positives = [e for e in allowed if e.case.case in refused]
    techniques = len({e.technique for e in attacks if e.case.case not in refused})
    server = str(len(by_server)) if enforcer == "admission" else "-"
    return (
        f"| {enforcer} | {len(attacks)} | {len(stopped)} | {server} | {len(attacks) - len(stopped)} "
        f"({techniques} technique{'' if techniques == 1 else 's'}) | {len(allowed)} | {len(false_positives)} |"
    )


README = Path(__file__).resolve().parents[1] / "README.md"


def measured(enforcer: Enforcer, entries: list[Entry], refused: Mapping[str, str]) -> list[str]:
    """What is wrong with a tier's measurement of the corpus, or nothing; prints its README row."""
    row = figures(enforcer, entries, refused)
    print(row)  # noqa: T201
    missed = {e.case.case for e in entries if e.case.expect == "deny" and e.case.case not in refused}
    expected = expected_misses(enforcer, entries)
    problems = [
        f"compliant entry refused: {e.case.case}"
        for e in entries
        if e.case.expect == "allow" and e.case.case in refused
    ]
    problems += [f"let through, and gaps.yaml does not record it: {case}" for case in sorted(missed - expected)]
    problems += [f"refused now, remove its gap from gaps.yaml: {case}" for case in sorted(expected - missed)]
    if row not in README.read_text():
        problems.append(f"the README's figures are not {enforcer}'s: {row}")
    return problems
