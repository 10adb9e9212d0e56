"""Reading the stack configuration: raw `pulumi config` values in, a StackConfig or one clear error out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config
from pydantic import BaseModel, ValidationError

from components.config.model import StackConfig

PROJECT = "kai-gpu-fractions"
SECRET_KEYS = ("registryPassword",)


class ConfigError(Exception):
    """Raised with one message that lists every invalid config key."""


def _example_for(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The documented example of the field a validation error points at, if any."""
    current: type[BaseModel] | None = model
    examples: list[Any] | None = None
    for part in loc:
        if current is None:
            break
        field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return None
        examples = field.examples
        current = _nested_model(field.annotation)
    if examples:
        return json.dumps(examples[0])
    if current is not None:
        required = {
            f.alias or n: f.examples[0] for n, f in current.model_fields.items() if f.is_required() and f.examples
        }
        return json.dumps(required) if required else None
    return None


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    for candidate in getattr(annotation, "__args__", None) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _describe(error: Mapping[str, Any], model: type[BaseModel]) -> str:
    loc = tuple(error["loc"])
    path = f"{PROJECT}:{loc[0]}" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
    reason = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        reason = "is not a known key (check the spelling; see Pulumi.yaml for the schema)"
    elif error["type"] == "missing":
        reason = "is required"
    example = _example_for(model, loc)
    hint = f"; for example: {example}" if example else ""
    return f"  - {path}: {reason}{hint}"


def parse_config(raw: Mapping[str, Any], secret_keys: frozenset[str] = frozenset()) -> StackConfig:
    """Validate raw `pulumi config` values (keys without the project prefix, values as stored).

    Raises ConfigError naming every bad key with the reason and a valid example.
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        if key in SECRET_KEYS:
            if key not in secret_keys:
                problems.append(
                    f"  - {PROJECT}:{key}: must be stored encrypted; run `pulumi config set --secret {key} <value>`"
                )
            continue
        values[key] = _decode(value)
    if values.get("profile", "fork") == "fork" and "registry" not in values:
        problems.append(
            f"  - {PROJECT}:registry: is required for the fork profile; "
            'for example: {"server": "registry.example.com/team/kai-fork"}'
        )
    if "registryPassword" in raw and not _as_dict(values.get("registry")).get("username"):
        problems.append(
            f'  - {PROJECT}:registry.username: is required when registryPassword is set; for example: "robot$kai"'
        )
    try:
        config = StackConfig.model_validate(values)
    except ValidationError as error:
        problems += [_describe(e, StackConfig) for e in error.errors()]
        config = None
    if problems or config is None:
        raise ConfigError("Invalid stack configuration:\n" + "\n".join(problems))
    return config


def _decode(value: Any) -> Any:
    """Structured config arrives as JSON text; scalars stay strings for pydantic to coerce."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def load_from_pulumi() -> tuple[StackConfig, pulumi.Output[str] | None]:
    """Reads this project's keys from the running stack's config; returns the model and the
    registry password as a Pulumi secret Output (or None)."""
    prefix = f"{PROJECT}:"
    stored = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw = {key.removeprefix(prefix): value for key, value in stored.items() if key.startswith(prefix)}
    secret = frozenset(key for key in raw if runtime_config.is_config_secret(prefix + key))
    config = parse_config(raw, secret)
    return config, pulumi.Config(PROJECT).get_secret("registryPassword")
