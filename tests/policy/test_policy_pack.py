"""The pack as a whole: naming scheme, metadata, entry point, and whole stacks."""

from __future__ import annotations

import importlib
import pkgutil
import re
import runpy
from pathlib import Path
from typing import Any

import gpu_policies
import pulumi_policy
import pytest
import yaml
from google.protobuf import struct_pb2
from gpu_policies import POLICIES, POLICY_MODULES
from pulumi_policy import EnforcementLevel, Policy, PolicyConfigSchema

from tests.policy import golden
from tests.policy.harness import pack_violations

NAME = re.compile(r"[a-z0-9]+-[a-z0-9]+-(require|disallow|configure|enable)(-[a-z0-9]+)+")
ONE_SENTENCE = re.compile(r"[A-Z][^.!?]*(\.[^\s.!?][^.!?]*)*\.")
POLICY_DIR = Path(gpu_policies.__file__).resolve().parents[1]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda policy: policy.name)
def test_each_policy_is_named_area_resource_verb_what(policy: Policy) -> None:
    assert NAME.fullmatch(policy.name), f"{policy.name} does not follow <area>-<resource>-<verb>-<what>"


@pytest.mark.parametrize("module", POLICY_MODULES, ids=lambda module: module.__name__)
def test_each_module_is_named_after_the_one_policy_it_holds(module: Any) -> None:
    short_name = module.__name__.rsplit(".", 1)[-1]
    assert module.policy.name == short_name.replace("_", "-"), "module and policy names must agree"
    assert module.__doc__ and "\n" not in module.__doc__.strip(), "each module has a one-line docstring"


def test_every_policy_module_of_the_package_is_registered() -> None:
    """A policy module the pack does not list never runs; helpers hold no `policy`."""
    package = Path(gpu_policies.__file__).parent
    modules = {
        info.name: importlib.import_module(f"gpu_policies.{info.name}") for info in pkgutil.iter_modules([str(package)])
    }
    with_policy = {name for name, module in modules.items() if isinstance(getattr(module, "policy", None), Policy)}
    named_like_one = {name for name in modules if NAME.fullmatch(name.replace("_", "-"))}
    registered = {module.__name__.rsplit(".", 1)[-1] for module in POLICY_MODULES}
    assert with_policy | named_like_one == registered, "add the module to POLICY_MODULES in gpu_policies/__init__.py"


def test_policy_names_are_unique() -> None:
    names = [policy.name for policy in POLICIES]
    assert len(names) == len(set(names)), f"duplicate policy names in {names}"


@pytest.mark.parametrize("policy", POLICIES, ids=lambda policy: policy.name)
def test_each_description_is_one_complete_sentence(policy: Policy) -> None:
    assert ONE_SENTENCE.fullmatch(policy.description), f"not one sentence: {policy.description!r}"


@pytest.mark.parametrize("policy", POLICIES, ids=lambda policy: policy.name)
def test_each_policy_has_severity_remediation_and_is_mandatory(policy: Policy) -> None:
    assert policy.severity is not None, "severity is part of every policy's metadata"
    assert policy.remediation_steps and policy.remediation_steps.endswith("."), "remediation names the fix"
    assert policy.enforcement_level is EnforcementLevel.MANDATORY, "every guide trap must fail the preview"


@pytest.mark.parametrize("policy", POLICIES, ids=lambda policy: policy.name)
def test_each_config_schema_documents_defaults_the_engine_can_carry(policy: Policy) -> None:
    schema = policy.config_schema or PolicyConfigSchema(properties={})
    for key, prop in schema.properties.items():
        assert prop.get("description") and "default" in prop, f"{policy.name}.{key} needs a description and default"
    struct_pb2.Struct().update(schema.properties)  # raises if the engine could not receive it


def test_the_entry_point_builds_one_pack_with_every_policy_when_run_as_the_engine_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[dict[str, Any]] = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kwargs: built.append(kwargs))
    runpy.run_path(str(POLICY_DIR), run_name="__main__")
    assert len(built) == 1, "__main__.py builds exactly one pack"
    assert [policy.name for policy in built[0]["policies"]] == [policy.name for policy in POLICIES]
    assert built[0]["enforcement_level"] is EnforcementLevel.ADVISORY, "only the policies themselves are mandatory"


def test_the_pack_project_file_declares_the_python_runtime_and_its_virtualenv() -> None:
    project = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python", "the engine needs the python runtime"
    assert project["runtime"]["options"]["virtualenv"] == "venv", (
        "the Python host runs a pack only from a declared virtualenv, relative to the pack"
    )


def test_this_projects_fork_stack_passes_the_whole_pack() -> None:
    assert pack_violations(golden.fork_stack()) == {}, "the guide's own install must pass"


def test_the_laptop_lab_stack_passes_the_whole_pack() -> None:
    assert pack_violations(golden.lab_stack()) == {}, "KAI v0.17.0 with HAMi-core is not a fork install"


def test_another_teams_program_without_gpus_passes_the_whole_pack() -> None:
    assert pack_violations(golden.foreign_stack()) == {}, "the pack must not fire on unrelated resources"


@pytest.mark.parametrize("workload", golden.WORKLOADS)
def test_the_smoke_pod_as_any_workload_template_passes_the_whole_pack(workload: str) -> None:
    resources = [golden.Resource(workload, "smoke", golden.in_workload(workload, golden.smoke_pod()))]
    assert pack_violations(resources) == {}, f"a compliant {workload} template must pass"
