"""The dev stack (the laptop lab) under mocks: the runbook's steps, values and order."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.load import ConfigError, parse_config
from tests.unit.harness import COMMAND, POD, RELEASE, STEP_GATE, ProgramRunner

LAB: dict[str, Any] = {"profile": "lab"}
ON_EXISTING_CLUSTER: dict[str, Any] = {
    "profile": "lab",
    "cluster": {"context": "kind-kai-hami-test"},
    "lab": {"kind": None, "gpuNodes": ["gpu-node-0"], "nvmlMock": {"buildImage": False}},
}
QUEUE = "kubernetes:scheduling.run.ai/v2:Queue"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"


def test_the_lab_creates_its_kind_cluster_and_drives_the_provider_with_its_kubeconfig(
    run_program: ProgramRunner,
) -> None:
    engine, _ = run_program(LAB)
    kind = engine.one(COMMAND, "lab-cluster-kind")
    assert kind.inputs["environment"] == {"KIND_CLUSTER": "kai-hami-test"}
    assert "kind create cluster" in kind.inputs["create"] and "kind delete cluster" in kind.inputs["delete"]
    assert "already exists" in kind.inputs["create"], "a pre-existing cluster is refused, never adopted or deleted"
    assert kind.inputs["logging"] == "stderr", "stdout is the kubeconfig: it must not reach the update's log"
    provider = engine.one("pulumi:providers:kubernetes", "cluster")
    assert engine.waits_for(provider, kind), "the provider must use the kubeconfig of the cluster the stack made"


def test_an_existing_cluster_is_used_as_it_is_without_any_local_command(run_program: ProgramRunner) -> None:
    engine, _ = run_program(ON_EXISTING_CLUSTER)
    assert engine.created(COMMAND) == []
    assert engine.one("pulumi:providers:kubernetes", "cluster").inputs["context"] == "kind-kai-hami-test"


def test_nvml_mock_is_built_loaded_into_kind_and_installed_with_the_local_image(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    image = engine.one(COMMAND, "nvml-mock-image").inputs
    assert "deployments/nvml-mock/Dockerfile" in image["create"]
    assert "kind load docker-image" in image["create"]
    assert image["environment"]["IMAGE"] == "nvml-mock:local"
    release = engine.release("nvml-mock")
    assert release.inputs["chart"] == "oci://ghcr.io/nvidia/k8s-test-infra/chart/nvml-mock"
    assert release.inputs["values"] == {
        "image": {"repository": "nvml-mock", "tag": "local"},
        "gpu": {"profile": "a100"},
    }
    assert engine.waits_for(release, engine.one(COMMAND, "nvml-mock-image")), "kind must hold the image first"


def test_the_device_plugin_uses_the_mock_driver_root_and_nvml_discovery(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    (plugin,) = engine.created(DAEMONSET)
    spec = plugin.inputs["spec"]["template"]["spec"]
    assert plugin.inputs["metadata"] == {"name": "nvidia-device-plugin-mock", "namespace": "kube-system"}
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    (container,) = spec["containers"]
    assert container["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
    assert "--nvidia-driver-root=/var/lib/nvml-mock/driver" in container["args"]
    assert "--device-discovery-strategy=nvml" in container["args"]


def test_gpu_labels_come_from_the_profile_and_precede_kai(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(LAB)
    (patch,) = engine.created(NODE_PATCH)
    assert patch.inputs["metadata"] == {
        "name": "kai-hami-test-control-plane",
        "labels": {
            "nvidia.com/gpu.memory": "40960",
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
            "nvidia.com/gpu.count": "8",
        },
    }
    assert engine.waits_for(engine.release("kai-scheduler"), patch), "KAI caches GPU memory on first sight"
    assert engine.waits_for(patch, engine.created(DAEMONSET)[0]), "labels follow the device plugin (Step 3)"
    assert outputs["gpuNodes"] == ["kai-hami-test-control-plane"]


def test_kai_is_the_public_v0_17_0_chart_with_hamicore(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    release = engine.release("kai-scheduler").inputs
    assert release["chart"] == "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
    assert release["version"] == "v0.17.0"
    assert release["namespace"] == "kai-scheduler"
    assert release["values"]["global"] == {"gpuSharing": True}
    assert release["values"]["binder"]["plugins"] == {"hamicore": {"enabled": True}}


def lab_queues(engine: Any) -> dict[str, Any]:
    return {q.inputs["metadata"]["name"]: q for q in engine.created(QUEUE) if q.name.startswith("queues-")}


def test_queues_are_the_labs_unlimited_default_tree_created_after_kai(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    queues = lab_queues(engine)
    assert set(queues) == {"default", "default-queue"}
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    assert queues["default"].inputs["spec"] == {"resources": {r: unlimited for r in ("cpu", "memory", "gpu")}}
    assert queues["default-queue"].inputs["spec"]["parentQueue"] == "default"
    kai_ready = engine.one(STEP_GATE, "kai-scheduler-ready")
    assert engine.waits_for(kai_ready, engine.release("kai-scheduler"))
    assert kai_ready.inputs.get("sharing_mode") is None, "v0.17.0 has no gpuSharingMode to check"
    for queue in queues.values():
        assert engine.waits_for(queue, kai_ready), "KAI's webhook, which the operator starts, validates queues"
        assert queue.inputs["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}, (
            "the chart's default-queue must take the lab's parent, as `kubectl apply` does in the runbook"
        )
    adopted = [q.inputs["metadata"]["name"] for q in engine.created(QUEUE) if q.name.startswith("kai-scheduler-")]
    assert adopted == ["default-parent-queue"], "the chart's other queue is owned so destroy removes it"
    shard = engine.one("kubernetes:kai.scheduler/v1:SchedulingShard", "kai-scheduler-default-shard")
    assert engine.waits_for(shard, engine.release("kai-scheduler")), "the kept shard goes before the release"
    for kept in (shard, *(q for q in engine.created(QUEUE) if q.name.startswith("kai-scheduler-"))):
        assert engine.waits_for(kept, kai_ready), "KAI's Queue webhook refuses the patch until it answers"


def test_the_isolator_and_the_runtime_class_shim_are_installed(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    release = engine.release("kai-resource-isolator").inputs
    assert release["chart"] == "oci://docker.io/projecthami/kai-resource-isolator"
    assert release["version"] == "1.1.0-chart"
    assert release["values"] == {"monitor": {"enabled": True}}
    isolator = engine.release("kai-resource-isolator")
    (gpu_labels,) = engine.created(NODE_PATCH)
    assert engine.waits_for(isolator, gpu_labels), "its monitor DaemonSet runs on the GPU nodes"
    assert not engine.waits_for(isolator, engine.release("kai-scheduler")), "it installs while KAI does"
    (runtime_class,) = engine.created(RUNTIME_CLASS)
    assert runtime_class.inputs["metadata"]["name"] == "nvidia"
    assert runtime_class.inputs["handler"] == "runc", "kind has no nvidia runtime"


def test_the_lab_pods_wait_for_queues_and_isolator_and_only_the_whole_gpu_pod_is_awaited(
    run_program: ProgramRunner,
) -> None:
    engine, outputs = run_program(LAB)
    pods = {p.inputs["metadata"]["name"]: p for p in engine.created(POD)}
    whole, shared = pods["kai-whole-gpu"], pods["gpu-sharing-with-isolation"]
    assert whole.inputs["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert not whole.inputs["metadata"].get("annotations"), "the whole-GPU pod must reach Running"
    assert shared.inputs["metadata"]["annotations"] == {"gpu-memory": "20480", "pulumi.com/skipAwait": "true"}
    assert shared.inputs["spec"]["containers"][0]["env"] == [{"name": "CUDA_DISABLE_CONTROL", "value": "true"}]
    assert "resources" not in shared.inputs["spec"]["containers"][0]
    for pod in pods.values():
        assert pod.inputs["metadata"]["labels"] == {"kai.scheduler/queue": "default-queue"}
        assert pod.inputs["spec"]["schedulerName"] == "kai-scheduler"
        for queue in lab_queues(engine).values():
            assert engine.waits_for(pod, queue)
        assert engine.waits_for(pod, engine.release("kai-resource-isolator"))
    assert outputs["labPods"] == ["kai-whole-gpu", "gpu-sharing-with-isolation"]


def test_the_lab_builds_no_fork_and_installs_no_gpu_operator(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    assert sorted(r.inputs["name"] for r in engine.created(RELEASE)) == [
        "kai-resource-isolator",
        "kai-scheduler",
        "nvml-mock",
    ]
    assert [c.name for c in engine.created(COMMAND)] == ["lab-cluster-kind", "nvml-mock-image"]


def test_a_lab_on_an_existing_cluster_must_name_its_gpu_nodes() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"profile": "lab", "lab": '{"kind": null}'})
    assert "kai-gpu-fractions:lab: " in str(caught.value)
    assert "gpuNodes" in str(caught.value)


def test_the_lab_needs_no_registry() -> None:
    assert parse_config({"profile": "lab"}).registry is None


def test_the_lab_proof_runs_after_the_lab_pods_with_the_profile(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(LAB)
    (proof,) = [r for r in engine.registrations if r.name == "lab-proof"]
    assert (proof.inputs["gpu_count"], proof.inputs["shared_memory_mib"]) == (8, 20480)
    assert engine.waits_for(proof, engine.one("kai-gpu-fractions:lab:LabPods", "lab-pods"))
    assert outputs["proofReport"] == "mocked"
    assert outputs["sharedPodBoundary"] == "mocked boundary", "the boundary output is what the proof saw"
    off, outputs = run_program({**LAB, "lab": {"prove": False}})
    assert [r for r in off.registrations if r.name == "lab-proof"] == [] and "proof" not in outputs
    assert outputs["sharedPodBoundary"].startswith("not observed: lab.prove is false"), (
        "without the proof the output must not claim what the shared pod did"
    )


def test_labels_wait_until_the_device_plugin_advertises_the_profiles_gpu_count(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    (ready,) = [r for r in engine.registrations if r.name == "gpus-allocatable"]
    assert (ready.inputs["gpu_count"], ready.inputs["nodes"]) == (8, ["kai-hami-test-control-plane"])
    assert engine.waits_for(ready, engine.created(DAEMONSET)[0]), "it checks what the device plugin advertises"
    (patch,) = engine.created(NODE_PATCH)
    assert engine.waits_for(patch, ready), "labels (and so KAI) follow a ready device plugin"


def test_destroy_deletes_kai_and_the_isolator_namespaces_together_then_nvml_mock(run_program: ProgramRunner) -> None:
    engine, _ = run_program(LAB)
    gone = engine.one("kai-gpu-fractions:index:NamespacesGone", "namespaces-gone")
    together = ["kai-scheduler", "kai-resource-reservation", "kai-resource-isolator"]
    assert gone.inputs["namespaces"] == together
    namespaces = {r.inputs["metadata"]["name"]: r for r in engine.created("kubernetes:core/v1:Namespace")}
    for name in together:
        assert namespaces[name].inputs["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}, name
        assert engine.waits_for(namespaces[name], gone), f"{name} is deleted before the wait starts"
    assert "annotations" not in namespaces["nvml-mock"].inputs["metadata"]
    assert engine.waits_for(gone, engine.one("kai-gpu-fractions:lab:GpuNodeLabels", "gpu-node-labels")), (
        "the GPU nodes' labels and nvml-mock go after"
    )
