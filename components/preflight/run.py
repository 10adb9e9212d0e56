"""Preflight: before anything registers, in preview too, every prerequisite row of the build guide is
read from the cluster and decided. A failing row stops the program with one line per row and its
fix; the others are reported as warnings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import pulumi

from components.cluster.client import KubeClient
from components.cluster.engine import ClusterAccess
from components.cluster.facts import HOST_CHECKS_AT_ONCE, ClusterFacts, collect_cluster_facts
from components.config.secrets import redact
from components.preflight.decisions import Finding, Outcome, PreflightSpec, blocking, evaluate
from components.preflight.host_access import host_facts_reader


def run_preflight(spec: PreflightSpec, access: ClusterAccess) -> list[dict[str, str]]:
    """The findings that did not pass, as the stack's `preflight` output; raises when a row fails."""
    try:
        facts = read_cluster_facts(spec, access)
    except Exception as error:  # the client raises many types; all mean the same to the user
        raise pulumi.RunError(
            f"Preflight could not read the cluster ({type(error).__name__}: {error}). Check the cluster's "
            "kubeconfig and context (stack config kai-gpu-fractions:cluster, or a component's kubeconfig and "
            "context inputs), or set kai-gpu-fractions:preflight.enabled (a component's preflight.enabled) to false."
        ) from None
    findings = evaluate(facts, spec.expectations, spec.settings)
    if blocking(findings):
        raise pulumi.RunError("Preflight failed; nothing was changed.\n" + format_report(findings))
    if any(finding.outcome != "pass" for finding in findings):
        pulumi.log.warn(redact(format_report(findings)))
    else:
        pulumi.log.info(redact(format_report(findings)))
    return [dataclasses.asdict(finding) for finding in findings if finding.outcome != "pass"]


DEFERRED = (
    "Preflight: the cluster's kubeconfig is not known yet (another resource of this update makes it); "
    "preflight runs at `up` once it is, before anything is installed in the cluster."
)


def preflight_first(spec: PreflightSpec, access: ClusterAccess) -> tuple[ClusterAccess, pulumi.Input[Any]]:
    """The findings, and access to the cluster that only resolves once they allow the install.

    A cluster the program names is read now, in preview too; so is one whose kubeconfig is an output
    already known (a package component's input). One that another resource makes in the same update
    is read once its kubeconfig is known: everything installed in it reaches it through the access
    returned, so nothing is installed before preflight passes."""
    kubeconfig = access.kubeconfig
    if kubeconfig is None or isinstance(kubeconfig, str):
        return access, run_preflight(spec, access)
    given = pulumi.Output.from_input(kubeconfig)  # type: ignore[arg-type]

    def checked(known: str) -> tuple[list[dict[str, str]], str]:
        return run_preflight(spec, ClusterAccess(known, access.context)), known

    def said(known: bool) -> bool:
        if not known:
            pulumi.log.info(DEFERRED)
        return known

    both = given.apply(checked)
    # Whether the kubeconfig is known now, as a value: an unknown one is said so, not left silent.
    known_now = pulumi.Output(set(), given.is_known(), _resolved(True), _resolved(False)).apply(said)
    # The findings hold no credential: they stay readable though the kubeconfig is a secret.
    findings = pulumi.Output.all(known_now, pulumi.Output.unsecret(both[0])).apply(lambda pair: pair[1])
    return ClusterAccess(both[1], access.context), findings


async def _resolved(value: bool) -> bool:
    return value


def read_cluster_facts(spec: PreflightSpec, access: ClusterAccess) -> ClusterFacts:
    if access.kubeconfig is not None and not isinstance(access.kubeconfig, str):
        raise TypeError("preflight reads a cluster that exists before the program runs, not one it creates")
    cluster = KubeClient.connect(access.kubeconfig, access.context, HOST_CHECKS_AT_ONCE)
    return collect_cluster_facts(cluster, host_facts_reader(spec.settings.host_access, spec.nri_socket_path, cluster))


_LABELS: dict[Outcome, str] = {"fail": "FAIL", "warn": "WARN", "not-checked": "NOT CHECKED", "pass": "PASS"}


def format_report(findings: Iterable[Finding]) -> str:
    """A summary line, then one line per failing, warned or unchecked row: what, where, how to fix."""
    findings = list(findings)
    counts = {outcome: sum(f.outcome == outcome for f in findings) for outcome in _LABELS}
    lines = [
        f"Preflight: {counts['fail']} failing, {counts['warn']} warning, {counts['not-checked']} not checked, "
        f"{counts['pass']} passed"
    ]
    for outcome in ("fail", "warn", "not-checked"):
        for f in findings:
            if f.outcome == outcome:
                fix = f"; fix: {f.fix}" if f.fix else ""
                lines.append(f"  {_LABELS[outcome]} {f.check} on {f.target}: {f.detail}{fix}")
    return "\n".join(lines)
