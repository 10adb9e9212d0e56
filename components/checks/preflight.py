"""Preflight: before anything registers, in preview too, every prerequisite row of the build guide is
read from the cluster and decided. A failing row stops the program with one line per row and its
fix; the others are reported as warnings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pulumi

from components.checks.cluster_facts import HOST_CHECKS_AT_ONCE, ClusterFacts, collect_cluster_facts
from components.checks.host_access import host_facts_reader
from components.checks.kube import KubeClient
from components.checks.preflight_rows import Expectations, Finding, Outcome, blocking, evaluate
from components.config.model import StackConfig
from components.config.secrets import redact
from components.vocabulary.fractioning import mpsd_memory_limit_mib


def run_preflight(config: StackConfig) -> list[dict[str, str]]:
    """The findings that did not pass, as the stack's `preflight` output; raises when a row fails."""
    settings = config.preflight
    if not settings.enabled or (config.profile == "lab" and config.lab.kind is not None):
        return []  # a kind cluster the stack creates does not exist before `up`
    try:
        facts = read_cluster_facts(config)
    except Exception as error:  # the client raises many types; all mean the same to the user
        raise pulumi.RunError(
            f"Preflight could not read the cluster ({type(error).__name__}: {error}). Check "
            "kai-gpu-fractions:cluster (kubeconfig, context), or set kai-gpu-fractions:preflight.enabled to false."
        ) from None
    findings = evaluate(facts, expectations_for(config), settings)
    if blocking(findings):
        raise pulumi.RunError("Preflight failed; nothing was changed.\n" + format_report(findings))
    if any(finding.outcome != "pass" for finding in findings):
        pulumi.log.warn(redact(format_report(findings)))
    else:
        pulumi.log.info(redact(format_report(findings)))
    return [dataclasses.asdict(finding) for finding in findings if finding.outcome != "pass"]


def read_cluster_facts(config: StackConfig) -> ClusterFacts:
    cluster = KubeClient.connect(config.cluster.kubeconfig_path, config.cluster.context, HOST_CHECKS_AT_ONCE)
    return collect_cluster_facts(cluster, host_facts_reader(config, cluster))


def expectations_for(config: StackConfig) -> Expectations:
    """The Expectations of a parsed stack configuration."""
    if config.profile == "lab":
        return Expectations(
            profile="lab",
            stack_installs_gpu_operator=False,
            stack_creates_runtime_class=True,
            gpus_per_node=config.lab.gpu.count,
            mpsd_memory_limit_mib=0,
            stack_labels_gpu_nodes=True,
        )
    operator = config.gpu_operator
    return Expectations(
        profile="fork",
        stack_installs_gpu_operator=operator.enabled,
        stack_creates_runtime_class=operator.enabled,
        gpus_per_node=config.nodes.gpus_per_node,
        mpsd_memory_limit_mib=mpsd_memory_limit_mib(config.nodes.gpus_per_node),
        stack_installs_driver=operator.enabled and operator.driver.source == "operator",
        minimum_gpu_operator_version=config.gpu_fractioning.minimum_gpu_operator_version,
    )


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
