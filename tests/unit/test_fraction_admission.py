"""The fractional-pod admission policy under mocks: what both profiles install, in which order, what
the admission profile installs alone, its config, and its gate's decisions.

What the policy refuses is decided by the API server; the integration tier runs the shared case
table (tests/fixtures/guide-rules) against the real one.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest

from components.cluster.protocol import DryRun
from components.config.load import ConfigError, parse_config
from components.gates import admission as decide
from components.gates.admission import admission_probe
from components.gates.spec import GateSpec
from components.gates.steps import STEPS
from components.gpu_cluster.fraction_admission import MATCHED_RESOURCES, admission_binding, admission_policy
from components.vocabulary import fractions, nvidia
from tests.unit.fake_cluster import FakeCluster
from tests.unit.harness import POD, STEP_GATE, ProgramRunner

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"
FORK: dict[str, Any] = {"registry": {"server": "registry.example.com/team/kai-fork"}}
LAB: dict[str, Any] = {"profile": "lab"}
ADMISSION_ONLY: dict[str, Any] = {"profile": "admission"}


@pytest.mark.parametrize("config", [FORK, LAB], ids=["fork", "lab"])
def test_both_profiles_put_the_policy_in_force_before_any_fractional_pod(
    run_program: ProgramRunner, config: dict[str, Any]
) -> None:
    engine, _ = run_program(config)
    policy, binding = engine.one(POLICY, "fraction-admission-policy"), engine.one(BINDING, "fraction-admission-binding")
    assert binding.inputs["spec"]["validationActions"] == ["Deny"], "deny is the default"
    assert engine.waits_for(binding, policy), "the binding puts in force a policy that exists"
    gate = engine.one(STEP_GATE, "fraction-admission-ready")
    assert engine.waits_for(gate, binding)
    pods = engine.created(POD)
    assert pods and all(engine.waits_for(pod, gate) for pod in pods), "every pod the stack creates meets the policy"


def test_the_admission_profile_installs_the_policy_and_nothing_else(run_program: ProgramRunner) -> None:
    engine, outputs = run_program({**ADMISSION_ONLY, "admission": {"exemptNamespaces": ["gpu-operator"]}})
    kinds = {r.type for r in engine.registrations if r.type.startswith("kubernetes:")}
    assert kinds == {POLICY, BINDING, NAMESPACE_PATCH}
    patch = engine.one(NAMESPACE_PATCH, "fraction-admission-exempt-gpu-operator")
    assert patch.inputs["metadata"] == {"name": "gpu-operator", "labels": fractions.SYSTEM_NAMESPACE_LABELS}
    assert engine.waits_for(engine.one(BINDING, "fraction-admission-binding"), patch), (
        "the existing system namespaces are exempt before the policy is in force"
    )
    assert set(outputs) == {"admission"}


@pytest.mark.parametrize(("mode", "actions"), [("deny", ["Deny"]), ("warn", ["Warn"]), ("audit", ["Audit"])])
def test_the_mode_is_the_bindings_validation_action(run_program: ProgramRunner, mode: str, actions: list[str]) -> None:
    engine, _ = run_program({**ADMISSION_ONLY, "admission": {"mode": mode}})
    assert engine.one(BINDING, "fraction-admission-binding").inputs["spec"]["validationActions"] == actions
    assert engine.one(STEP_GATE, "fraction-admission-ready").inputs["admission_mode"] == mode


def test_switched_off_it_installs_nothing_and_says_so(
    run_program: ProgramRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    warned: list[str] = []
    import pulumi

    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    engine, _ = run_program({**FORK, "admission": {"enabled": False}})
    assert engine.created(POLICY) == [] and engine.created(BINDING) == []
    assert any("admission.enabled is false" in w for w in warned), warned
    assert engine.created(POD), "the smoke pods still go in"


def test_the_binding_skips_no_namespace() -> None:
    """A fractional pod is held to the guide's rules in every namespace, the stack's own included: the
    binding selects no namespaces, and the policy alone decides the one exemption it makes."""
    spec = admission_binding("deny")["spec"]
    assert "matchResources" not in spec, "no namespaceSelector: a labelled namespace is matched like any other"
    validations = admission_policy("nvidia")["spec"]["validations"]
    exempting = [v["expression"] for v in validations if "variables.systemNamespace" in v["expression"]]
    assert exempting == [validations[-1]["expression"]], "only the non-fractional GPU pod rule reads the label"
    assert exempting[0].startswith("variables.fractional || "), "and a fractional pod never gets the exemption"


def test_the_case_table_refuses_a_root_fraction_in_every_namespace_the_program_creates() -> None:
    """Each namespace either profile creates (and labels as a system namespace) has a deny case of a
    root fractional pod that both tiers run, labelled as the program labels it."""
    from components.vocabulary.kai import RESERVATION_NAMESPACE
    from tests.guide_rules import all_cases

    owned = {RESERVATION_NAMESPACE}
    for config in (FORK, LAB):
        owned |= parse_config(config).created_namespaces
    refused = {
        case.namespace.name
        for case in all_cases()
        if case.rule == "exemption"
        and case.expect == "deny"
        and case.namespace is not None
        and case.namespace.labels.get(fractions.SYSTEM_NAMESPACE_LABEL) == "true"
        and set(case.enforcers) == {"pack", "admission"}
        and case.token in ("runAsNonRoot", "runAsUser")
    }
    assert owned <= refused, f"no root-fraction case in {sorted(owned - refused)}"


def test_the_policy_sees_every_built_in_kind_that_carries_a_pod_and_fails_closed() -> None:
    spec = admission_policy("nvidia")["spec"]
    assert spec["failurePolicy"] == "Fail", "an expression that cannot be evaluated refuses"
    resources = {
        (g, r)
        for rule in spec["matchConstraints"]["resourceRules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert resources == {(group, r) for group, plural in MATCHED_RESOURCES for r in plural}
    assert {("", "pods/ephemeralcontainers"), ("", "replicationcontrollers"), ("batch", "cronjobs")} <= resources
    assert all(rule["operations"] == ["CREATE", "UPDATE"] for rule in spec["matchConstraints"]["resourceRules"])
    *fractional, gpu_pod = spec["validations"]
    assert all(v["expression"].startswith("!variables.fractional || (") for v in fractional)
    assert "runtimeClassName == 'nvidia'" in gpu_pod["expression"], "every other GPU pod needs the class too"
    assert all(v["messageExpression"] and v["message"] for v in spec["validations"])


def test_the_configured_runtime_class_is_the_one_asked_for() -> None:
    spec = admission_policy("nvidia-cdi")["spec"]
    assert "runtimeClassName == 'nvidia-cdi'" in spec["validations"][0]["expression"]


def test_namespaces_the_stack_creates_carry_the_system_label(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    namespaces = [n for n in engine.created("kubernetes:core/v1:Namespace")]
    assert namespaces and all(
        n.inputs["metadata"]["labels"][fractions.SYSTEM_NAMESPACE_LABEL] == "true" for n in namespaces
    )


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({**LAB, "admission": {"runtimeClass": "runc"}}, "admission.runtimeClass", "kai.binderRuntimeClass (nvidia)"),
        (
            {**LAB, "admission": {"exemptNamespaces": ["kai-scheduler"]}},
            "admission.exemptNamespaces[0]",
            "a namespace this stack creates",
        ),
        ({**LAB, "admission": {"mode": "block"}}, "admission.mode", "'deny', 'warn' or 'audit'"),
        ({**LAB, "admission": {"exemptNamespaces": ["a", "a"]}}, "admission.exemptNamespaces", "more than once"),
        (
            {**LAB, "admission": {"exemptNamespaces": ["gpu-operator", "Kube_System"]}},
            "admission.exemptNamespaces[1]",
            "DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit; "
            'for example: "gpu-operator"',
        ),
    ],
)
def test_bad_admission_config_names_the_key_and_the_fix(config: dict[str, Any], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(config)
    assert f"kai-gpu-fractions:{key}:" in str(error.value) and reason in str(error.value), str(error.value)


def test_an_explicit_runtime_class_that_agrees_with_kai_is_accepted() -> None:
    config = parse_config(
        {**LAB, "kai": {"binderRuntimeClass": "nvidia-cdi"}, "admission": {"runtimeClass": "nvidia-cdi"}}
    )
    assert config.fraction_runtime_class == "nvidia-cdi"
    assert parse_config({**LAB, "kai": {"binderRuntimeClass": "nvidia-cdi"}}).fraction_runtime_class == "nvidia-cdi"


# ---------------------------------------------------------------- the gate

POLICY_OBJECT = {"metadata": {"name": fractions.POLICY_NAME, "generation": 2}, "status": {"observedGeneration": 2}}
BINDING_OBJECT = {"metadata": {"name": fractions.POLICY_NAME}, "spec": {"validationActions": ["Deny"]}}
REFUSED = (
    f"pods \"kgf-admission-probe-x\" is invalid: : ValidatingAdmissionPolicy '{fractions.POLICY_NAME}' with "
    "binding 'x' denied request: the pod has no runtimeClassName: nvidia"
)


def test_the_gate_holds_once_the_policy_is_compiled_bound_and_refusing() -> None:
    assert decide.decide_admission_objects(POLICY_OBJECT, BINDING_OBJECT, "deny").passed
    assert decide.decide_admission_refusal(DryRun(REFUSED), "deny").passed


@pytest.mark.parametrize(
    ("policy", "binding", "mode", "says"),
    [
        (None, BINDING_OBJECT, "deny", "no policy"),
        (POLICY_OBJECT, None, "deny", "no binding"),
        (POLICY_OBJECT, BINDING_OBJECT, "warn", "not ['Warn']"),
        ({**POLICY_OBJECT, "status": {"observedGeneration": 1}}, BINDING_OBJECT, "deny", "not compiled generation 2"),
        (
            {
                **POLICY_OBJECT,
                "status": {
                    "observedGeneration": 2,
                    "typeChecking": {"expressionWarnings": [{"warning": "no such key"}]},
                },
            },
            BINDING_OBJECT,
            "deny",
            "does not type-check: no such key",
        ),
    ],
)
def test_the_gate_waits_for_the_policy_and_its_binding(
    policy: dict[str, Any] | None, binding: dict[str, Any] | None, mode: str, says: str
) -> None:
    result = decide.decide_admission_objects(policy, binding, mode)
    assert not result.passed and says in result.detail, result.detail


# As the API server words a Warn binding's failed validation (k8s.io/apiserver v0.37.2
# pkg/admission/plugin/policy/validating/dispatcher.go:254).
WARNED = (
    f"Validation failed for ValidatingAdmissionPolicy '{fractions.POLICY_NAME}' with binding "
    f"'{fractions.POLICY_NAME}': container(s) main run as UID 0"
)
OTHER_WARNING = "Validation failed for ValidatingAdmissionPolicy 'team-policy' with binding 'team': no owner label"


def test_in_deny_mode_only_the_policys_own_refusal_counts() -> None:
    assert "admitted" in decide.decide_admission_refusal(DryRun(None), "deny").detail
    other = decide.decide_admission_refusal(DryRun('pod rejected: RuntimeClass "nvidia" not found'), "deny")
    assert not other.passed and "refused by something else" in other.detail
    assert not decide.decide_admission_refusal(DryRun(None, (WARNED,)), "deny").passed, "a warning is not in force"


@pytest.mark.parametrize(
    ("dry_run", "mode", "passed"),
    [
        (DryRun(None, (WARNED,)), "warn", True),
        (DryRun(None, (OTHER_WARNING, WARNED)), "warn", True),
        # The binding just moved from audit (or deny) to warn: the API server still runs the old one.
        (DryRun(None), "warn", False),
        (DryRun(None, (OTHER_WARNING,)), "warn", False),
        (DryRun(REFUSED), "warn", False),
        (DryRun(None), "audit", True),
        (DryRun(None, (OTHER_WARNING,)), "audit", True),
        # The binding just moved from warn to audit: the API server still warns.
        (DryRun(None, (WARNED,)), "audit", False),
        (DryRun(REFUSED), "audit", False),
    ],
)
def test_in_warn_and_audit_mode_the_gate_holds_once_the_answer_is_the_modes(
    dry_run: DryRun, mode: str, passed: bool
) -> None:
    assert decide.decide_admission_refusal(dry_run, mode).passed is passed


def test_the_gate_probes_with_a_dry_run_of_a_root_fractional_pod_in_default() -> None:
    cluster = FakeCluster(refusals={"pods": REFUSED})
    cluster.put("validatingadmissionpolicies.admissionregistration.k8s.io", POLICY_OBJECT)
    cluster.put("validatingadmissionpolicybindings.admissionregistration.k8s.io", BINDING_OBJECT)
    spec = GateSpec("fraction-admission", "default", 60, admission_mode="deny")
    results = STEPS["fraction-admission"].checks(cluster, spec)
    assert [r.passed for r in results] == [True, True]
    ((api_version, plural, namespace, manifest),) = cluster.dry_runs
    assert (api_version, plural, namespace) == ("v1", "pods", "default")
    assert manifest == admission_probe()
    assert "runtimeClassName" not in manifest["spec"], "the RuntimeClass plugin must not answer first"
    assert fractions.FRACTION_ANNOTATION in manifest["metadata"]["annotations"]


def readme_admission_config() -> dict[str, Any]:
    """The stack config the README's admission-profile commands leave, read as `pulumi config set`
    (with `--path`) writes it."""
    from tests.unit.test_readme_commands import REPO

    readme = (REPO / "README.md").read_text()
    section = readme.split("### Only the admission policy, on an existing cluster", 1)[1].split("\n#", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    config: dict[str, Any] = {}
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words[:3] != ["pulumi", "config", "set"]:
            continue
        path = "--path" in words
        key, value = [w for w in words[3:] if w != "--path"]
        if not path:
            config[key] = value
            continue
        steps = re.findall(r"[^.\[\]]+|\[\d+\]", key)
        target: Any = config
        for step, following in zip(steps, [*steps[1:], None], strict=True):
            slot: Any = int(step[1:-1]) if step.startswith("[") else step
            if following is None:
                if isinstance(target, list):
                    target.append(value)
                else:
                    target[slot] = value
            else:
                empty: Any = [] if following.startswith("[") else {}
                if isinstance(target, list):
                    target.append(empty)
                    target = target[-1]
                else:
                    target = target.setdefault(slot, empty)
    return config


def test_the_readmes_admission_profile_commands_make_a_valid_stack(run_program: ProgramRunner) -> None:
    config = readme_admission_config()
    parsed = parse_config(config)
    assert parsed.profile == "admission" and parsed.admission.mode == "warn"
    assert parsed.admission.exempt_namespaces == [
        "gpu-operator",
        "kai-scheduler",
        "gpu-fractioning",
        "kai-resource-reservation",
    ], "KAI's reservation pods ask for a GPU without the runtime class"
    engine, _ = run_program(config)
    assert len(engine.created(NAMESPACE_PATCH)) == 4


def readme_rule_table() -> dict[str, set[str]]:
    """The README's rule table: each rule and the enforcers it says hold it."""
    from tests.unit.test_readme_commands import REPO

    section = (REPO / "README.md").read_text().split("### Rule by rule: who enforces what", 1)[1]
    rows = re.findall(r"^\| `([a-z-]+)` \|[^|]*\| (yes|no) \| (yes|no) \|$", section, re.M)
    return {
        rule: {e for e, says in (("admission", admission), ("pack", pack)) if says == "yes"}
        for rule, admission, pack in rows
    }


def test_the_readmes_rule_table_is_what_the_case_table_runs() -> None:
    from tests.guide_rules import RULES, all_cases

    covered: dict[str, set[str]] = {}
    for case in all_cases():
        covered.setdefault(case.rule, set()).update(case.enforcers)
    table = readme_rule_table()
    assert set(table) == set(RULES) - {"compliant"}, "one row per rule of the case table"
    for rule, enforcers in table.items():
        assert enforcers == covered[rule], (
            f"{rule}: the README says {sorted(enforcers)}, the cases run {sorted(covered[rule])}"
        )


SAMPLES = (
    *("0.5", ".5", "5e-1", "+0.25", "1.0", "1", "0", "0.5 ", " 0.5", "0.2_5", "NaN", "0x1p-1", "1e400", "5.", "-0.5"),
    *("20480", "020480", "20480 ", "+5", "0", "20Gi", "1" * 19, "1" * 20, "٣"),
    *("nvidia.com/container.main.gpu-memory.request", "nvidia.com/container.main.gpu-memory.limit"),
    *(
        "nvidia.com/container.a.b.gpu-memory.limit",
        "nvidia.com/container..gpu-memory.limit",
        "xnvidia.com/container.m.gpu-memory.limit",
    ),
)


GPU_RESOURCES = (
    *("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb.shared"),
    *("nvidia.com/mig-", "nvidia.com/gpumem", "amd.com/gpu", "gpu", "xnvidia.com/gpu", "nvidia.com/migrate"),
    *("example.com/nvidia.com/gpu", "nvidia.com/vgpu", "NVIDIA.com/gpu"),
)


def test_the_pack_and_the_admission_policy_state_the_same_facts() -> None:
    """The pack is a package of its own and cannot import the program: each side states the facts,
    and this holds them to each other (the patterns by what they accept, as CEL's RE2 and Python's
    re read them alike)."""
    from gpu_policies import facts

    assert set(facts.FRACTION_ANNOTATIONS) == set(fractions.FRACTION_ANNOTATIONS)
    assert facts.MPS_PIPE_DIRECTORIES == fractions.MPS_PIPE_DIRECTORIES
    assert facts.SYSTEM_NAMESPACE_LABEL == fractions.SYSTEM_NAMESPACE_LABEL
    assert {facts.SYSTEM_NAMESPACE_LABEL: facts.SYSTEM_NAMESPACE_VALUE} == fractions.SYSTEM_NAMESPACE_LABELS
    assert facts.GPU_RESOURCE == nvidia.GPU_RESOURCE
    for resource in GPU_RESOURCES:
        assert bool(facts.GPU_RESOURCE_PATTERN.fullmatch(resource)) == bool(
            re.search(nvidia.GPU_RESOURCE_PATTERN, resource)
        ), resource
    assert facts.DEFAULT_RUNTIME_CLASS == nvidia.RUNTIME_CLASS
    for pack, cel in (
        (facts.FRACTION_PATTERN, fractions.FRACTION_PATTERN),
        (facts.POSITIVE_WHOLE_NUMBER_PATTERN, fractions.POSITIVE_INTEGER_PATTERN),
        (facts.CONTAINER_MEMORY_MARKER, fractions.CONTAINER_MEMORY_MARKER),
    ):
        for sample in SAMPLES:
            assert bool(pack.fullmatch(sample)) == bool(re.search(cel, sample, re.ASCII)), (cel, sample)
