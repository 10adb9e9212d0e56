"""Reading the stack configuration: raw `pulumi config` values in, a StackConfig or one clear error out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config
from pydantic import BaseModel, ValidationError

from components.config.model import StackConfig, is_kubeconfig_contents
from components.config.secrets import SecretValues

PROJECT = "kai-gpu-fractions"
PASSWORD_KEY = "registryPassword"
# The top-level keys each profile reads; the others are reported as not used.
PROFILE_KEYS = {
    "fork": {"profile", "cluster", "registry", PASSWORD_KEY, "forks", "gpuOperator", "kai", "gpuFractioning"}
    | {"nodes", "smokeTest", "preflight", "admission"},
    "lab": {"profile", "cluster", "forks", "kai", "lab", "preflight", "admission"},
    # Only the admission policy, for a cluster whose GPU software is installed some other way.
    "admission": {"profile", "cluster", "admission"},
}


class ConfigError(Exception):
    """Raised with one message that lists every invalid config key."""


@dataclass(frozen=True)
class LoadedConfig:
    config: StackConfig
    # The registry password as a Pulumi secret, when one is set.
    registry_password: pulumi.Output[str] | None
    # Keys that are set but that the profile does not read.
    warnings: list[str]
    # What the keys stored as secrets hold, to be kept secret in everything derived from them.
    secrets: SecretValues = SecretValues()


def parse_config(
    raw: Mapping[str, Any], secret_keys: frozenset[str] = frozenset(), *, needs_registry: bool | None = None
) -> StackConfig:
    """Validate raw `pulumi config` values (keys without the project prefix, values as stored).
    The fork profile needs a registry unless `needs_registry` says otherwise (a piece of the stack
    that pulls no fork image).

    Raises ConfigError naming every bad key with the reason and a valid example.
    """
    values = {key: _decode(value) for key, value in raw.items() if key != PASSWORD_KEY}
    problems = _secret_problems(raw, values, secret_keys)
    config: StackConfig | None = None
    if needs_registry is None:
        needs_registry = values.get("profile", "fork") == "fork"
    if needs_registry and "registry" not in values:
        problems.append(
            f"  - {PROJECT}:registry: is required for the fork profile; "
            'for example: {"server": "registry.example.com/team/kai-fork"}'
        )
    try:
        config = StackConfig.model_validate(values)
        problems += [f"  - {PROJECT}:{path}: {reason}" for path, reason in config.cross_key_problems()]
    except ValidationError as error:
        problems += [_describe(e, StackConfig) for e in error.errors()]
    except Exception as error:  # a validator that failed in a way it did not foresee: still no traceback
        problems.append(f"  - {PROJECT}: could not be read ({type(error).__name__}: {error})")
    if problems or config is None:
        raise ConfigError("Invalid stack configuration:\n" + "\n".join(problems))
    return config


def _secret_problems(raw: Mapping[str, Any], values: Mapping[str, Any], secret_keys: frozenset[str]) -> list[str]:
    """Credentials must be stored encrypted, so they never reach the state or a log in plaintext."""
    problems = []
    if PASSWORD_KEY in raw:
        if PASSWORD_KEY not in secret_keys:
            problems.append(
                f"  - {PROJECT}:{PASSWORD_KEY}: must be stored encrypted; "
                f"run `pulumi config set --secret {PASSWORD_KEY} <value>`"
            )
        elif not str(raw[PASSWORD_KEY]).strip():
            problems.append(f"  - {PROJECT}:{PASSWORD_KEY}: must not be empty")
        if not _as_dict(values.get("registry")).get("username"):
            problems.append(
                f'  - {PROJECT}:registry.username: is required when {PASSWORD_KEY} is set; for example: "robot$kai"'
            )
    kubeconfig = _as_dict(values.get("cluster")).get("kubeconfig")
    if isinstance(kubeconfig, str) and is_kubeconfig_contents(kubeconfig) and "cluster" not in secret_keys:
        problems.append(
            f"  - {PROJECT}:cluster.kubeconfig: holds a kubeconfig's contents, credentials included, so it must be "
            f"stored encrypted; run `pulumi config set --secret --path cluster.kubeconfig < kubeconfig`, or give "
            'its path instead; for example: "~/.kube/config"'
        )
    return problems


def _decode(value: Any) -> Any:
    """Structured config arrives as JSON text; scalars stay strings for the model to read."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def unread_keys(raw: Mapping[str, Any], config: StackConfig) -> list[str]:
    """A warning for each key that is set but that the configured profile never reads."""
    read = PROFILE_KEYS[config.profile]
    return [
        f"{PROJECT}:{key} is set, but the {config.profile} profile does not read it"
        for key in sorted(raw)
        if key not in read
    ]


def load_from_pulumi() -> LoadedConfig:
    """Reads this project's keys from the running stack's config, once."""
    prefix = f"{PROJECT}:"
    stored = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw = {key.removeprefix(prefix): value for key, value in stored.items() if key.startswith(prefix)}
    secret = frozenset(key for key in raw if runtime_config.is_config_secret(prefix + key))
    decoded = {key: value if key == PASSWORD_KEY else _decode(value) for key, value in raw.items()}
    try:
        config = parse_config(raw, secret)
    except ConfigError as error:
        # The message quotes bad values: those of secret keys must not reach the log.
        raise ConfigError(SecretValues.of(decoded, None, secret).redact(str(error))) from None
    password = pulumi.Output.secret(raw[PASSWORD_KEY]) if PASSWORD_KEY in raw else None
    return LoadedConfig(config, password, unread_keys(raw, config), SecretValues.of(decoded, config, secret))


# ---------------------------------------------------------------- error messages


def _describe(error: Mapping[str, Any], model: type[BaseModel]) -> str:
    loc = tuple(error["loc"])
    path = f"{PROJECT}:{loc[0]}" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
    reason = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        reason = "is not a known key (check the spelling; see Pulumi.yaml for the schema)"
    elif error["type"] == "missing":
        reason = "is required"
    example = _example_for(model, loc)
    hint = f"; for example: {example}" if example is not None else ""
    return f"  - {path}: {reason}{hint}"


_NO_EXAMPLE = object()


def _example_for(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """A good value for the key a validation error points at: the key's own example, else what the
    enclosing key's default or example has there (so a chart key gets its own chart's values)."""
    current: type[BaseModel] | None = model
    context: Any = _NO_EXAMPLE
    example: Any = _NO_EXAMPLE
    for part in loc:
        if isinstance(part, int):  # an element of a list: its example is the list example's first
            example = example[0] if isinstance(example, list) and example else example
            continue
        if current is None:
            break
        name, field = next(((n, f) for n, f in current.model_fields.items() if part in (n, f.alias)), (None, None))
        if field is None or name is None:
            return None
        inherited = _attribute(context, name, field.alias)
        own = field.examples[0] if field.examples else _NO_EXAMPLE
        default = field.default if isinstance(field.default, BaseModel) else _NO_EXAMPLE
        # An empty list shows no good value, so a default `[]` gives way to the key's own example.
        found = (e for e in (inherited, own, default) if e is not _NO_EXAMPLE and e is not None and e != [])
        example = next(found, _NO_EXAMPLE)
        context = example
        current = _nested_model(field.annotation)
    if example is _NO_EXAMPLE and current is not None:
        required = {
            f.alias or n: f.examples[0] for n, f in current.model_fields.items() if f.is_required() and f.examples
        }
        example = required or _NO_EXAMPLE
    if example is _NO_EXAMPLE:
        return None
    if isinstance(example, BaseModel):
        example = example.model_dump(by_alias=True, exclude_none=True)
    return json.dumps(example)


def _attribute(context: Any, name: str, alias: str | None) -> Any:
    if isinstance(context, BaseModel):
        return getattr(context, name, _NO_EXAMPLE)
    if isinstance(context, dict):
        return context.get(alias or name, context.get(name, _NO_EXAMPLE))
    return _NO_EXAMPLE


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    for candidate in getattr(annotation, "__args__", None) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
        if nested := _nested_model(candidate) if getattr(candidate, "__args__", None) else None:
            return nested
    return None
