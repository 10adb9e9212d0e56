"""Config keys stored as secrets, under the real engine: each top-level key is stored as a secret in
turn (whole, as `pulumi config set --secret KEY JSON` stores it, and by one path), the stack is
updated, and the exported state, the raw state files, the stack outputs and the update's own output
are searched for the key's plaintext. This module holds the fork stack's rounds and what they share;
test_secret_config_lab.py the lab stack's (a module each, so two workers run them side by side).

Each key gets a value the program passes on (a probe): a string found anywhere in a string, or a
number found as a number. `profile` has none ("fork" is in many names, and the graph itself shows
the profile) and `preflight` reaches no resource (preflight only reads the cluster); both are still
stored as secrets in turn, and the stack must keep working.

A key with a text probe shares its round with one whose probe is a number: the two cannot hide each
other's leak, since the program keeps a string secret by the secret texts it contains (a text under
six characters, as a number's is, only as a whole value) and a number by its value
(components/config/secrets.py). Two text probes never share a round: one image reference holds both
the registry and the tag, and either would keep it secret for the other. Nor do two number probes:
one object holding both would be kept secret whole. The keys with no probe have no leak to look for;
they are spread over the probes' rounds in turn.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from itertools import zip_longest
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import leftovers
from tests.integration.test_fork_stack import a100_config
from tests.integration.workspace import Workspace

pytestmark = pytest.mark.integration

SIG, SECRET_SIG = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
CONTEXT = "kgfctx-secret-context"
PASSWORD = "kgfpass-secret-81d2"
FORK_STACK, LAB_STACK = "secret-fork", "secret-lab"

# key → (the value it is stored with, merged over the stack's own; the probe)
FORK_KEYS: dict[str, tuple[Any, str | int | None]] = {
    "profile": ("fork", None),
    "cluster": ({"context": CONTEXT}, CONTEXT),
    "registry": (
        {"server": "registry.kgfreg-host.example:5000/kgfreg-path", "username": "robot"},
        "kgfreg",
    ),
    "registryPassword": (PASSWORD, PASSWORD),
    "forks": ({"tag": "smshare-kgftag-secret"}, "kgftag"),
    "gpuOperator": ({"readyTimeoutSeconds": 1799}, 1799),
    "kai": ({"readyTimeoutSeconds": 599}, 599),
    "gpuFractioning": ({"readyTimeoutSeconds": 899}, 899),
    "nodes": ({"gpusPerNode": 8, "gpuMemoryMib": 40960}, 40960),
    "smokeTest": ({"image": "nvidia/cuda:13.3.1-base-ubuntu24.04-kgfsmoke"}, "kgfsmoke"),
    "preflight": ({"warnOnly": ["fabricmanager"]}, None),
}
LAB_KEYS: dict[str, tuple[Any, str | int | None]] = {
    "profile": ("lab", None),
    "cluster": ({"context": CONTEXT}, CONTEXT),
    "kai": ({"readyTimeoutSeconds": 598}, 598),
    "lab": ({"devicePluginImage": "nvcr.io/nvidia/k8s-device-plugin:v0.18.2-kgflab"}, "kgflab"),
    "forks": ({"workdir": ".forks-kgfwork"}, None),
    "preflight": ({"warnOnly": ["fabricmanager"]}, None),
}


def renamed_context_kubeconfig(directory: Path) -> Path:
    """The control plane's kubeconfig with its context renamed to CONTEXT, given by path: the
    context name is then a value only the stack config holds."""
    kubeconfig = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    current = kubeconfig["current-context"]
    for context in kubeconfig["contexts"]:
        if context["name"] == current:
            context["name"] = CONTEXT
    kubeconfig["current-context"] = CONTEXT
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    path.chmod(0o600)
    return path


def with_keys(base: dict[str, Any], keys: dict[str, tuple[Any, str | int | None]]) -> dict[str, Any]:
    config = dict(base)
    for key, (value, _) in keys.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    return config


# The leaf stored with `--secret --path` in the by-path round: the probe's own key, except for
# `cluster`, whose kubeconfig path is stored so while its context (the probe) stays in plaintext
# in the stack file: the engine then reports all of `cluster` as secret.
PATH_LEAF = {"cluster": "kubeconfig"}


Round = list[tuple[str, str | None]]
"""The keys stored as secrets in one round: each whole (None) or one leaf of it by path."""


def store(workspace: Workspace, stack: str, config: dict[str, Any], secrets: Round) -> None:
    """The stack's config in plaintext, but the round's keys: each stored whole with `--secret` (a
    JSON text for a section, as users store an object), or the rest of it in plaintext and its leaf
    with `--secret --path` (a number as its plain decimal text, which the model reads)."""
    # The program refuses a registryPassword that is not stored as a secret: it is one in every round,
    # stored once by the fixture and kept, unless the round stores it again.
    keys = {secret for secret, _ in secrets} | {"registryPassword"}
    plain = {key: v for key, v in config.items() if key not in keys}
    for secret, leaf in secrets:
        if leaf is not None:
            plain[secret] = {k: v for k, v in config[secret].items() if k != leaf}
    workspace.write_config(stack, plain, keep={"registryPassword"})
    for secret, leaf in secrets:
        value = config[secret]
        if leaf is not None:
            text = value[leaf] if isinstance(value[leaf], str) else json.dumps(value[leaf])
            workspace.pulumi("config", "set", "--secret", "--path", f"{secret}.{leaf}", text, stack=stack)
        else:
            text = value if isinstance(value, str) else json.dumps(value)
            workspace.pulumi("config", "set", "--secret", secret, stack=stack, input_text=text)


def plaintexts(value: Any) -> Iterator[Any]:
    """Every string and number of exported state or outputs that is not a secret."""
    if isinstance(value, dict):
        if value.get(SIG) == SECRET_SIG:
            return
        for key, item in value.items():
            yield key
            yield from plaintexts(item)
    elif isinstance(value, list):
        for item in value:
            yield from plaintexts(item)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield value


def found(probe: str | int, values: Iterator[Any]) -> bool:
    if isinstance(probe, str):
        return any(isinstance(v, str) and probe in v for v in values)
    return any(not isinstance(v, str) and v == probe for v in values)


OLD_VALUE_TURNED_SECRET = re.compile(r'"[^"\n]*"\s*=>\s*\[secret\]')


def leaks(
    workspace: Workspace, stack: str, exported: dict[str, Any], probe: str | int, update_output: str
) -> list[str]:
    """Where the probe shows in plaintext after an update. The stack's outputs are its root resource's
    outputs in the exported state: what `pulumi stack output` shows."""
    where = []
    for resource in exported["deployment"]["resources"]:
        for part in ("inputs", "outputs"):
            if found(probe, plaintexts(resource.get(part, {}))):
                stack_outputs = resource["type"] == "pulumi:pulumi:Stack" and part == "outputs"
                where.append("stack outputs" if stack_outputs else f"state: {resource['urn']} {part}")
    if isinstance(probe, str):
        # The stack's current checkpoint: the backend's history and backups keep the rounds before.
        current = [p for p in workspace.state_files() if p.name == f"{stack}.json" and "stacks" in p.parts]
        assert current, "the file backend keeps the stack's checkpoint under .pulumi/stacks/"
        where += [f"state file {p}" for p in current if probe in p.read_text(errors="replace")]
        # The CLI shows an output that turns secret as its old value => [secret]: that old value is
        # the plaintext of the round before, as the backend's history keeps it.
        shown = OLD_VALUE_TURNED_SECRET.sub("", update_output)
        if probe in shown:
            at = shown.index(probe)
            where.append(f"the update's output: ...{shown[max(0, at - 160) : at + 60]!r}...")
    return where


def rounds(config: dict[str, Any], keys: dict[str, tuple[Any, str | int | None]]) -> list[Round]:
    """Each key whole, and by one leaf's path where that leaf is a scalar (`config set --path` stores
    text: a list or section would arrive as its JSON text); a text probe's round shared with a number
    probe's, and the probe-less keys spread over the rounds, so no key is stored twice in one."""
    texts: Round = []
    numbers: Round = []
    probeless: Round = []
    for secret, (value, probe) in keys.items():
        leaves: list[str | None] = [None]
        if isinstance(value, dict):
            leaf = PATH_LEAF.get(secret, next(iter(value)))
            if not isinstance(config[secret][leaf], dict | list):
                leaves.append(leaf)
        kind = texts if isinstance(probe, str) else numbers if probe is not None else probeless
        kind.extend((secret, leaf) for leaf in leaves)
    paired = [[pair for pair in both if pair is not None] for both in zip_longest(texts, numbers)]
    for index, pair in enumerate(probeless):
        paired[index % len(paired)].append(pair)
    return paired


def check_each_key(
    workspace: Workspace, stack: str, config: dict[str, Any], keys: dict[str, tuple[Any, str | int | None]]
) -> None:
    problems = []
    for secrets in rounds(config, keys):
        store(workspace, stack, config, secrets)
        update = workspace.pulumi("up", "--yes", "--skip-preview", stack=stack, check=False, timeout=1200)
        hows = {secret: f"by path {secret}.{leaf}" if leaf else "whole" for secret, leaf in secrets}
        if update.returncode != 0:
            stored = ", ".join(f"{secret} ({how})" for secret, how in hows.items())
            problems.append(f"{stored}: the update failed:\n{update.output[-3000:]}")
            continue
        exported = json.loads(workspace.pulumi("stack", "export", stack=stack).stdout)
        for secret, how in hows.items():
            if (probe := keys[secret][1]) is not None:
                found_at = leaks(workspace, stack, exported, probe, update.output)
                problems += [f"{secret} ({how}): {where}" for where in found_at]
    assert problems == [], "\n".join(problems)


@pytest.fixture(scope="module")
def fork_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, dict[str, Any]]]:
    base = tmp_path_factory.mktemp("secret-fork")
    workspace = Workspace.create(base)
    config = a100_config()
    config["cluster"] = {"kubeconfig": str(renamed_context_kubeconfig(base))}
    config = with_keys(config, FORK_KEYS)
    workspace.new_stack(FORK_STACK, {k: v for k, v in config.items() if k != "registryPassword"})
    workspace.pulumi("config", "set", "--secret", "registryPassword", stack=FORK_STACK, input_text=PASSWORD)
    workspace.pulumi("up", "--yes", "--skip-preview", stack=FORK_STACK, timeout=1200)
    yield workspace, config
    workspace.pulumi("destroy", "--yes", "--skip-preview", stack=FORK_STACK, check=False, timeout=900)


def test_each_top_level_key_of_the_fork_stack_stored_as_a_secret_stays_secret(
    fork_stack: tuple[Workspace, dict[str, Any]],
) -> None:
    workspace, config = fork_stack
    check_each_key(workspace, FORK_STACK, config, FORK_KEYS)


def test_the_fork_stack_destroys_cleanly_after_the_rounds(fork_stack: tuple[Workspace, dict[str, Any]]) -> None:
    workspace, _ = fork_stack
    workspace.pulumi("destroy", "--yes", "--skip-preview", stack=FORK_STACK, timeout=900)
    assert leftovers() == {}
