"""The two stack profiles as graphs of components.

fork: images → GPU Operator ▸ KAI (NvFractions) ▸ gpu-fractioning ▸ smoke pods → proof.
lab:  kind → nvml-mock + device plugin ▸ GPU labels → KAI (HAMi-core) ▸ queues, isolator → lab pods.

Each ▸ is a gate: the next step starts only when what the guide verifies after the last one holds.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.cluster.engine import ClusterAccess
from components.config.model import ADMISSION_OFF, StackConfig, is_kubeconfig_contents
from components.forks.recipes import GPU_FRACTIONING, KAI_SCHEDULER
from components.forks.registry import RegistryCredentials
from components.forks.supply import fork_images, fork_source
from components.gates.spec import PROBE_NAMESPACE, GateSpec, Step
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
from components.preflight.decisions import Expectations
from components.preflight.run import PreflightSpec, preflight_first
from components.proofs.lab import AllocatableSpec, LabSpec
from components.proofs.resources import GpusAllocatable, LabProof, SmokeProof
from components.rollout.plan import Versions, read_plan
from components.vocabulary.fractioning import mpsd_memory_limit_mib, nri_socket_path
from components.vocabulary.nvidia import MINIMUM_DRIVER_BRANCH


def after(base: pulumi.ResourceOptions, *dependencies: pulumi.Resource | None) -> pulumi.ResourceOptions:
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


def preflight_spec(config: StackConfig) -> PreflightSpec | None:
    """What preflight checks; None when it is off, or for a kind cluster the stack creates (it does
    not exist before `up`)."""
    if not config.preflight.enabled or (config.profile == "lab" and config.lab.kind is not None):
        return None
    socket = nri_socket_path(config.gpu_fractioning.node_runtime)
    return PreflightSpec(preflight_expectations(config), config.preflight, socket)


def preflight_expectations(config: StackConfig) -> Expectations:
    """What the configured profile needs of the cluster, and what it installs itself."""
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


def gate_spec(config: StackConfig, step: Step) -> GateSpec:
    """What the gate after `step` checks, as the stack configures it."""
    if step == "gpu-operator":
        driver = config.gpu_operator.driver
        # The operator installs the pinned driver; a host driver must be of the r615 branch or newer.
        pinned = int(driver.version.split(".")[0]) if driver.source == "operator" else MINIMUM_DRIVER_BRANCH
        operator = config.gpu_operator
        return GateSpec(step, operator.namespace, operator.ready_timeout_seconds, minimum_driver_major=pinned)
    if step == "kai-scheduler":
        sharing_mode = "NvFractions" if config.profile == "fork" else None
        return GateSpec(step, config.kai.namespace, config.kai.ready_timeout_seconds, sharing_mode=sharing_mode)
    if step == "gpu-fractioning":
        agents = config.gpu_fractioning
        return GateSpec(step, agents.namespace, agents.ready_timeout_seconds, kai_namespace=config.kai.namespace)
    timeout, mode = config.admission.ready_timeout_seconds, config.admission.mode
    return GateSpec(step, PROBE_NAMESPACE, timeout, admission_mode=mode)


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


def deploy_forks(
    config: StackConfig, access: ClusterAccess, registry_password: pulumi.Output[str] | None
) -> dict[str, Any]:
    # Sources first: a fork that cannot be checked out stops the program before anything registers.
    kai_source = fork_source(config, KAI_SCHEDULER, needs_chart=config.kai.chart is None)
    fractioning_source = fork_source(config, GPU_FRACTIONING, needs_chart=config.gpu_fractioning.chart is None)
    registry = config.fork_registry
    cluster = in_cluster(access)
    credentials = RegistryCredentials.of(registry, registry_password)
    pull_secret = helm.PullSecret(registry.pull_secret_name, credentials.docker_config()) if credentials else None
    pull_secret_name = pull_secret.name if pull_secret else None
    kai_fork = fork_images(config, KAI_SCHEDULER, kai_source, credentials)
    fractioning_fork = fork_images(config, GPU_FRACTIONING, fractioning_source, credentials)

    admission_ready = admission(config, access, cluster)
    gpu_operator, agents = config.gpu_operator, config.gpu_fractioning.namespace
    operator = None
    if gpu_operator.enabled:  # its driver rollout proves each node it took as the smoke proof proves the stack
        operator = GpuOperator("gpu-operator", gpu_operator, access, agents, cluster, smoke_spec(config))
    # Also when the cluster's GPU Operator is managed elsewhere: KAI needs what it sets up.
    operator_release = operator.release if operator else None
    operator_ready = gate(config, access, "gpu-operator", installed(config, "gpuOperator", operator_release), operator)
    kai = KaiScheduler(
        "kai-scheduler",
        config.kai,
        values=kai_fork_values(
            config.kai, KAI_SCHEDULER.repo_base(registry.server), config.forks.image_tag, pull_secret_name
        ),
        source=config.kai_chart,
        local_chart=kai_fork.chart,
        access=access,
        pull_secret=pull_secret,
        # KAI reads what the GPU Operator sets up (RuntimeClass, GPU labels) from the cluster, not from
        # outputs. The tag is known up front (so previews and policies see it), so the wait for the
        # pushed and verified images is an explicit edge too.
        opts=after(cluster, operator_ready, kai_fork.images),
    )
    kai_ready = gate(
        config, access, "kai-scheduler", installed(config, "kaiScheduler", operator_release, kai.release), kai
    )
    # KAI's webhooks refuse every Queue patch until they answer, which its gate waits for.
    KaiKeptObjects(kai, opts=after(cluster, kai_ready))
    fractioning = GpuFractioning(
        "gpu-fractioning",
        config.gpu_fractioning,
        values=gpu_fractioning_values(
            config.gpu_fractioning,
            GPU_FRACTIONING.repo_base(registry.server),
            config.forks.image_tag,
            config.nodes.gpus_per_node,
            pull_secret_name,
        ),
        local_chart=fractioning_fork.chart,
        access=access,
        pull_secret=pull_secret,
        # The node agents serve KAI's annotations, and KAI's operator waits for their config.
        opts=after(cluster, kai_ready, fractioning_fork.images),
    )
    releases = (operator_release, kai.release, fractioning.release)
    agents_installed = installed(config, "gpuFractioning", *releases)
    fractioning_ready = gate(config, access, "gpu-fractioning", agents_installed, fractioning)
    outputs: dict[str, Any] = {
        "imageTag": config.forks.image_tag,
        "imageDigests": pulumi.Output.all(
            **{KAI_SCHEDULER.key: kai_fork.digests, GPU_FRACTIONING.key: fractioning_fork.digests}
        ),
        "releases": pulumi.Output.all(
            **{
                "gpu-operator": operator.status if operator else "not managed by this stack",
                "kai-scheduler": kai.status,
                "gpu-fractioning": fractioning.status,
            }
        ),
    }
    if config.smoke_test.enabled:
        # Fractional pods need the node agents running and ready on every GPU node, and meet the
        # admission policy that every fractional pod in the cluster meets; a new driver drains them.
        ready, driver = after(cluster, fractioning_ready, admission_ready), config.gpu_side_versions["driver"]
        smoke = SmokePods("smoke-test", config.smoke_test, driver, ready)
        outputs["smokePods"] = smoke.names
        if config.smoke_test.prove:
            proof = prove_smoke_pods(config, access, smoke, installed(config, "images", *releases))
            outputs.update(proof=proof.results, proofReport=proof.report, provedOn=proved_on(proof))
    return outputs


def proved_on(proof: SmokeProof | LabProof) -> pulumi.Output[Any]:
    """The versions the proof last held on: its outputs change only when it runs and holds."""
    return proof.triggers.apply(lambda triggers: triggers["versions"])


def prove_smoke_pods(config: StackConfig, access: ClusterAccess, smoke: SmokePods, triggers: Any) -> SmokeProof:
    # Any GPU-side change is a new install to prove (triggers); the outputs must not go stale.
    opts = pulumi.ResourceOptions(depends_on=[smoke])
    return SmokeProof("smoke-proof", smoke_spec(config), access=access, triggers=triggers, opts=opts)


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
        AllocatableSpec(gpu_count=lab.gpu.count, nodes=tuple(lab.node_names)),
        access=access,
        opts=pulumi.ResourceOptions(depends_on=[mock]),
    )
    # The lab labels nodes once the device plugin advertises their GPUs.
    labels = GpuNodeLabels("gpu-node-labels", lab.node_names, lab.gpu, opts=after(cluster, allocatable))
    kai = KaiScheduler(
        "kai-scheduler",
        config.kai,
        values=kai_lab_values(config.kai),
        source=config.kai_chart,
        local_chart=None,
        access=access,
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
    isolator = Isolator("isolator", lab.isolator, opts=after(cluster, labels))
    # Pods need their queue and the RuntimeClass shim to exist, and the admission policy in force.
    pods = LabPods("lab-pods", lab.gpu, lab.await_workloads, opts=after(cluster, queues, isolator, admission_ready))
    proof: dict[str, Any] = {"sharedPodBoundary": BOUNDARY_NOT_OBSERVED}
    if lab.prove:
        lab_proof = LabProof(
            "lab-proof",
            LabSpec(
                gpu_count=lab.gpu.count,
                gpu_memory_mib=lab.gpu.memory_mib,
                shared_memory_mib=lab.gpu.memory_mib // 2,
                shared_pod=SHARED_POD,
                nodes=tuple(lab.node_names),
                kai_namespace=config.kai.namespace,
            ),
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
