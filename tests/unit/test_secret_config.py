"""Config keys stored as secrets, whole or by path: what the program derives from them reaches the
engine (and so the state, the outputs and the preview's diff) only as Pulumi secrets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

from components.config.load import ConfigError, load_from_pulumi
from components.config.secrets import REDACTED, SecretValues
from tests.unit.harness import COMMAND, PACKAGE_RESOURCE, STEP_GATE, ProgramRunner, stack_config

SIG, SECRET_SIG = pulumi.runtime.rpc._special_sig_key, pulumi.runtime.rpc._special_secret_sig
FORK: dict[str, Any] = {"registry": {"server": "registry.example.com/team/kai-fork"}}
LAB: dict[str, Any] = {"profile": "lab"}
# The lab on a cluster that exists: `cluster` says which.
LAB_EXISTING: dict[str, Any] = {"profile": "lab", "lab": {"kind": None, "gpuNodes": ["gpu-node-0"]}}


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SIG) == SECRET_SIG


def secret_at(value: Any, *path: str | int) -> bool:
    """Whether the input at `path` is a secret, itself or as part of a secret around it (an SDK
    may send a list or map with a secret in it as one secret)."""
    for step in path:
        if is_secret(value):
            return True
        value = value[step]
    return is_secret(value)


def plaintexts(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every string and number in the recorded inputs that is not inside a secret, with its path."""
    if is_secret(value):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield (f"{path}.{key}", key)
            yield from plaintexts(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from plaintexts(item, f"{path}[{index}]")
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield (path, value)


def leaks(run_program: ProgramRunner, outputs: dict[str, Any], probe: str | int) -> list[str]:
    """Where the probe shows in plaintext: a resource input, or a stack output that is not secret."""
    found = [
        f"{r.type} {r.name}{path}"
        for r in run_program.engine.registrations
        for path, value in plaintexts(r.inputs)
        if (probe in value if isinstance(value, str) and isinstance(probe, str) else value == probe)
    ]
    found += [
        f"output {name}"
        for name, value in outputs.items()
        if name not in run_program.secret_outputs and str(probe) in json.dumps(value)
    ]
    return found


# Each top-level key, marked secret with a value the program uses, and a probe of it that must not
# show in plaintext. Left out: `profile` ("fork" or "lab" is no text to look for: the graph itself
# shows which), `preflight` (its values reach no resource: preflight reads the cluster), and names
# that become an object's name (an ID, which Pulumi keeps in plaintext).
CASES = [
    (FORK, "cluster", {"kubeconfig": "~/.kube/kgf-secret-config", "context": "kgf-secret-context"}, "kgf-secret"),
    (FORK, "registry", {"server": "registry.kgf-secret.example:5000/team", "username": "kgfrobot"}, "kgf-secret"),
    (FORK, "forks", {"tag": "smshare-kgf-secret", "platform": "linux/arm64"}, "kgf-secret"),
    (FORK, "forks", {"kaiScheduler": {"commit": "4b1d" + "0" * 36}, "workdir": "kgf-secret-forks"}, "4b1d000"),
    (FORK, "gpuOperator", {"driver": {"version": "615.42.42"}, "readyTimeoutSeconds": 4321}, "615.42.42"),
    (FORK, "kai", {"binderRuntimeClass": "kgf-secret-rc", "readyTimeoutSeconds": 4322}, 4322),
    (FORK, "gpuFractioning", {"readyTimeoutSeconds": 4323, "nodeRuntime": "k3s"}, 4323),
    (FORK, "nodes", {"gpusPerNode": 8, "gpuMemoryMib": 40962}, 40962),
    (FORK, "smokeTest", {"image": "nvidia/cuda:13.3.1-kgf-secret", "queue": "kgf-secret-queue"}, "kgf-secret"),
    (LAB_EXISTING, "cluster", {"context": "kgf-secret-context"}, "kgf-secret-context"),
    (LAB, "lab", {"devicePluginImage": "nvcr.io/nvidia/k8s-device-plugin:v0.18.2-kgfsecret"}, "kgfsecret"),
    (LAB, "kai", {"readyTimeoutSeconds": 4324}, 4324),
]


@pytest.mark.parametrize(("base", "key", "value", "probe"), CASES, ids=[f"{c[1]}-{c[3]}" for c in CASES])
def test_a_key_stored_as_a_secret_reaches_no_input_or_output_in_plaintext(
    base: dict[str, Any], key: str, value: Any, probe: str | int, run_program: ProgramRunner
) -> None:
    config = {**base, key: {**base.get(key, {}), **value} if isinstance(value, dict) else value}
    _, plain = run_program(config)
    assert leaks(run_program, plain, probe), f"the probe must reach the program's inputs at all: {key}"
    _, outputs = run_program(config, secret_keys=(key,))
    assert leaks(run_program, outputs, probe) == [], f"{key} is stored as a secret"


def test_the_issues_nine_and_six_inputs_are_secrets_and_the_rest_stays_plain(run_program: ProgramRunner) -> None:
    config = {"registry": {"server": "registry.kgf-secret.example/team"}, "cluster": {"context": "kgf-secret"}}
    engine, _ = run_program(config, secret_keys=("registry", "cluster"))
    builds = [r for r in engine.created(COMMAND) if r.name.endswith("-images-build")]
    assert len(builds) == 2
    for build in builds:
        assert secret_at(build.sent, "environment", "DOCKER_REPO_BASE"), f"{build.name}: DOCKER_REPO_BASE"
        assert secret_at(build.sent, "triggers", 1), f"{build.name}: the registry server is a rebuild trigger"
    kai = engine.release("kai-scheduler").sent["values"]
    assert secret_at(kai, "global", "registry"), "KAI's global.registry"
    assert kai["global"]["tag"] == "smshare-44d1d0a-af0544e", "values that hold no secret stay readable in diffs"
    agents = engine.release("gpu-fractioning").sent["values"]
    images = ("operator", "mpsd", "fractiond", "metricsd")
    assert all(secret_at(agents, "images", image, "repository") for image in images), "the four image repositories"
    assert agents["images"]["mpsd"]["tag"] == "smshare-44d1d0a-af0544e"
    provider = engine.one("pulumi:providers:kubernetes", "cluster")
    assert is_secret(provider.sent["context"]), "the provider's context"
    gates = engine.created(STEP_GATE)
    assert len(gates) == 4 and all(is_secret(gate.inputs["context"]) for gate in gates), "the four gates"
    others = [r for r in engine.registrations if "context" in r.inputs and r.type.startswith(PACKAGE_RESOURCE)]
    assert all(is_secret(r.inputs["context"]) for r in others), [r.name for r in others]


def test_outputs_that_mirror_or_derive_from_a_secret_input_are_stored_as_secrets(run_program: ProgramRunner) -> None:
    """The engine applies these to every step, also when an up only changes what is secret, so
    outputs a provider returned in plaintext before the key was stored as a secret become secrets."""
    config = {**FORK, "forks": {"tag": "smshare-kgf-secret"}, "cluster": {"context": "kgf-secret-context"}}
    engine, _ = run_program(config, secret_keys=("forks", "cluster"))
    build = engine.one(COMMAND, "kai-scheduler-images-build")
    assert {"environment", "stdout"} <= set(build.secret_outputs), "the build prints the tag it pushed"
    assert build.inputs["logging"] == "none", "and the plugin would stream that into the update's log"
    assert "values" in engine.release("kai-scheduler").secret_outputs
    gates = engine.created(STEP_GATE)
    assert all("context" in gate.secret_outputs for gate in gates), "dynamic providers echo their inputs"
    assert all(len(set(gate.secret_outputs)) == len(gate.secret_outputs) for gate in gates), "each name once"
    assert "context" in engine.one("pulumi:providers:kubernetes", "cluster").secret_outputs
    assert "status" not in engine.release("kai-scheduler").secret_outputs, "its chart and namespace are no secret"


def test_a_path_stored_as_a_secret_makes_its_whole_top_level_key_secret(run_program: ProgramRunner) -> None:
    """`pulumi config set --secret --path cluster.kubeconfig`: the engine reports `cluster` as secret."""
    config = {**FORK, "cluster": {"kubeconfig": "apiVersion: v1\nkind: Config\n", "context": "kgf-path-context"}}
    _, outputs = run_program(config, secret_keys=("cluster",))
    assert leaks(run_program, outputs, "kgf-path-context") == []


def test_without_secret_keys_nothing_becomes_secret(run_program: ProgramRunner) -> None:
    engine, _ = run_program(FORK)
    release = engine.release("kai-scheduler")
    assert not is_secret(release.inputs["values"]) and not is_secret(release.inputs["values"]["global"]["registry"])
    assert run_program.secret_outputs == set()


def test_stack_outputs_derived_from_a_secret_key_are_secret(run_program: ProgramRunner) -> None:
    _, outputs = run_program({**FORK, "forks": {"tag": "smshare-kgf-secret"}}, secret_keys=("forks",))
    assert "imageTag" in run_program.secret_outputs, "the tag is the secret itself"
    assert "releases" not in run_program.secret_outputs or outputs["releases"] is not None


def test_a_config_error_quotes_no_secret_value(monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"profile": "lab", "lab": {"kind": None, "gpuNodes": ["kgf-secret-node", "kgf-secret-node"]}}
    monkeypatch.setattr(pulumi.runtime.config, "get_config_env", lambda: stack_config(config))
    monkeypatch.setattr(pulumi.runtime.config, "is_config_secret", lambda key: key == "kai-gpu-fractions:lab")
    with pytest.raises(ConfigError) as refused:
        load_from_pulumi()
    assert str(refused.value).splitlines()[1].startswith("  - kai-gpu-fractions:lab.gpuNodes: names [secret] more")
    assert "kgf-secret-node" not in str(refused.value)


def test_redaction_and_taint_rules() -> None:
    raw = {"registry": {"server": "localhost:5000/kgf", "username": "ab"}, "nodes": {"gpusPerNode": 7}}
    secrets = SecretValues.of(raw, None, frozenset({"registry", "nodes", "lab"}))
    assert secrets.keys == {"registry", "nodes"}, "a key that is not set holds nothing"
    assert secrets.taints("localhost:5000/kgf/kai-scheduler") and secrets.taints(7) and secrets.taints("7")
    assert not secrets.taints("17") and not secrets.taints(True), "short texts match whole values only"
    assert secrets.taints("ab") and not secrets.taints("abc"), "a short text matches only itself"
    assert secrets.redact("pushing localhost:5000/kgf/operator") == f"pushing {REDACTED}/operator"
    by_path = SecretValues.of({"kai": {"readyTimeoutSeconds": "599"}}, None, frozenset({"kai"}))
    assert by_path.taints(599), "`config set --secret --path kai.readyTimeoutSeconds 599` stores the text 599"


def test_a_pods_status_which_repeats_its_spec_is_stored_as_a_secret(run_program: ProgramRunner) -> None:
    config = {**FORK, "smokeTest": {"image": "nvidia/cuda:13.3.1-kgf-secret"}}
    engine, _ = run_program(config, secret_keys=("smokeTest",))
    pods = [r for r in engine.created("kubernetes:core/v1:Pod") if "smoke" in r.name]
    assert pods and all({"spec", "status", "__inputs"} <= set(pod.secret_outputs) for pod in pods), (
        "containerStatuses' images, and the provider's copy of the inputs"
    )
    for pod in pods:
        assert secret_at(pod.sent, "spec", "containers", 0, "image"), "the image itself"
        assert not is_secret(pod.sent["spec"]), "args objects are protected field by field: the rest stays readable"
        assert pod.sent["spec"]["runtimeClassName"] == "nvidia"


@pytest.mark.parametrize("profile", ["fork", "lab"])
def test_the_integration_rounds_store_each_key_once_and_never_two_text_or_two_number_probes_together(
    profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/integration/test_secret_config.py pairs its rounds: each key, whole and by path, in one
    round; a round holds at most one text probe and one number probe (two of a kind could hide each
    other's leak) and a key once."""
    from tests.integration.test_dev_stack import dev_config
    from tests.integration.test_fork_stack import a100_config
    from tests.integration.test_secret_config import FORK_KEYS, LAB_KEYS, rounds, with_keys

    monkeypatch.setenv("KUBECONFIG", "/home/user/.kube/config")  # the lab's config reads it
    keys = FORK_KEYS if profile == "fork" else LAB_KEYS
    base = a100_config() if profile == "fork" else dev_config()
    base["cluster"] = {"kubeconfig": "/home/user/.kube/config"}
    stored = rounds(with_keys(base, keys), keys)
    flat = [pair for one in stored for pair in one]
    assert len(flat) == len(set(flat)), "each key whole or by path once"
    assert {key for key, leaf in flat if leaf is None} == set(keys), "every key whole"
    assert len(stored) < len(flat), "rounds are shared"
    for one in stored:
        texts = [key for key, _ in one if isinstance(keys[key][1], str)]
        numbers = [key for key, _ in one if isinstance(keys[key][1], int)]
        assert len(texts) <= 1 and len(numbers) <= 1 and len({key for key, _ in one}) == len(one), one
