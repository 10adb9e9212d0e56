"""The shared case table is well formed: every case can be run and read the same way by both enforcers."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from tests.guide_rules import ENFORCERS, RULES, SHARED_RULES, GuideCase, all_cases, cases

CASES = all_cases()
KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# Workloads whose pod template must match the selector, and those whose pods must not restart forever.
SELECTED = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"}
JOBS = {"Job", "CronJob"}
BUILT_IN_KINDS = {"Pod", "PodTemplate", "ReplicationController", *SELECTED, *JOBS}


def ids(case: GuideCase) -> str:
    return case.case


def template(manifest: dict[str, Any]) -> dict[str, Any]:
    kind = manifest["kind"]
    if kind == "Pod":
        return manifest
    if kind == "PodTemplate":
        found: dict[str, Any] = manifest["template"]
        return found
    if kind == "CronJob":
        found = manifest["spec"]["jobTemplate"]["spec"]["template"]
        return found
    found = manifest["spec"]["template"]
    return found


def test_case_names_are_unique_kebab_case() -> None:
    names = [case.case for case in CASES]
    assert [name for name, count in Counter(names).items() if count > 1] == [], "each case once"
    assert [name for name in names if not KEBAB.fullmatch(name)] == [], "kebab-case names"


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_each_case_names_a_known_rule_and_a_verdict(case: GuideCase) -> None:
    assert case.rule in RULES, f"{case.rule} is not one of {RULES}"
    assert case.expect in ("deny", "allow"), "deny or allow"
    if case.expect == "deny":
        assert case.token, "a deny case names the token every refusal must contain"
    else:
        assert case.token is None, "an allow case has no refusal to match"


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_each_enforcer_left_out_is_explained(case: GuideCase) -> None:
    assert set(case.enforcers) <= set(ENFORCERS), "pack or admission"
    left_out = set(ENFORCERS) - set(case.enforcers)
    assert set(case.blind) == left_out, f"blind must explain exactly {sorted(left_out)}"
    assert all(reason.strip() for reason in case.blind.values()), "a reason, not a blank"


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_a_case_for_the_admission_tier_has_a_manifest(case: GuideCase) -> None:
    if "admission" in case.enforcers:
        assert case.manifest is not None, "the admission tier dry-run creates a real object"
        assert case.pulumi is None, "a case both run is a plain object"
    else:
        assert case.manifest is not None or case.pulumi is not None, "the pack needs something to register"


@pytest.mark.parametrize("case", [c for c in CASES if c.rule in SHARED_RULES and c.expect == "deny"], ids=ids)
def test_a_deny_case_of_a_shared_rule_runs_in_both_enforcers_or_says_why_not(case: GuideCase) -> None:
    assert set(case.enforcers) == set(ENFORCERS) or case.blind, "both enforcers hold the shared rules"


@pytest.mark.parametrize("case", [c for c in CASES if c.manifest is not None], ids=ids)
def test_each_manifest_is_a_valid_object_of_a_kind_the_admission_tier_can_create(case: GuideCase) -> None:
    manifest = case.manifest
    assert manifest is not None
    assert manifest["kind"] in BUILT_IN_KINDS, "a Pod or a built-in workload"
    assert DNS_LABEL.fullmatch(manifest["metadata"]["name"]), "a name the API server accepts for any kind"
    assert "namespace" not in manifest["metadata"] or "admission" not in case.enforcers, (
        "the admission tier sets the namespace; a case that needs one names it in `namespace`"
    )
    pod = template(manifest)
    assert pod["spec"]["containers"], "a pod runs at least one container"
    assert all(container.get("image") for container in pod["spec"]["containers"]), "every container has an image"
    if manifest["kind"] in SELECTED:
        selector = manifest["spec"]["selector"]["matchLabels"]
        assert selector.items() <= pod["metadata"]["labels"].items(), "the template matches the selector"
    if manifest["kind"] == "ReplicationController":
        assert manifest["spec"]["selector"].items() <= pod["metadata"]["labels"].items(), "matching selector"
    if manifest["kind"] in JOBS:
        assert pod["spec"].get("restartPolicy") in ("Never", "OnFailure"), "a Job's pods must not restart always"
    elif manifest["kind"] != "Pod":
        assert pod["spec"].get("restartPolicy", "Always") == "Always", "a controller's pods restart"


def test_object_names_are_unique_per_kind_and_namespace() -> None:
    keys = [
        (c.manifest["kind"], c.namespace.name if c.namespace else "", c.manifest["metadata"]["name"])
        for c in CASES
        if c.manifest is not None
    ]
    assert [key for key, count in Counter(keys).items() if count > 1] == [], "one object per name"


def test_a_namespace_means_the_same_in_every_case_that_names_it() -> None:
    labels: dict[str, dict[str, str]] = {}
    for case in CASES:
        if case.namespace is not None:
            assert labels.setdefault(case.namespace.name, dict(case.namespace.labels)) == case.namespace.labels, (
                f"{case.namespace.name} is labelled alike everywhere"
            )


@pytest.mark.parametrize("case", [c for c in CASES if c.pulumi is not None], ids=ids)
def test_a_pulumi_case_names_an_existing_target(case: GuideCase) -> None:
    assert case.pulumi is not None and case.enforcers == ("pack",), "only the pack registers Pulumi resources"
    names = {resource.name for resource in case.pulumi.resources} or {""}
    names |= {f"{r.name}:{child.name}" for r in case.pulumi.resources for child in r.children}
    assert case.pulumi.target in (None, *names), f"target {case.pulumi.target} is one of {sorted(names)}"
    if case.pulumi.up_expect is not None:
        assert case.pulumi.up_expect in ("deny", "allow") and (case.pulumi.up_expect == "deny") == bool(
            case.pulumi.up_token
        ), "the verdict at up, with a token when it denies"


# Helm's release-name limit (pkg/chartutil validate_name.go): a v4 Chart takes its resource name.
HELM_RELEASE_NAME_LENGTH = 53


def test_a_v4_chart_resource_name_is_a_helm_release_name() -> None:
    """The engine tier registers `<case>-<name>`, which a v4 Chart passes to Helm as its release name."""
    too_long = [
        f"{case.case}-{resource.name}"
        for case in CASES
        for resource in (case.pulumi.resources if case.pulumi else ())
        if resource.type == "kubernetes:helm.sh/v4:Chart"
        and (len(f"{case.case}-{resource.name}") > HELM_RELEASE_NAME_LENGTH)
    ]
    assert too_long == [], f"Helm refuses release names over {HELM_RELEASE_NAME_LENGTH} characters"


def test_every_rule_has_a_deny_case_and_the_compliant_cases_the_guide_names() -> None:
    denied = {case.rule for case in CASES if case.expect == "deny"}
    assert set(RULES) - {"compliant"} <= denied, f"no deny case for {sorted(set(RULES) - {'compliant'} - denied)}"
    allowed = {case.case for case in CASES if case.expect == "allow"}
    assert {
        "compliant-smoke-pod",
        "compliant-lab-shared-pod",
        "compliant-lab-whole-gpu-pod",
        "compliant-fractional-deployment",
        "compliant-fractional-cronjob",
        "compliant-non-fractional-root-pod",
        "exemption-a-gpu-reservation-pod-in-its-system-namespace",
        "gpu-runtime-class-whole-gpu-with-the-class",
    } <= allowed, "the project's own pods, a compliant Deployment and CronJob, an exempt GPU daemon, a CPU pod"
    assert "exemption-labelled-system-namespace-runs-a-root-fraction" not in allowed, "no namespace exempts a fraction"


def test_each_enforcer_gets_its_own_cases_and_a_bad_name_fails() -> None:
    assert {case.case for case in cases("admission")} == {c.case for c in CASES if "admission" in c.enforcers}
    assert len(cases("pack")) == len(CASES), "the pack runs every case"
    with pytest.raises(ValueError):
        cases("kubectl")  # type: ignore[arg-type]


def test_cases_are_copies_a_test_may_change() -> None:
    first = next(c for c in cases("admission") if c.case == "runtime-class-pod-with-runc")
    assert first.manifest is not None
    first.manifest["spec"]["runtimeClassName"] = "changed"
    again = next(c for c in cases("admission") if c.case == "runtime-class-pod-with-runc")
    assert again.manifest is not None and again.manifest["spec"]["runtimeClassName"] == "runc", "no shared state"
