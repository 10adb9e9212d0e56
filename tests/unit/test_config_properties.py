"""Every invalid stack config is refused cleanly, and every accepted one registers only valid values.

Hypothesis mutates the shipped stack configs (and variants with each node access) at keys drawn
from the model itself: hostile text, wrong types, huge and odd numbers, unknown keys. Each result
must be a ConfigError naming the mutated key (or a key around it), or a config whose program,
run under mocks, registers only names, images, labels and chart versions Kubernetes and Helm accept.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

from components.config.load import PASSWORD_KEY, PROJECT, ConfigError, parse_config
from components.config.model import StackConfig
from components.config.types import ChartVersion, DnsLabel, DnsSubdomain, Image
from tests.unit.harness import RELEASE, Engine, ProgramRunner, stack_config

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = 1000


def shipped(stack: str) -> dict[str, Any]:
    stored = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {key.split(":", 1)[1]: value for key, value in stored.items()}


A100 = {
    **shipped("a100"),
    "registry": {"server": "registry.example.com/team/kai-fork", "username": "robot"},
    PASSWORD_KEY: "hunter2",
}
BASES = {
    "a100": A100,
    "a100 with ssh": {**A100, "preflight": {"hostAccess": {"ssh": {"user": "ubuntu"}}}},
    "a100 with a check pod": {**A100, "preflight": {"hostAccess": {"checkPod": {"namespace": "kube-system"}}}},
    "dev": shipped("dev"),
    "dev on a cluster": {
        "profile": "lab",
        "cluster": {"kubeconfig": "~/.kube/config", "context": "lab"},
        "lab": {"kind": None, "gpuNodes": ["gpu-node-0"], "prove": False},
    },
}

HOSTILE: list[Any] = [
    "",
    " ",
    " padded",
    "padded ",
    "two\nlines",
    "nul\x00byte",
    "-o",
    "--upload-pack=touch /tmp/pwned",
    "UPPER",
    "ünïcode",
    "a" * 70_000,
    "*",
    "latest",
    "v26",
    " v26.7.1",
    "v26.7.1\n",
    "８",
    "1e-300",
    "nan",
    "inf",
    "8_0",
    "0x10",
    "true",
    "../../etc",
    "~nosuchuser/forks",
    "registry.example.com/Team",
    "registry.example.com/team:v1",
    "//",
    "@sha256:",
    "615..",
    "615.71.09;reboot",
    "６１５.71.09",
    "https://",
    "oci://",
    True,
    False,
    0,
    -1,
    1,
    2**70,
    10**400,
    1.5,
    1e-300,
    float("nan"),
    float("inf"),
    None,
    [],
    {},
    ["same", "same"],
    {"unexpected": 1},
]
VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=40),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.text(max_size=8), max_size=3),
)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in getattr(annotation, "__args__", None) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
        if getattr(candidate, "__args__", None) and (found := _model_of(candidate)):
            return found
    return None


def key_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key of the model as users write it, nested sections included."""
    for name, field in model.model_fields.items():
        path = (*prefix, field.alias or name)
        yield path
        if nested := _model_of(field.annotation):
            yield from key_paths(nested, path)


PATHS = sorted(set(key_paths(StackConfig)))


def mutated(base: dict[str, Any], path: tuple[str, ...], value: Any, unknown_key: bool) -> dict[str, Any]:
    config = copy.deepcopy(base)
    node = config
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    if unknown_key:
        target = node.setdefault(path[-1], {})
        if isinstance(target, dict):
            target["unknownKey"] = value
            return config
    node[path[-1]] = value
    return config


def raw(config: dict[str, Any]) -> dict[str, Any]:
    """Config as the engine hands it over: structured values as JSON text, scalars as text."""
    return {key.split(":", 1)[1]: value for key, value in stack_config(config).items()}


def related(error_path: str, mutated_path: tuple[str, ...]) -> bool:
    """The error names the mutated key, a key inside it, the section around it, or a key beside it
    (a section the mutation created needs its other keys)."""
    error = re.sub(r"\[\d+\]", "", error_path).split(".")
    mutated = list(mutated_path)
    return error[: len(mutated)] == mutated[: len(error)] or error[:-1] == mutated[:-1]


ERROR_LINE = re.compile(rf"^  - {PROJECT}:(?P<path>[^:]+?)(?::|$)")


def error_paths(message: str) -> list[str]:
    lines = message.splitlines()
    assert lines[0] == "Invalid stack configuration:", message
    return [match["path"] for line in lines[1:] if (match := ERROR_LINE.match(line))]


def _valid(adapter: TypeAdapter[Any], value: Any) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


LABEL, NAME, IMAGE, VERSION = (TypeAdapter(t) for t in (DnsLabel, DnsSubdomain, Image, ChartVersion))


def invalid_registrations(engine: Engine) -> list[str]:
    """Names, namespaces, labels, images and chart versions no cluster or Helm would take."""
    problems = []
    for registration in engine.registrations:
        inputs = registration.inputs
        metadata: dict[str, Any] = inputs["metadata"] if isinstance(inputs.get("metadata"), dict) else {}
        name, namespace = metadata.get("name"), metadata.get("namespace") or inputs.get("namespace")
        if isinstance(name, str) and not _valid(NAME, name):
            problems.append(f"{registration.name}: name {name!r}")
        if isinstance(namespace, str) and not _valid(LABEL, namespace):
            problems.append(f"{registration.name}: namespace {namespace!r}")
        for value in (metadata.get("labels") or {}).values():
            if isinstance(value, str) and not re.fullmatch(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", value):
                problems.append(f"{registration.name}: label value {value!r}")
        for container in (inputs.get("spec") or {}).get("containers") or []:
            if not _valid(IMAGE, container.get("image")):
                problems.append(f"{registration.name}: image {container.get('image')!r}")
        version = inputs.get("version") if registration.type == RELEASE else None
        if version is not None and not _valid(VERSION, version):
            problems.append(f"{registration.name}: chart version {version!r}")
    return problems


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    base=st.sampled_from(sorted(BASES)),
    path=st.sampled_from(PATHS),
    value=VALUES,
    unknown_key=st.booleans(),
)
def test_a_mutated_config_is_refused_naming_its_key_or_registers_only_valid_values(
    base: str, path: tuple[str, ...], value: Any, unknown_key: bool
) -> None:
    config = mutated(BASES[base], path, value, unknown_key)
    secrets = frozenset({PASSWORD_KEY, "cluster"})
    try:
        parsed = parse_config(raw(config), secrets)
    except ConfigError as error:
        paths = error_paths(str(error))
        assert any(related(p, path) for p in paths), f"{'.'.join(path)} = {value!r} was reported as {paths}"
        event("refused by the config model")
        return
    assert isinstance(parsed, StackConfig)
    with pytest.MonkeyPatch.context() as monkeypatch:
        run_program = ProgramRunner(monkeypatch)
        try:
            run_program(config, secret_keys=tuple(secrets & set(config)))
        except pulumi.RunError:
            assert run_program.engine.registrations == [], "a refusal after registering would be half-applied"
            event("refused by the program before registering")
            return
    assert invalid_registrations(run_program.engine) == [], f"{'.'.join(path)} = {value!r}"
    event("accepted and registered valid values")


def test_the_generator_reaches_every_key_and_the_shipped_configs_pass() -> None:
    assert len(PATHS) > 60, "every key of the model, nested ones included"
    assert ("preflight", "hostAccess", "ssh", "command") in PATHS and ("lab", "isolator", "chart", "version") in PATHS
    for name, config in BASES.items():
        assert isinstance(parse_config(raw(config), frozenset({PASSWORD_KEY})), StackConfig), name


def test_the_validity_rules_catch_what_they_look_for() -> None:
    engine = Engine()
    pod = {"metadata": {"name": "Bad_Name", "namespace": "x", "labels": {"q": "-bad"}}, "spec": {}}
    engine.registrations.append(type("R", (), {"type": "t", "name": "pod", "inputs": pod})())  # type: ignore[arg-type]
    assert invalid_registrations(engine) == ["pod: name 'Bad_Name'", "pod: label value '-bad'"]
    assert json.loads(json.dumps(float("nan"))) != json.loads(json.dumps(float("nan"))), "NaN survives as NaN"
