"""Pulumi.yaml's list of config keys, which config errors send users to, and the docs' ESC example,
against the model they document."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from components.config.load import PASSWORD_KEY, parse_config
from components.config.model import StackConfig

ROOT = Path(__file__).resolve().parents[2]
KEY_LINE = re.compile(r"^#   (?P<key>[A-Za-z]+)\s+(?P<rest>.*)$")
# A section's keys as Pulumi.yaml lists them: {a, b: {c, d}, e | f}; a nested section is checked
# when it is spelled out.
Outline = dict[str, "Outline | None"]


def documented_keys() -> dict[str, Outline | None]:
    text = (ROOT / "Pulumi.yaml").read_text()
    keys: dict[str, Outline | None] = {}
    for line in text.splitlines():
        if match := KEY_LINE.match(line):
            rest = match["rest"]
            keys[match["key"]] = parse_outline(rest)[0] if rest.startswith("{") else None
    return keys


def parse_outline(text: str, at: int = 0) -> tuple[Outline, int]:
    """The outline starting with the `{` at `at`, and where it ends."""
    assert text[at] == "{", text[at:]
    outline: Outline = {}
    at += 1
    while True:
        name = re.match(r"\s*([A-Za-z]+)\s*", text[at:])
        assert name, f"a key name at {text[at:]!r}"
        at += name.end()
        nested: Outline | None = None
        if text[at] == ":":
            at += 1 + len(text[at + 1 :]) - len(text[at + 1 :].lstrip())
            nested, at = parse_outline(text, at)
        outline[name[1]] = nested
        at += len(text[at:]) - len(text[at:].lstrip())
        if text[at] == "}":
            return outline, at + 1
        assert text[at] in ",|", f"',', '|' or '}}' at {text[at:]!r}"
        at += 1


def section_model(annotation: Any) -> type[BaseModel] | None:
    for candidate in getattr(annotation, "__args__", None) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
        if getattr(candidate, "__args__", None) and (found := section_model(candidate)):
            return found
    return None


def model_keys(model: type[BaseModel]) -> dict[str, type[BaseModel] | None]:
    return {field.alias or name: section_model(field.annotation) for name, field in model.model_fields.items()}


def mismatches(outline: Outline, model: type[BaseModel], path: str) -> list[str]:
    keys = model_keys(model)
    problems = [f"{path}.{key}: listed in Pulumi.yaml but not a key of the model" for key in outline.keys() - keys]
    problems += [f"{path}.{key}: a key of the model missing from Pulumi.yaml" for key in keys.keys() - outline.keys()]
    for key, nested in outline.items():
        if nested is not None and key in keys:
            inner = keys[key]
            if inner is None:
                problems.append(f"{path}.{key}: Pulumi.yaml lists keys under it, but it is a value")
            else:
                problems += mismatches(nested, inner, f"{path}.{key}")
    return problems


def test_pulumi_yaml_lists_every_key_of_the_model_and_no_other() -> None:
    documented = documented_keys()
    top = model_keys(StackConfig)
    assert documented.keys() == top.keys() | {PASSWORD_KEY}, "one line per top-level key"
    problems = []
    for key, outline in documented.items():
        model = top.get(key)
        if model is not None:
            assert outline is not None, f"{key} is a section: Pulumi.yaml must list its keys"
            problems += mismatches(outline, model, key)
    assert problems == [], "\n".join(problems)


def test_pulumi_yaml_names_the_files_that_hold_the_model() -> None:
    text = (ROOT / "Pulumi.yaml").read_text()
    named = re.findall(r"components/[\w/]+\.py", text)
    assert named, "the schema comment names where the model lives"
    for path in named:
        assert (ROOT / path).is_file(), f"Pulumi.yaml names {path}, which does not exist"


@pytest.mark.parametrize(
    ("outline", "problem"),
    [
        ("{kubeconfig}", "cluster.context: a key of the model missing from Pulumi.yaml"),
        ("{kubeconfig, context, contxt}", "cluster.contxt: listed in Pulumi.yaml but not a key of the model"),
        ("{kubeconfig: {path}, context}", "cluster.kubeconfig: Pulumi.yaml lists keys under it, but it is a value"),
    ],
)
def test_the_comparison_finds_a_missing_an_unknown_and_a_misplaced_key(outline: str, problem: str) -> None:
    model = model_keys(StackConfig)["cluster"]
    assert model is not None
    assert mismatches(parse_outline(outline)[0], model, "cluster") == [problem]


def yaml_blocks(path: Path) -> list[Any]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", path.read_text(), re.S)]


def test_the_esc_examples_feed_keys_the_model_reads_as_secrets() -> None:
    """docs/ci.md's environment gives registryPassword and the kubeconfig, each under fn::secret,
    and the stack files that import it (there and in the README) are valid next to it."""
    environments = [b for b in yaml_blocks(ROOT / "docs" / "ci.md") if isinstance(b, dict) and "values" in b]
    (environment,) = environments
    config = environment["values"]["pulumiConfig"]
    assert config["registryPassword"] == "${registry.password}"
    assert environment["values"]["registry"]["password"].keys() == {"fn::secret"}, "stored as a secret"
    assert environment["values"]["cluster"]["kubeconfig"].keys() == {"fn::secret"}
    assert {key.split(":")[-1] for key in config} <= model_keys(StackConfig).keys() | {PASSWORD_KEY}
    stacks = [
        b
        for path in (ROOT / "README.md", ROOT / "docs" / "ci.md")
        for b in yaml_blocks(path)
        if isinstance(b, dict) and "environment" in b
    ]
    assert len(stacks) == 2, "the README and docs/ci.md each show a stack file that imports the environment"
    for stack in stacks:
        assert stack["environment"] == ["kai-gpu-fractions/a100"]
        raw = {key.removeprefix("kai-gpu-fractions:"): json.dumps(value) for key, value in stack["config"].items()}
        raw |= {"registryPassword": "from-esc", "cluster": json.dumps(config["cluster"] | {"kubeconfig": "a\nb"})}
        parse_config(raw, frozenset({PASSWORD_KEY, "cluster"}))
