"""The fork stack (Steps 1-5 of the build guide) under mocks: values, pins, ordering, rebuild triggers.

What the charts do with these values is left to the integration tier.
"""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest

from components.config.model import ForksConfig, GpuOperatorConfig
from components.forks.source import SourceError
from tests.unit.harness import (
    COMMAND,
    CUSTOM_RESOURCE_PREFIX,
    NAMESPACE,
    PACKAGE_RESOURCE,
    POD,
    RELEASE,
    SECRET,
    STEP_GATE,
    Engine,
    ProgramRunner,
)

REGISTRY = "registry.example.com/team/kai-fork"
TAG = "smshare-44d1d0a-af0544e"
KAI_COMMIT = "44d1d0a966465c69b1fd0d24b40b9a1ebb73699e"
AGENTS_COMMIT = "af0544e4dbd1d8e03ca14fc1e06d6265fabed99b"
A100: dict[str, Any] = {"registry": {"server": REGISTRY}}
PRIVATE = {"registry": {"server": REGISTRY, "username": "robot"}, "registryPassword": "hunter2"}
LOCAL_CHARTS = {
    "forks": {"images": "prebuilt"},
    "kai": {"chart": {"chart": "charts/kai-scheduler"}},
    "gpuFractioning": {"chart": {"chart": "charts/gpu-fractioning"}},
}


def with_overrides(base: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) else value
    return merged


def commands_by_name(engine: Any) -> dict[str, dict[str, Any]]:
    return {r.name: r.inputs for r in engine.created(COMMAND)}


def test_the_image_tag_defaults_to_one_naming_both_pinned_commits(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(A100)
    assert outputs["imageTag"] == TAG, "the default tag must record the pairing of both commits"
    kai = engine.release("kai-scheduler").inputs["values"]["global"]
    agents = engine.release("gpu-fractioning").inputs["values"]["images"]
    assert kai["tag"] == TAG
    assert {image["tag"] for image in agents.values()} == {TAG}, "both forks must share one tag"


def test_an_explicit_tag_reaches_every_image_of_both_forks(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(with_overrides(A100, forks={"tag": "exp-7"}))
    assert outputs["imageTag"] == "exp-7"
    assert engine.release("kai-scheduler").inputs["values"]["global"]["tag"] == "exp-7"
    assert {i["tag"] for i in engine.release("gpu-fractioning").inputs["values"]["images"].values()} == {"exp-7"}
    environments = [r.inputs["environment"] for r in engine.created(COMMAND)]
    built = {e.get("DOCKER_TAG") or e.get("VERSION") for e in environments if "DOCKER_REPO_BASE" in e}
    assert built == {"exp-7"}, "the images must be built with the tag the releases deploy"


def test_kai_gets_exactly_the_guides_values_for_the_fork(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    release = engine.release("kai-scheduler").inputs
    assert release["namespace"] == "kai-scheduler"
    assert release["chart"] == f".forks/KAI-Scheduler/{KAI_COMMIT[:12]}/deployments/kai-scheduler", (
        "the fork checkout's chart"
    )
    assert release["values"] == {
        "global": {
            "gpuSharingMode": "NvFractions",
            "registry": f"{REGISTRY}/kai-scheduler",
            "tag": TAG,
            "nvFractions": {"set": False},
        },
        "binder": {"runtimeClassName": "nvidia"},
        "kaiConfig": {"render": True},
        "kaiConfigDeployer": {"enabled": False},
    }
    assert not release.get("skipAwait"), "KAI must be waited for until its deployments are available"


def test_gpu_fractioning_gets_every_image_repository_and_tag(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    release = engine.release("gpu-fractioning").inputs
    assert release["chart"] == f".forks/kai-gpu-fractioning/{AGENTS_COMMIT[:12]}/operator/charts"
    assert release["namespace"] == "gpu-fractioning"
    assert release["values"] == {
        "images": {
            name: {"repository": f"{REGISTRY}/kai-gpu-fractioning/{name}", "tag": TAG}
            for name in ("operator", "mpsd", "fractiond", "metricsd")
        },
        "gpuOperator": {"minimumVersion": "v26.7.1"},
        "mpsDaemon": {"resources": {"limits": {"memory": "1Gi"}}},
    }


def test_the_gpu_operator_is_pinned_to_v26_7_1_with_the_r615_driver(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    release = engine.release("gpu-operator").inputs
    assert release["chart"] == "gpu-operator"
    assert release["version"] == "v26.7.1"
    assert release["repositoryOpts"] == {"repo": GpuOperatorConfig().chart.repo}, (
        "the NVIDIA Helm repository by default"
    )
    assert release["namespace"] == "gpu-operator"
    assert release["values"] == {
        "driver": {"enabled": True, "version": "615.71.09", "upgradePolicy": {"autoUpgrade": False}},
        "daemonsets": {
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "kai-gpu-fractions/driver-rollout", "operator": "Exists", "effect": "NoExecute"},
            ]
        },
    }


def test_host_driver_mode_turns_the_driver_container_off(run_program: ProgramRunner) -> None:
    engine, _ = run_program(with_overrides(A100, gpuOperator={"driver": {"source": "host"}}))
    assert engine.release("gpu-operator").inputs["values"] == {"driver": {"enabled": False}}


def test_a_stack_without_the_gpu_operator_installs_no_operator_release(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(with_overrides(A100, gpuOperator={"enabled": False}))
    assert [r.inputs["name"] for r in engine.created(RELEASE)] == ["kai-scheduler", "gpu-fractioning"]
    assert outputs["releases"]["gpu-operator"] == "not managed by this stack"


def test_the_graph_follows_the_guides_order(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    operator = engine.release("gpu-operator")
    kai = engine.release("kai-scheduler")
    agents = engine.release("gpu-fractioning")
    kai_images = engine.one("kai-gpu-fractions:forks:ForkImages", "kai-scheduler-images")
    agent_images = engine.one("kai-gpu-fractions:forks:ForkImages", "kai-gpu-fractioning-images")
    assert engine.waits_for(kai, kai_images), "KAI must install only after its images are pushed and verified"
    verified = engine.one("pulumi:index:Stash", "kai-scheduler-images-verified")
    assert engine.waits_for(kai, verified), "waiting for the images includes the registry check"
    assert engine.waits_for(verified, engine.one(COMMAND, "kai-scheduler-images-build")), "verify after build"
    assert engine.waits_for(agents, agent_images), "the node agents install only after their images exist"
    assert engine.waits_for(kai, operator), "KAI comes after the GPU Operator"
    assert engine.waits_for(agents, kai), "gpu-fractioning comes after KAI"
    assert not engine.waits_for(kai, agents), "and never the other way round"
    for pod in engine.created(POD):
        assert engine.waits_for(pod, agents), f"{pod.name} must wait for the node agents"


def test_each_step_starts_only_after_the_last_ones_verification_holds(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    steps = [engine.release("gpu-operator"), engine.release("kai-scheduler"), engine.release("gpu-fractioning")]
    gates = [engine.one(STEP_GATE, f"{step}-ready") for step in ("gpu-operator", "kai-scheduler", "gpu-fractioning")]
    following = [*steps[1:], *engine.created(POD)]
    for step, gate, after_gate in zip(steps, gates, following, strict=False):
        assert gate.inputs["step"] == step.inputs["name"]
        assert engine.waits_for(gate, step), f"the {gate.name} gate checks what {step.name} installed"
        assert engine.waits_for(after_gate, gate), f"{after_gate.name} waits for the {gate.name} gate"
        assert gate.inputs["triggers"]["revisions"][-1] == 1, "a new revision of the release runs the gate again"
    for pod in engine.created(POD):
        assert engine.waits_for(pod, gates[-1]), f"{pod.name} waits until every GPU node is ready for fractions"
    assert [g.inputs["timeout_seconds"] for g in gates] == [1800, 600, 900]
    assert gates[0].inputs["minimum_driver_major"] == 615
    assert gates[1].inputs["sharing_mode"] == "NvFractions"


def test_gate_timeouts_are_config_keys(run_program: ProgramRunner) -> None:
    engine, _ = run_program(
        with_overrides(
            A100,
            gpuOperator={"readyTimeoutSeconds": 60},
            kai={"readyTimeoutSeconds": 70},
            gpuFractioning={"readyTimeoutSeconds": 80},
        )
    )
    timeouts = [
        engine.one(STEP_GATE, f"{s}-ready").inputs["timeout_seconds"]
        for s in ("gpu-operator", "kai-scheduler", "gpu-fractioning")
    ]
    assert timeouts == [60, 70, 80]


def test_the_gpu_operator_gate_runs_when_another_stack_manages_the_operator(run_program: ProgramRunner) -> None:
    engine, _ = run_program(with_overrides(A100, gpuOperator={"enabled": False}))
    gate = engine.one(STEP_GATE, "gpu-operator-ready")
    assert engine.waits_for(engine.release("kai-scheduler"), gate), "KAI still waits for a ready GPU stack"


def test_destroy_deletes_the_default_gpu_fractioning_config_before_the_chart(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    (config,) = [r for r in engine.registrations if r.type.startswith(CUSTOM_RESOURCE_PREFIX)]
    assert config.type.endswith(":GpuFractioningConfig")
    assert config.inputs["metadata"]["name"] == "default"
    assert "spec" not in config.inputs, "the chart's values stay the only source of the config's spec"
    assert engine.waits_for(config, engine.release("gpu-fractioning")), (
        "a dependent is deleted first, so the operator can still clear the finalizer"
    )


def test_destroy_waits_for_the_mpsd_pods_after_the_config_and_before_the_chart(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    config = engine.one(
        "kubernetes:gpu-fractioning.kai.scheduler/v1alpha1:GpuFractioningConfig", "gpu-fractioning-default-config"
    )
    (waiter,) = [r for r in engine.registrations if r.name == "gpu-fractioning-mpsd-stopped"]
    assert (waiter.inputs["namespace"], waiter.inputs["label_selector"]) == (
        "gpu-fractioning",
        "app.kubernetes.io/component=mpsd",
    ), "the guide's `kubectl wait --for=delete pod -l app.kubernetes.io/component=mpsd`"
    assert waiter.inputs["timeout_seconds"] == 180
    assert engine.waits_for(config, waiter), "the config is deleted before the wait starts"
    assert engine.waits_for(waiter, engine.release("gpu-fractioning")), "the chart goes only after the wait"


def test_destroy_deletes_the_agents_namespaces_together_and_waits_once_before_the_gpu_operator(
    run_program: ProgramRunner,
) -> None:
    engine, _ = run_program(A100)
    gone = engine.one(f"{PACKAGE_RESOURCE}NamespacesGone", "namespaces-gone")
    together = ["kai-scheduler", "kai-resource-reservation", "gpu-fractioning"]
    assert gone.inputs["namespaces"] == together, "the guide's `kubectl delete namespace` after both charts"
    namespaces = {r.inputs["metadata"]["name"]: r for r in engine.created(NAMESPACE)}
    for name in together:
        assert namespaces[name].inputs["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}, name
        assert engine.waits_for(namespaces[name], gone), f"{name} is deleted before the wait starts"
    assert "annotations" not in namespaces["gpu-operator"].inputs["metadata"], "the last one waits for itself"
    assert engine.waits_for(gone, engine.one(STEP_GATE, "gpu-operator-ready")), (
        "the GPU Operator goes only once no pod of theirs is left"
    )


def test_each_fork_is_checked_out_at_its_pinned_commit_before_anything_registers(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    sources = {key: (pin.pull_request, pin.commit, workdir) for key, pin, workdir in engine.fork_sources}
    assert engine.fork_sources[0][1].repository == ForksConfig().kai_scheduler.repository
    assert sources == {
        "kai-scheduler": (2368, KAI_COMMIT, ".forks"),
        "kai-gpu-fractioning": (147, AGENTS_COMMIT, ".forks"),
    }
    commands = commands_by_name(engine)
    assert (
        commands["kai-scheduler-images-build"]["environment"]["FORK_CHECKOUT"]
        == f".forks/KAI-Scheduler/{KAI_COMMIT[:12]}"
    )
    assert (
        commands["kai-gpu-fractioning-images-build"]["environment"]["FORK_CHECKOUT"]
        == f".forks/kai-gpu-fractioning/{AGENTS_COMMIT[:12]}"
    )


def test_a_fork_that_cannot_be_checked_out_stops_the_program_before_anything_registers(
    monkeypatch: pytest.MonkeyPatch, run_program: ProgramRunner
) -> None:
    registered_before: list[int] = []

    def unreachable(engine: Engine, *_args: Any) -> Any:
        registered_before.append(len(engine.registrations))
        raise SourceError("`git fetch -q https://example.invalid/KAI.git pull/2368/head` failed: could not resolve")

    monkeypatch.setattr(Engine, "prepare_fork_source", unreachable)
    with pytest.raises(pulumi.RunError) as raised:
        run_program(A100)
    assert registered_before == [0], "the first fork is prepared before any resource registers"
    message = str(raised.value)
    assert "kai-gpu-fractions:forks.kaiScheduler" in message and "forks.workdir" in message
    assert "could not resolve" in message


def test_each_fork_is_built_with_its_own_make_targets_and_the_guides_variables(run_program: ProgramRunner) -> None:
    engine, _ = run_program(with_overrides(A100, forks={"platform": "linux/amd64"}))
    commands = commands_by_name(engine)
    kai = commands["kai-scheduler-images-build"]
    agents = commands["kai-gpu-fractioning-images-build"]
    assert "make build " in kai["create"]
    assert "make docker-build docker-push " in agents["create"]
    assert {k: kai["environment"][k] for k in kai["environment"] if k.startswith("DOCKER")} == {
        "DOCKER_REPO_BASE": f"{REGISTRY}/kai-scheduler",
        "DOCKER_TAG": TAG,
        "DOCKER_BUILDX_ADDITIONAL_ARGS": "--push",
        "DOCKER_BUILD_PLATFORM": "linux/amd64",
    }
    assert kai["environment"]["BUILDX_BUILDER"] == "default", "the guide needs a docker-driver builder"
    assert agents["environment"]["DOCKER_REPO_BASE"] == f"{REGISTRY}/kai-gpu-fractioning"
    assert agents["environment"]["VERSION"] == TAG
    assert agents["environment"]["PLATFORM"] == "linux/amd64"
    for variable in (
        "DOCKER_REPO_BASE",
        "DOCKER_TAG",
        "DOCKER_BUILDX_ADDITIONAL_ARGS",
        "DOCKER_BUILD_PLATFORM",
    ):
        assert f'{variable}="${variable}"' in kai["create"], f"{variable} must be passed on the make command line"


def test_changing_one_pin_rebuilds_exactly_that_fork(run_program: ProgramRunner) -> None:
    before, _ = run_program(A100)
    bumped = "0" * 40
    after, _ = run_program(
        with_overrides(
            A100,
            forks={
                "tag": TAG,
                "kaiScheduler": {
                    "repository": "https://example.com/kai.git",
                    "pullRequest": 2368,
                    "commit": bumped,
                },
            },
        )
    )
    old, new = commands_by_name(before), commands_by_name(after)
    assert old["kai-scheduler-images-build"]["triggers"] != new["kai-scheduler-images-build"]["triggers"]
    assert old["kai-gpu-fractioning-images-build"]["triggers"] == new["kai-gpu-fractioning-images-build"]["triggers"], (
        "the other fork must not rebuild"
    )
    assert old["kai-gpu-fractioning-images-build"] == new["kai-gpu-fractioning-images-build"]


def test_a_bump_of_one_fork_retags_the_other_under_the_pairs_new_tag_instead_of_rebuilding_it(
    run_program: ProgramRunner,
) -> None:
    before, _ = run_program(A100)
    bumped = "1" * 40
    after, outputs = run_program(with_overrides(A100, forks={"kaiScheduler": {"commit": bumped}}))
    old, new = commands_by_name(before), commands_by_name(after)
    fractioning_before, fractioning_after = (
        old["kai-gpu-fractioning-images-build"],
        new["kai-gpu-fractioning-images-build"],
    )
    assert fractioning_before["triggers"] == fractioning_after["triggers"], "no rebuild of the unchanged fork"
    assert (
        fractioning_after["environment"]["VERSION"]
        == outputs["imageTag"]
        != fractioning_before["environment"]["VERSION"]
    )
    assert "docker buildx imagetools create" in fractioning_after["update"], "the new tag is put on the pushed images"
    assert "make " not in fractioning_after["update"].split("elif")[1], "retagging never runs make"
    assert old["kai-scheduler-images-build"]["triggers"] != new["kai-scheduler-images-build"]["triggers"]


def test_unchanged_pins_give_identical_build_inputs_so_a_rerun_builds_nothing(run_program: ProgramRunner) -> None:
    first, _ = run_program(A100)
    second, _ = run_program(A100)
    assert commands_by_name(first) == commands_by_name(second)


@pytest.mark.parametrize("platform", [None, "linux/arm64"])
def test_the_platform_is_a_rebuild_trigger(platform: str | None, run_program: ProgramRunner) -> None:
    engine, _ = run_program(with_overrides(A100, forks={"platform": platform} if platform else {}))
    triggers = commands_by_name(engine)["kai-scheduler-images-build"]["triggers"]
    assert triggers == [KAI_COMMIT, REGISTRY, platform or "host"]


def test_every_expected_image_is_verified_in_the_registry_and_its_digest_exported(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(A100)
    checked = sorted(args["name"] for token, args in engine.invokes if token.startswith("docker:"))
    assert len(checked) == 19, "15 KAI services and 4 node agents"
    assert f"{REGISTRY}/kai-scheduler/helm-hooks:{TAG}" in checked
    assert f"{REGISTRY}/kai-gpu-fractioning/mpsd:{TAG}" in checked
    digests = outputs["imageDigests"]
    assert len(digests["kai-scheduler"]) == 15 and len(digests["kai-gpu-fractioning"]) == 4
    assert all(d.startswith("sha256:") for fork in digests.values() for d in fork.values())


def test_verify_mode_builds_nothing_but_still_checks_the_registry(run_program: ProgramRunner) -> None:
    engine, _ = run_program(with_overrides(A100, forks={"images": "verify"}))
    assert not [n for n in commands_by_name(engine) if n.endswith("-build")], "verify mode must not build"
    assert len([t for t, _ in engine.invokes if t.startswith("docker:")]) == 19


def test_prebuilt_images_with_mirrored_charts_need_no_checkout_build_or_registry(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(with_overrides(A100, **LOCAL_CHARTS))
    assert engine.fork_sources == [], "no fork is checked out"
    assert engine.created(COMMAND) == [], "nothing runs on the build machine"
    assert not engine.invokes, "nothing asks the registry"
    assert engine.release("kai-scheduler").inputs["chart"] == "charts/kai-scheduler"
    assert engine.release("kai-scheduler").inputs["values"]["global"]["tag"] == TAG
    assert outputs["imageDigests"] == {"kai-scheduler": {}, "kai-gpu-fractioning": {}}


def test_a_private_registry_gets_pull_secrets_holding_the_password_only_as_a_secret(run_program: ProgramRunner) -> None:
    engine, _ = run_program(PRIVATE, secret_keys=("registryPassword",))
    secrets = engine.created(SECRET)
    assert sorted(s.inputs["metadata"]["namespace"] for s in secrets) == ["gpu-fractioning", "kai-scheduler"]
    for secret in secrets:
        assert secret.inputs["type"] == "kubernetes.io/dockerconfigjson"
        string_data = secret.inputs["stringData"]
        assert string_data.get(pulumi.runtime.rpc._special_sig_key) == pulumi.runtime.rpc._special_secret_sig, (
            "the registry password must reach the cluster only as a Pulumi secret"
        )
    kai_values = engine.release("kai-scheduler").inputs["values"]
    assert kai_values["global"]["imagePullSecrets"] == [{"name": "kai-fork-registry"}]
    assert engine.release("gpu-fractioning").inputs["values"]["imagePullSecrets"] == [{"name": "kai-fork-registry"}]
    build = commands_by_name(engine)["kai-scheduler-images-build"]
    assert build["environment"].get(pulumi.runtime.rpc._special_sig_key) == pulumi.runtime.rpc._special_secret_sig, (
        "a build command that logs in carries the password only as a secret"
    )


def test_smoke_pods_are_the_guides_two_half_gpu_non_root_pods(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(A100)
    assert outputs["smokePods"] == ["fraction-smoke-a", "fraction-smoke-b"]
    for pod in engine.created(POD):
        metadata, spec = pod.inputs["metadata"], pod.inputs["spec"]
        assert metadata["annotations"] == {
            "gpu-fraction": "0.5",
            "nvidia.com/container.main.gpu-compute.mode": "sm-sharing",
            "kai-gpu-fractions/started-on-driver": "615.71.09",
        }
        assert pod.replace_on_changes == ["metadata.annotations"], "a new driver drains them: they start again"
        assert pod.delete_before_replace, "under the same names"
        assert metadata["labels"]["kai.scheduler/queue"] == "default-queue"
        assert spec["schedulerName"] == "kai-scheduler"
        assert spec["runtimeClassName"] == "nvidia"
        assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000}
        (container,) = spec["containers"]
        assert container["name"] == "main", "the compute-mode annotation names this container"
        assert container["image"] == "nvidia/cuda:13.3.1-base-ubuntu24.04"
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        }
        assert "resources" not in container, "a fractional pod must not ask for nvidia.com/gpu"


def test_no_smoke_pods_when_the_smoke_test_is_off(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(with_overrides(A100, smokeTest={"enabled": False}))
    assert engine.created(POD) == []
    assert "smokePods" not in outputs


def test_stack_outputs_report_tag_digests_and_release_statuses(run_program: ProgramRunner) -> None:
    _, outputs = run_program(A100)
    assert set(outputs) == {
        "imageTag",
        "imageDigests",
        "releases",
        "smokePods",
        "proof",
        "proofReport",
        "provedOn",
        "preflight",
        "rolloutPlan",
    }
    assert outputs["preflight"] == [], "a prepared cluster passes every preflight row"
    assert outputs["releases"] == {
        "gpu-operator": "deployed",
        "kai-scheduler": "deployed",
        "gpu-fractioning": "deployed",
    }


def test_namespaces_of_privileged_node_daemons_allow_privileged_pods(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    labels = {n.inputs["metadata"]["name"]: n.inputs["metadata"].get("labels") for n in engine.created(NAMESPACE)}
    system = {"kai-gpu-fractions/system-namespace": "true"}
    privileged = {**system, "pod-security.kubernetes.io/enforce": "privileged"}
    assert labels["gpu-operator"] == privileged
    assert labels["gpu-fractioning"] == privileged
    assert labels["kai-scheduler"] == system, "every namespace the stack creates is a system namespace"


def test_objects_the_kai_chart_keeps_on_uninstall_are_owned_and_deleted_before_it(run_program: ProgramRunner) -> None:
    engine, _ = run_program(A100)
    kai = engine.release("kai-scheduler")
    adopted = {
        name: engine.one(typ, f"kai-scheduler-{name}")
        for typ, name in [
            ("kubernetes:scheduling.run.ai/v2:Queue", "default-parent-queue"),
            ("kubernetes:scheduling.run.ai/v2:Queue", "default-queue"),
            ("kubernetes:kai.scheduler/v1:SchedulingShard", "default-shard"),
            ("kubernetes:core/v1:Namespace", "reservation-namespace"),
        ]
    }
    assert adopted["default-shard"].inputs["metadata"]["name"] == "default"
    assert adopted["reservation-namespace"].inputs["metadata"]["name"] == "kai-resource-reservation"
    kai_ready = engine.one(STEP_GATE, "kai-scheduler-ready")
    for name, resource in adopted.items():
        assert engine.waits_for(resource, kai), f"{name} must be deleted before KAI is uninstalled"
        assert "spec" not in resource.inputs, "the chart stays the only source of the kept object's fields"
        if name != "reservation-namespace":
            assert engine.waits_for(resource, kai_ready), f"KAI's webhooks refuse the {name} patch until they answer"


def test_the_smoke_proof_runs_after_the_smoke_pods_with_the_guides_expectations(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(A100)
    (proof,) = [r for r in engine.registrations if r.name == "smoke-proof"]
    assert proof.type == "kai-gpu-fractions:index:SmokeProof", "the proof runs inside the update"
    assert proof.inputs["pods"] == ["fraction-smoke-a", "fraction-smoke-b"]
    assert (proof.inputs["gpu_memory_mib"], proof.inputs["gpu_fraction"]) == (40960, 0.5)
    assert engine.waits_for(proof, engine.one("kai-gpu-fractions:smoke:SmokePods", "smoke-test"))
    assert outputs["proofReport"] == "mocked"
    assert proof.inputs["triggers"]["revisions"] == [1, 1, 1], "a new revision of any release re-runs the proof"
    assert outputs["provedOn"] == proof.inputs["triggers"]["versions"], "the versions the proof last held on"
    assert outputs["provedOn"]["driver"] == "615.71.09"
    assert outputs["provedOn"]["kaiScheduler"] == "fork 44d1d0a966465c69b1fd0d24b40b9a1ebb73699e"
    for release in ("kai-scheduler", "gpu-fractioning"):
        assert engine.waits_for(proof, engine.release(release))


GPU_SIDE_CHANGES = {
    "driver": ({"gpuOperator": {"driver": {"version": "615.80.01"}}}, "gpu-operator"),
    "gpuOperator": ({"gpuOperator": {"chart": {"version": "v26.7.2"}}}, "gpu-operator"),
    "kaiScheduler": ({"forks": {"kaiScheduler": {"commit": "1" * 40}}}, "kai-scheduler"),
    "gpuFractioning": ({"forks": {"gpuFractioning": {"commit": "2" * 40}}}, "gpu-fractioning"),
}
GATED_IN_ORDER = ("gpu-operator", "kai-scheduler", "gpu-fractioning")


@pytest.mark.parametrize("changed", list(GPU_SIDE_CHANGES))
def test_a_gpu_side_change_reruns_every_gate_after_it_and_the_proof(run_program: ProgramRunner, changed: str) -> None:
    """A driver bump is a new install for KAI's and gpu-fractioning's gates and the proof too, not only
    for the GPU Operator's: each one's triggers hold every GPU-side version up to its step."""
    override, first = GPU_SIDE_CHANGES[changed]
    before, _ = run_program(A100)
    after, _ = run_program(with_overrides(A100, **override))

    def triggers(engine: Any, name: str) -> Any:
        return engine.one(STEP_GATE, f"{name}-ready").inputs["triggers"]

    for step in GATED_IN_ORDER:
        rerun = GATED_IN_ORDER.index(step) >= GATED_IN_ORDER.index(first)
        assert (triggers(before, step) != triggers(after, step)) == rerun, f"{changed}: the {step} gate"
    proofs = [[r.inputs["triggers"] for r in e.registrations if r.name == "smoke-proof"] for e in (before, after)]
    assert proofs[0] != proofs[1], f"{changed}: the smoke proof runs again"


def test_no_proof_when_proving_is_off(run_program: ProgramRunner) -> None:
    engine, outputs = run_program(with_overrides(A100, smokeTest={"prove": False}))
    assert [r for r in engine.registrations if r.name == "smoke-proof"] == []
    assert "proof" not in outputs
