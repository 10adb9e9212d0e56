"""The two stack profiles as graphs of components.

fork: images → GPU Operator ▸ KAI (NvFractions) ▸ gpu-fractioning ▸ smoke pods → proof.
lab:  kind → nvml-mock + device plugin ▸ GPU labels → KAI (HAMi-core) ▸ queues, isolator → lab pods.

Each ▸ is a gate: the next step starts only when what the guide verifies after the last one holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.check_specs import allocatable_spec, gate_spec, lab_proof_spec, preflight_spec
from components.cluster.engine import ClusterAccess
from components.config.model import ADMISSION_OFF, StackConfig, is_kubeconfig_contents
from components.forks.recipes import GPU_FRACTIONING, KAI_SCHEDULER
from components.forks.registry import RegistryCredentials
from components.forks.supply import ForkSupply, supply_forks
from components.gates.spec import Step
from components.gates.steps import StepGate
from components.gpu_cluster.fraction_admission import FractionAdmission
from components.gpu_cluster.gpu_fractioning import GpuFractioning, gpu_fractioning_values
from components.gpu_cluster.gpu_operator import GpuOperator
from components.gpu_cluster.kai_scheduler import KaiKeptObjects, KaiScheduler, kai_fork_values, kai_lab_values
from components.gpu_cluster.smoke_pods import SmokePods, smoke_spec
from components.lab.gpu_node_labels import GpuNodeLabels
from components.lab.isolator import Isolator
from components.lab.lab_pods import BOUNDARY_NOT_OBSERVED, SHARED_POD, LabPods
from components.lab.nvml_mock import NvmlMock
from components.lab.queues import LabQueues
from components.preflight.run import preflight_first
from components.proofs.resources import GpusAllocatable, LabProof, SmokeProof, proved_on
from components.rollout.plan import Versions, read_plan
from components.teardown.waits import NamespacesGone
from components.vocabulary.kai import RESERVATION_NAMESPACE


def after(base: pulumi.ResourceOptions | None, *dependencies: pulumi.Resource | None) -> pulumi.ResourceOptions:
    """`base` plus an ordering edge the data flow cannot express (each call site says why)."""
    return pulumi.ResourceOptions.merge(
        base, pulumi.ResourceOptions(depends_on=[d for d in dependencies if d is not None])
    )


def cluster_access(config: StackConfig) -> ClusterAccess:
    """The one way the stack reaches the configured cluster, built once and taken by everything."""
    return ClusterAccess(config.cluster.kubeconfig_path, config.cluster.context)


def in_cluster(access: ClusterAccess) -> pulumi.ResourceOptions:
    """Options that put a resource in the stack's cluster; a kubeconfig given as contents
    (credentials included) reaches the provider's inputs, and so the state, only as a secret."""
    kubeconfig = access.kubeconfig
    if isinstance(kubeconfig, str) and is_kubeconfig_contents(kubeconfig):
        kubeconfig = pulumi.Output.secret(kubeconfig)
    provider = k8s.Provider("cluster", kubeconfig=kubeconfig, context=access.context)
    return pulumi.ResourceOptions(providers={"kubernetes": provider})


def installed(config: StackConfig, upto: str, *releases: k8s.helm.v3.Release | None) -> pulumi.Output[Any]:
    """What a gate or a proof runs again on: the GPU-side versions up to `upto` in install order (a new
    driver is a new install for every step after it) and the revisions of the releases up to there."""
    revisions = [release.status.revision for release in releases if release is not None]
    return pulumi.Output.all(versions=config.gpu_side_versions_up_to(upto), revisions=revisions)


def gate(
    config: StackConfig,
    access: ClusterAccess,
    step: Step,
    triggers: pulumi.Input[Any] | None,
    after_step: pulumi.Resource | None,
) -> StepGate:
    """The guide's verification after `step`, run once it is installed and whenever `triggers` change."""
    return StepGate(
        f"{step}-ready",
        gate_spec(config, step),
        access=access,
        triggers=triggers,
        opts=pulumi.ResourceOptions(depends_on=[after_step] if after_step is not None else []),
    )


def deploy(
    config: StackConfig, registry_password: pulumi.Output[str] | None, access: ClusterAccess | None = None
) -> dict[str, Any]:
    """Checks the cluster's prerequisites, then registers the configured profile; returns the outputs.
    `access` is the configured cluster's unless given (a package component's kubeconfig input)."""
    access = access or cluster_access(config)
    if config.profile == "admission":
        return deploy_admission(config, access)
    spec = preflight_spec(config)
    access, findings = preflight_first(spec, access) if spec is not None else (access, [])
    if config.profile == "lab":
        return {**deploy_lab(config, access), "preflight": findings}
    # Read before anything registers: during `up` the update starts while the program still runs.
    operator, tag = config.gpu_operator, config.forks.image_tag
    wanted = Versions(operator.installed_driver, operator.installed_chart_version, tag, tag)
    plan = read_plan(access, wanted, config.kai.namespace, config.gpu_fractioning.namespace, operator.rollout)
    return {**deploy_forks(config, access, registry_password), "preflight": findings, "rolloutPlan": plan}


def admission(config: StackConfig, access: ClusterAccess, cluster: pulumi.ResourceOptions) -> StepGate | None:
    """The fractional-pod admission policy and its gate, which every fractional pod the stack
    creates waits for; None, with a warning, when it is switched off."""
    settings = config.admission
    if not settings.enabled:
        pulumi.log.warn(ADMISSION_OFF)
        return None
    policy = FractionAdmission(
        "fraction-admission",
        runtime_class=config.fraction_runtime_class,
        mode=settings.mode,
        exempt_namespaces=tuple(settings.exempt_namespaces),
        opts=cluster,
    )
    return gate(config, access, "fraction-admission", None, policy)


def deploy_admission(config: StackConfig, access: ClusterAccess) -> dict[str, Any]:
    """Only the admission policy, for a cluster whose GPU software is installed some other way."""
    ready = admission(config, access, in_cluster(access))
    return {"admission": ready.report if ready is not None else ADMISSION_OFF}


@dataclass(frozen=True)
class Installed:
    """An install step: its status for the outputs, the gate that holds once the guide's verification
    after it holds, and the releases up to it in install order (what later gates run again on)."""

    status: pulumi.Input[Any]
    ready: StepGate | None
    releases: tuple[k8s.helm.v3.Release, ...]


# Where a step is installed alone (a package component), the consumer orders it after the others.
NOTHING_BELOW = Installed("", None, ())


def pull_secret(config: StackConfig, credentials: RegistryCredentials | None) -> helm.PullSecret | None:
    """The secret each fork release's namespace gets to pull from a registry that needs a login."""
    if credentials is None:
        return None
    return helm.PullSecret(config.fork_registry.pull_secret_name, credentials.docker_config())


def install_gpu_operator(config: StackConfig, access: ClusterAccess, cluster: pulumi.ResourceOptions) -> Installed:
    """The GPU Operator when the stack manages it, and its gate either way: KAI needs what it sets up."""
    settings, agents = config.gpu_operator, config.gpu_fractioning.namespace
    if not settings.enabled:
        return Installed(
            "not managed by this stack",
            gate(config, access, "gpu-operator", installed(config, "gpuOperator"), None),
            (),
        )
    # Its driver rollout proves each node it took as the smoke proof proves the stack.
    operator = GpuOperator("gpu-operator", settings, access, agents, cluster, smoke_spec(config))
    ready = gate(config, access, "gpu-operator", installed(config, "gpuOperator", operator.release), operator)
    return Installed(operator.status, ready, (operator.release,))


def install_kai(
    config: StackConfig,
    access: ClusterAccess,
    cluster: pulumi.ResourceOptions,
    fork: ForkSupply,
    pull_secret: helm.PullSecret | None,
    below: Installed,
    gone: NamespacesGone | None = None,
) -> Installed:
    """KAI from the fork's chart and images in NvFractions mode, once the step `below` is ready."""
    kai = KaiScheduler(
        "kai-scheduler",
        config.kai,
        values=kai_fork_values(
            config.kai,
            KAI_SCHEDULER.repo_base(config.fork_registry.server),
            config.forks.image_tag,
            pull_secret.name if pull_secret else None,
        ),
        source=config.kai_chart,
        local_chart=fork.chart,
        access=access,
        pull_secret=pull_secret,
        namespaces_gone=gone,
        # KAI reads what the GPU Operator sets up (RuntimeClass, GPU labels) from the cluster, not from
        # outputs. The tag is known up front (so previews and policies see it), so the wait for the
        # pushed and verified images is an explicit edge too.
        opts=after(cluster, below.ready, fork.images),
    )
    releases = (*below.releases, kai.release)
    ready = gate(config, access, "kai-scheduler", installed(config, "kaiScheduler", *releases), kai)
    # KAI's webhooks refuse every Queue patch until they answer, which its gate waits for.
    KaiKeptObjects(kai, opts=after(cluster, ready))
    return Installed(kai.status, ready, releases)


def install_gpu_fractioning(
    config: StackConfig,
    access: ClusterAccess,
    cluster: pulumi.ResourceOptions,
    fork: ForkSupply,
    pull_secret: helm.PullSecret | None,
    below: Installed,
    gone: NamespacesGone | None = None,
) -> Installed:
    """The gpu-fractioning node agents from the fork's chart and images, once KAI (`below`) is ready."""
    fractioning = GpuFractioning(
        "gpu-fractioning",
        config.gpu_fractioning,
        values=gpu_fractioning_values(
            config.gpu_fractioning,
            GPU_FRACTIONING.repo_base(config.fork_registry.server),
            config.forks.image_tag,
            config.nodes.gpus_per_node,
            pull_secret.name if pull_secret else None,
        ),
        local_chart=fork.chart,
        access=access,
        pull_secret=pull_secret,
        namespaces_gone=gone,
        # The node agents serve KAI's annotations, and KAI's operator waits for their config.
        opts=after(cluster, below.ready, fork.images),
    )
    releases = (*below.releases, fractioning.release)
    ready = gate(config, access, "gpu-fractioning", installed(config, "gpuFractioning", *releases), fractioning)
    return Installed(fractioning.status, ready, releases)


def smoke_test(
    config: StackConfig,
    access: ClusterAccess,
    cluster: pulumi.ResourceOptions,
    below: Installed,
    admission_ready: StepGate | None,
) -> dict[str, Any]:
    """Two half-GPU smoke pods and the proof of their caps, as the config asks; their outputs."""
    if not config.smoke_test.enabled:
        return {}
    # Fractional pods need the node agents running and ready on every GPU node, and meet the
    # admission policy that every fractional pod in the cluster meets; a new driver drains them.
    ready, driver = after(cluster, below.ready, admission_ready), config.gpu_side_versions["driver"]
    smoke = SmokePods("smoke-test", config.smoke_test, driver, ready)
    if not config.smoke_test.prove:
        return {"smokePods": smoke.names}
    # Any GPU-side change is a new install to prove (triggers); the outputs must not go stale.
    triggers, waits = installed(config, "images", *below.releases), pulumi.ResourceOptions(depends_on=[smoke])
    proof = SmokeProof("smoke-proof", smoke_spec(config), access=access, triggers=triggers, opts=waits)
    return {"smokePods": smoke.names, "proof": proof.results, "proofReport": proof.report, "provedOn": proved_on(proof)}


def deploy_forks(
    config: StackConfig, access: ClusterAccess, registry_password: pulumi.Output[str] | None
) -> dict[str, Any]:
    credentials = RegistryCredentials.of(config.fork_registry, registry_password)
    forks, secret = supply_forks(config, credentials), pull_secret(config, credentials)
    cluster = in_cluster(access)
    admission_ready = admission(config, access, cluster)
    operator = install_gpu_operator(config, access, cluster)
    # Destroy deletes these together after both charts, as the guide does, and only then the GPU Operator.
    agents = [config.kai.namespace, RESERVATION_NAMESPACE, config.gpu_fractioning.namespace]
    gone = NamespacesGone("namespaces-gone", access=access, namespaces=agents, opts=after(None, operator.ready))
    kai = install_kai(config, access, cluster, forks.kai, secret, operator, gone)
    fractioning = install_gpu_fractioning(config, access, cluster, forks.fractioning, secret, kai, gone)
    return {
        "imageTag": config.forks.image_tag,
        "imageDigests": forks.digests,
        "releases": pulumi.Output.all(
            **{"gpu-operator": operator.status, "kai-scheduler": kai.status, "gpu-fractioning": fractioning.status}
        ),
        **smoke_test(config, access, cluster, fractioning, admission_ready),
    }


def deploy_lab(config: StackConfig, access: ClusterAccess) -> dict[str, Any]:
    lab = config.lab
    if lab.kind is not None:
        # Imported here: the command provider is needed only when the stack creates the cluster.
        from components.lab.kind_cluster import KindCluster

        access = ClusterAccess(KindCluster("lab-cluster", lab.kind).kubeconfig, access.context)
    cluster = in_cluster(access)
    admission_ready = admission(config, access, cluster)
    mock = NvmlMock("nvml-mock", lab, config.forks.workdir, opts=cluster)
    # The device plugin is ready when every GPU node advertises the profile's count (8, not 80).
    allocatable = GpusAllocatable(
        "gpus-allocatable",
        allocatable_spec(config),
        access=access,
        opts=pulumi.ResourceOptions(depends_on=[mock]),
    )
    # The lab labels nodes once the device plugin advertises their GPUs.
    labels = GpuNodeLabels("gpu-node-labels", lab.node_names, lab.gpu, opts=after(cluster, allocatable))
    # KAI's and the isolator's namespaces go together at destroy, then nvml-mock's.
    namespaces = [config.kai.namespace, RESERVATION_NAMESPACE, lab.isolator.namespace]
    gone = NamespacesGone("namespaces-gone", access=access, namespaces=namespaces, opts=after(None, labels))
    kai = KaiScheduler(
        "kai-scheduler",
        config.kai,
        values=kai_lab_values(config.kai),
        source=config.kai_chart,
        local_chart=None,
        access=access,
        namespaces_gone=gone,
        # KAI caches GPU memory when it first sees a node: the labels must be there before it starts.
        opts=after(cluster, labels),
    )
    # KAI's webhooks (all failurePolicy Fail) refuse Queues and kai-scheduler pods until they
    # answer, which its gate waits for: queue-controller's validates every Queue.
    kai_ready = gate(config, access, "kai-scheduler", installed(config, "kaiScheduler", kai.release), kai)
    KaiKeptObjects(kai, kept_queues=("default-parent-queue",), opts=after(cluster, kai_ready))
    queues = LabQueues("queues", opts=after(cluster, kai_ready))
    # The isolator needs nothing of KAI to install (its chart's own smoke test runs without KAI, and
    # its webhook's failurePolicy is Ignore, so it blocks no pod while starting): it installs while
    # KAI does, once the GPU nodes its monitor DaemonSet selects are ready. Only the lab pods need both.
    isolator = Isolator("isolator", lab.isolator, gone, opts=after(cluster, labels))
    # Pods need their queue and the RuntimeClass shim to exist, and the admission policy in force.
    pods = LabPods("lab-pods", lab.gpu, lab.await_workloads, opts=after(cluster, queues, isolator, admission_ready))
    proof: dict[str, Any] = {"sharedPodBoundary": BOUNDARY_NOT_OBSERVED}
    if lab.prove:
        lab_proof = LabProof(
            "lab-proof",
            lab_proof_spec(config, SHARED_POD),
            access=access,
            triggers=installed(config, "kaiResourceIsolator", kai.release),
            opts=pulumi.ResourceOptions(depends_on=[pods]),
        )
        proof = {
            "proof": lab_proof.results,
            "proofReport": lab_proof.report,
            "provedOn": proved_on(lab_proof),
            # What the proof saw of the shared pod, not what the runbook expects of it.
            "sharedPodBoundary": lab_proof.results.apply(
                lambda results: next(r["detail"] for r in results if r["check"] == "reservation-boundary")
            ),
        }
    return {
        **proof,
        "gpuProfile": {"name": lab.gpu_profile, **lab.gpu.model_dump(by_alias=True)},
        "gpuNodes": labels.nodes,
        "releases": pulumi.Output.all(**{"kai-scheduler": kai.status, "kai-resource-isolator": isolator.status}),
        "labPods": pods.names,
    }
