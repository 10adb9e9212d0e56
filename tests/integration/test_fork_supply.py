"""The fork supply chain under the real engine: build, push, verify and rebuild only what changed.

The a100 stack from both stand-in forks' checkouts (tests/integration/stand_in_forks.py): their
Makefiles build real OCI images that crane pushes to the control plane's registry (distribution,
htpasswd, TLS), the command plugin runs the builds and the docker plugin reads the digests back;
the charts come from the checkouts. What cannot run here is replaced by labelled stand-ins: the
command and docker provider plugins (tools/standin-plugins), the docker CLI
(tests/fixtures/build-tools/docker: `login` and `buildx imagetools create` only) and the forks.
The stack proves the caps with the smoke proof, against the stand-in node of test_proofs.py. The
tests run in order, on one stack, as its operator would over time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.forks.recipes import GPU_FRACTIONING, KAI_SCHEDULER, ForkRecipe
from tests.integration.conftest import leftovers
from tests.integration.stand_in_forks import Registry, StandInFork, make_stand_in_fork
from tests.integration.test_fork_stack import a100_config
from tests.integration.test_proofs import CAPPED_EVIDENCE, StandInNode
from tests.integration.workspace import Workspace, helm, kubectl_json

pytestmark = pytest.mark.integration

STACK = "supply"
KAI, FRACTIONING = KAI_SCHEDULER.key, GPU_FRACTIONING.key
WRONG_PASSWORD = "not-the-registry-password-5c1d"
OUT_OF_BAND_TAG = "mirrored-1"
PROOF_CHECKS = ("binder-annotations", "injected-env", "mps-namespaces", "memory-view", "sm-share")


@dataclass(frozen=True)
class BuildMachine:
    """Where `pulumi up` runs: its docker config, and the record of every image build."""

    docker_config: Path
    record: Path

    def builds(self) -> list[tuple[str, str]]:
        """(image reference, commit) of every build so far, in order."""
        lines = self.record.read_text().splitlines() if self.record.exists() else []
        return [(reference, commit) for reference, commit in (line.split() for line in lines)]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.of_control_plane()


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, StandInFork]:
    base = tmp_path_factory.mktemp("forks")
    return {recipe.key: make_stand_in_fork(base, recipe) for recipe in (KAI_SCHEDULER, GPU_FRACTIONING)}


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[BuildMachine]:
    base = tmp_path_factory.mktemp("build-machine")
    found = BuildMachine(base / "docker", base / "builds.log")
    found.docker_config.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        for key, value in registry.environment(found.docker_config).items():
            patch.setenv(key, value)
        patch.setenv("STAND_IN_BUILD_RECORD", str(found.record))
        yield found


def supply_config(registry: Registry, forks: dict[str, StandInFork], **pins: dict[str, Any]) -> dict[str, Any]:
    """Pulumi.a100.yaml with the stand-in forks, their charts, and the control plane's registry."""
    config = a100_config()
    config["registry"] = {"server": f"{registry.host}/team/kai-fork", "username": registry.username}
    config["forks"] = {
        **config["forks"],
        "kaiScheduler": pins.get("kaiScheduler", forks[KAI].pin()),
        "gpuFractioning": pins.get("gpuFractioning", forks[FRACTIONING].pin()),
        "images": "build",
    }
    del config["kai"], config["gpuFractioning"]  # the charts come from the checkouts
    return config


@pytest.fixture(scope="module")
def supply(
    tmp_path_factory: pytest.TempPathFactory, registry: Registry, forks: dict[str, StandInFork], machine: BuildMachine
) -> Iterator[Workspace]:
    base = tmp_path_factory.mktemp("supply")
    workspace = Workspace.create(base)
    config = supply_config(registry, forks)
    config["smokeTest"] = {"prove": True}
    workspace.new_stack(STACK, config, secrets={"registryPassword": registry.password})
    with StandInNode(base) as node:
        node.show(**CAPPED_EVIDENCE)
        yield workspace
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack=STACK, check=False, timeout=900)


def up(workspace: Workspace, *args: str, stack: str = STACK, check: bool = True) -> str:
    return workspace.pulumi("up", "--yes", "--skip-preview", *args, stack=stack, check=check, timeout=1500).output


def image_reference(registry: Registry, fork: str, image: str, tag: str) -> str:
    return f"{registry.host}/team/kai-fork/{fork}/{image}:{tag}"


def digest_in_registry(registry: Registry, machine: BuildMachine, fork: str, image: str, tag: str) -> str | None:
    return registry.digest(machine.docker_config, image_reference(registry, fork, image, tag))


def revisions() -> dict[str, int]:
    return {
        release["name"]: int(release["revision"]) for release in json.loads(helm("list", "-A", "-o", "json").stdout)
    }


def set_config(workspace: Workspace, key: str, value: str) -> None:
    workspace.pulumi("config", "set", "--path", key, value, stack=STACK)


def test_a_cold_up_builds_pushes_and_verifies_all_19_images_then_installs_the_pair(
    supply: Workspace, machine: BuildMachine, registry: Registry, forks: dict[str, StandInFork]
) -> None:
    output = up(supply)
    outputs = supply.outputs(STACK)
    tag = outputs["imageTag"]
    assert tag == f"smshare-{forks[KAI].commits['pinned'][:7]}-{forks[FRACTIONING].commits['pinned'][:7]}"
    expected = {
        (image_reference(registry, recipe.image_path, image, tag), forks[recipe.key].commits["pinned"])
        for recipe in (KAI_SCHEDULER, GPU_FRACTIONING)
        for image in recipe.images
    }
    builds = machine.builds()
    assert len(builds) == 19 and set(builds) == expected, "each of the 19 images built once, from its pin"
    digests = outputs["imageDigests"]
    assert (len(digests[KAI]), len(digests[FRACTIONING])) == (15, 4)
    for recipe in (KAI_SCHEDULER, GPU_FRACTIONING):
        for image, digest in digests[recipe.key].items():
            in_registry = registry.digest(
                machine.docker_config, image_reference(registry, recipe.image_path, image, tag)
            )
            assert digest == in_registry, f"{recipe.key}/{image}: the exported digest must be the registry's"

    config = kubectl_json("get", "configs.kai.scheduler", "kai-config")
    assert config["spec"]["binder"]["service"]["image"]["tag"] == tag
    assert config["spec"]["binder"]["service"]["image"]["repository"] == f"{registry.host}/team/kai-fork/kai-scheduler"
    operator = kubectl_json("-n", "gpu-fractioning", "get", "deployment", "gpu-fractioning")
    assert operator["spec"]["template"]["spec"]["containers"][0]["image"] == image_reference(
        registry, "kai-gpu-fractioning", "operator", tag
    )
    results = {result["check"]: result["passed"] for result in outputs["proof"]}
    assert results == dict.fromkeys(PROOF_CHECKS, True), "the smoke proof holds on the pair just built"
    assert registry.password not in output
    for state_file in supply.state_files():
        assert registry.password not in state_file.read_text(errors="replace"), f"plaintext password in {state_file}"


def test_a_second_up_changes_nothing_and_builds_nothing(supply: Workspace, machine: BuildMachine) -> None:
    before = machine.builds()
    up(supply, "--expect-no-changes")
    assert machine.builds() == before


@pytest.mark.parametrize(("bumped", "other"), [(KAI_SCHEDULER, GPU_FRACTIONING), (GPU_FRACTIONING, KAI_SCHEDULER)])
def test_a_pin_bump_builds_exactly_that_fork_and_only_retags_the_other(
    supply: Workspace,
    machine: BuildMachine,
    registry: Registry,
    forks: dict[str, StandInFork],
    bumped: ForkRecipe,
    other: ForkRecipe,
) -> None:
    before_builds, before_outputs, before_revisions = machine.builds(), supply.outputs(STACK), revisions()
    set_config(supply, f"forks.{bumped.config_key.split('.')[1]}.commit", forks[bumped.key].commits["bumped"])
    preview = json.loads(supply.pulumi("preview", "--json", stack=STACK).stdout)
    ops: dict[str, set[str]] = {}
    for step in preview["steps"]:
        ops.setdefault(step["urn"].rsplit("::", 1)[1], set()).add(step["op"])
    assert "replace" in ops[f"{bumped.key}-images-build"], ops
    assert ops[f"{other.key}-images-build"] == {"update"}, "the other fork's images only get the new tag"

    up(supply)
    new_builds = machine.builds()[len(before_builds) :]
    assert len(new_builds) == len(bumped.images), f"exactly {bumped.key}'s images are built: {new_builds}"
    assert {commit for _, commit in new_builds} == {forks[bumped.key].commits["bumped"]}
    outputs = supply.outputs(STACK)
    tag = outputs["imageTag"]
    assert tag != before_outputs["imageTag"]
    assert outputs["imageDigests"][other.key] == before_outputs["imageDigests"][other.key], "same images, new tag"
    for image, digest in outputs["imageDigests"][other.key].items():
        assert digest_in_registry(registry, machine, other.image_path, image, tag) == digest
    for image, digest in outputs["imageDigests"][bumped.key].items():
        assert digest != before_outputs["imageDigests"][bumped.key][image], f"{image}: the new build's digest"
        assert digest_in_registry(registry, machine, bumped.image_path, image, tag) == digest
    release = {KAI: "kai-scheduler", FRACTIONING: "gpu-fractioning"}[bumped.key]
    assert revisions()[release] == before_revisions[release] + 1
    assert revisions()["gpu-operator"] == before_revisions["gpu-operator"], "the GPU Operator is not touched"


def test_verify_mode_takes_images_pushed_out_of_band_and_builds_nothing(
    supply: Workspace, machine: BuildMachine, registry: Registry
) -> None:
    outputs = supply.outputs(STACK)
    registry.login(machine.docker_config)
    for recipe in (KAI_SCHEDULER, GPU_FRACTIONING):
        for image in recipe.images:
            source = image_reference(registry, recipe.image_path, image, outputs["imageTag"])
            registry.crane(machine.docker_config, "copy", source, source.rsplit(":", 1)[0] + f":{OUT_OF_BAND_TAG}")
    before = machine.builds()
    set_config(supply, "forks.images", "verify")
    set_config(supply, "forks.tag", OUT_OF_BAND_TAG)
    up(supply)
    assert machine.builds() == before
    outputs = supply.outputs(STACK)
    for recipe in (KAI_SCHEDULER, GPU_FRACTIONING):
        for image, digest in outputs["imageDigests"][recipe.key].items():
            assert digest == digest_in_registry(registry, machine, recipe.image_path, image, OUT_OF_BAND_TAG)
    config = kubectl_json("get", "configs.kai.scheduler", "kai-config")
    assert config["spec"]["binder"]["service"]["image"]["tag"] == OUT_OF_BAND_TAG


def test_verify_mode_fails_naming_an_image_nobody_pushed_before_kai_changes(
    supply: Workspace, machine: BuildMachine, registry: Registry
) -> None:
    before = revisions()
    set_config(supply, "forks.tag", "never-pushed")
    output = up(supply, check=False)
    assert "error" in output.lower()
    missing = re.search(r"team/kai-fork/kai-(scheduler|gpu-fractioning)/[a-z-]+:never-pushed\b.*404", output)
    assert missing, "the error names a missing image and the registry's answer: " + output[-4000:]
    assert revisions() == before, "no release moves to images that are not there"
    set_config(supply, "forks.tag", OUT_OF_BAND_TAG)


def test_prebuilt_mode_looks_nothing_up(supply: Workspace, machine: BuildMachine) -> None:
    before = machine.builds()
    set_config(supply, "forks.images", "prebuilt")
    up(supply)
    assert supply.outputs(STACK)["imageDigests"] == {KAI: {}, FRACTIONING: {}}
    assert machine.builds() == before


def test_a_wrong_registry_password_fails_naming_the_registry_and_never_shows_the_password(
    supply: Workspace, machine: BuildMachine, registry: Registry
) -> None:
    before = revisions()
    set_config(supply, "forks.images", "build")
    supply.pulumi("config", "set", "--secret", "registryPassword", WRONG_PASSWORD, stack=STACK)
    output = up(supply, check=False)
    assert f"docker login to {registry.host} failed" in output, output[-4000:]
    assert "kai-gpu-fractions:registry.username and registryPassword" in output
    assert revisions() == before
    for secret in (WRONG_PASSWORD, registry.password):
        assert secret not in output
        for state_file in supply.state_files():
            assert secret not in state_file.read_text(errors="replace"), f"plaintext password in {state_file}"


def test_destroy_leaves_nothing_of_the_stack(supply: Workspace) -> None:
    supply.pulumi("destroy", "--yes", "--skip-preview", stack=STACK, timeout=900)
    assert leftovers() == {}


def test_a_build_that_pushes_nothing_fails_at_verification_before_kai_is_installed(
    tmp_path: Path, registry: Registry, forks: dict[str, StandInFork], machine: BuildMachine
) -> None:
    """The guide's trap: `make build` without --push reaching the Makefile succeeds and pushes nothing."""
    workspace = Workspace.create(tmp_path)
    config = supply_config(registry, forks, kaiScheduler=forks[KAI].pin("pushes-nothing"))
    workspace.new_stack("trap", config, secrets={"registryPassword": registry.password})
    try:
        output = up(workspace, stack="trap", check=False)
        tag = f"smshare-{forks[KAI].commits['pushes-nothing'][:7]}-{forks[FRACTIONING].commits['pinned'][:7]}"
        assert (image_reference(registry, "kai-scheduler", "scheduler", tag), forks[KAI].commits["pushes-nothing"]) in (
            machine.builds()
        ), "the build ran"
        missing = re.search(rf"team/kai-fork/kai-scheduler/[a-z-]+:{tag}\b.*404", output)
        assert missing, "the error names a missing KAI image and the registry's answer: " + output[-4000:]
        state = json.loads(workspace.pulumi("stack", "export", stack="trap").stdout)
        names = {resource["urn"].rsplit("::", 1)[1] for resource in state["deployment"].get("resources") or []}
        assert "kai-scheduler-release" not in names and "gpu-fractioning-release" not in names
        assert "kai-scheduler" not in revisions(), "KAI must not be installed"
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="trap", check=False, timeout=900)
