"""The component package: the schema inferred from the config model, the inputs turned back into
stack config, and a component's graph under mocks (parented to it, preflight waiting for a cluster
another resource makes)."""

from __future__ import annotations

import dataclasses
import json
import tomllib
import typing
from pathlib import Path
from typing import Any

import pytest
from pulumi.errors import InputPropertiesError
from pulumi.runtime import rpc

from components.cluster.facts import ADMIN_RESOURCES
from components.config.load import PROFILE_KEYS
from components.config.model import AdmissionConfig, StackConfig
from components.package.stacks import AdmissionPolicy, Lab, build, raw_config
from components.plugin import schema
from components.preflight import run as preflight
from components.vocabulary.fractioning import RUNTIME_SOCKETS
from tests.unit.harness import POD, PREPARED_CLUSTER, RELEASE, STEP_GATE, ProgramRunner

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "kai-gpu-fractions:index:"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return json.loads(schema())


def enum_values(document: dict[str, Any], name: str) -> list[str]:
    return [member["value"] for member in document["types"][TOKEN + name]["enum"]]


def test_the_schema_names_the_package_at_the_projects_one_version(document: dict[str, Any]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (document["name"], document["version"]) == ("kai-gpu-fractions", project["version"])
    assert sorted(document["resources"]) == [TOKEN + "AdmissionPolicy", TOKEN + "GpuStack", TOKEN + "Lab"]


@pytest.mark.parametrize(
    ("component", "profile"), [("GpuStack", "fork"), ("Lab", "lab"), ("AdmissionPolicy", "admission")]
)
def test_each_component_takes_the_sections_its_profile_reads(
    document: dict[str, Any], component: str, profile: str
) -> None:
    inputs = set(document["resources"][TOKEN + component]["inputProperties"])
    sections = PROFILE_KEYS[profile] - {"profile", "cluster"}
    assert inputs == sections | {"kubeconfig", "context"}


def test_credentials_are_secret_inputs_that_may_be_unknown(document: dict[str, Any]) -> None:
    stack = document["resources"][TOKEN + "GpuStack"]["inputProperties"]
    for key in ("kubeconfig", "registryPassword"):
        assert stack[key] == {"type": "string", "secret": True}, "not plain: another resource may make it"
    assert stack["kai"]["plain"] is True, "config sections decide the graph, so their values are known"
    assert document["resources"][TOKEN + "GpuStack"]["requiredInputs"] == ["registry"]


def test_modes_are_enums_with_exactly_the_models_values(document: dict[str, Any]) -> None:
    assert enum_values(document, "AdmissionMode") == list(
        typing.get_args(AdmissionConfig.model_fields["mode"].annotation)
    )
    assert enum_values(document, "GpuFractioningNodeRuntime") == list(RUNTIME_SOCKETS)
    assert enum_values(document, "DriverSource") == ["operator", "host"]
    lab = document["types"][TOKEN + "LabConfig"]["properties"]
    assert lab["gpuProfile"]["$ref"] == f"#/types/{TOKEN}LabGpuProfile"


def test_every_key_of_stack_config_has_its_place_in_the_schema(document: dict[str, Any]) -> None:
    """A key added to the model reaches the package with no second edit (the schema is made from it)."""
    kai = document["types"][TOKEN + "KaiConfig"]["properties"]
    assert set(kai) == {field.alias for field in StackConfig.model_fields["kai"].annotation.model_fields.values()}  # type: ignore[union-attr]


def test_findings_and_proof_results_are_typed_outputs(document: dict[str, Any]) -> None:
    lab = document["resources"][TOKEN + "Lab"]
    assert lab["properties"]["preflight"]["items"]["$ref"] == f"#/types/{TOKEN}PreflightFinding"
    assert lab["properties"]["proof"]["items"]["$ref"] == f"#/types/{TOKEN}ProofCheck"
    assert "proof" not in lab["required"], "the proof can be switched off"
    assert set(document["types"][TOKEN + "ProofCheck"]["properties"]) == {"check", "passed", "detail"}


def test_inputs_become_stack_config_with_enums_as_their_values(document: dict[str, Any]) -> None:
    mode = AdmissionPolicy.__init__.__annotations__["args"].__annotations__["admission"]
    mode_enum = typing.get_type_hints(typing.get_args(mode)[0])["mode"]
    raw = raw_config("admission", {"admission": {"mode": mode_enum.WARN, "ready_timeout_seconds": 60}, "context": "c"})
    assert raw == {
        "admission": {"mode": "warn", "readyTimeoutSeconds": 60},
        "profile": "admission",
        "cluster": {"context": "c"},
    }


def test_a_lab_on_a_cluster_it_is_given_makes_no_kind_cluster() -> None:
    assert raw_config("lab", {"kubeconfig": "k", "lab": {"gpu_nodes": ["n"]}})["lab"] == {
        "kind": None,
        "gpuNodes": ["n"],
    }
    assert "lab" not in raw_config("lab", {}), "without a cluster, the lab makes its kind cluster"
    assert raw_config("lab", {"kubeconfig": "k", "lab": {"kind": {"name": "x"}}})["lab"]["kind"] == {"name": "x"}


LAB_PROGRAM = """
import pulumi
from components.package.stacks import Lab

kubeconfig = {kubeconfig}
lab = Lab("lab", {{
    "kubeconfig": kubeconfig,
    "lab": {{"gpu_nodes": ["gpu-node-0"], "nvml_mock": {{"build_image": False}}, "prove": False}},
}})
pulumi.export("preflight", lab.preflight)
pulumi.export("labPods", lab.lab_pods)
"""


def unknown_kubeconfig() -> str:
    # A value another resource makes during the update: unknown in preview.
    return "pulumi.Output(set(), _done(None), _done(False), _done(True))"


def lab_program(tmp_path: Path, kubeconfig: str) -> Path:
    path = tmp_path / "program.py"
    helpers = (
        "import asyncio\n\n"
        "def _done(value):\n    f = asyncio.get_event_loop().create_future()\n    f.set_result(value)\n    return f\n"
    )
    path.write_text(helpers + LAB_PROGRAM.format(kubeconfig=kubeconfig))
    return path


def test_the_components_graph_is_registered_under_it(run_program: ProgramRunner, tmp_path: Path) -> None:
    engine, outputs = run_program({}, program=lab_program(tmp_path, '"/tmp/kubeconfig"'))
    (lab,) = engine.created(TOKEN + "Lab")
    inside = [r for r in engine.registrations if r is not lab]
    assert inside and all(engine.is_inside(r.urn, lab.urn) for r in inside), "nothing lands beside the component"
    assert engine.release("kai-scheduler") and engine.created(POD) and engine.created(STEP_GATE)
    kubeconfig = engine.one("pulumi:providers:kubernetes", "cluster").inputs["kubeconfig"]
    assert kubeconfig["value"] == "/tmp/kubeconfig" and rpc._special_sig_key in kubeconfig, "a secret, always"
    assert outputs["labPods"], "the component's outputs are the profile's"


def test_a_cluster_not_known_at_preview_is_checked_at_up_before_anything_is_installed_in_it(
    run_program: ProgramRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged: list[str] = []
    monkeypatch.setattr("pulumi.log.info", lambda message, *_a, **_k: logged.append(message))
    engine, _ = run_program({}, preview=True, program=lab_program(tmp_path, unknown_kubeconfig()))
    assert preflight.DEFERRED in logged, "preview says when preflight runs, rather than failing or staying silent"
    assert engine.release("kai-scheduler") and engine.created(STEP_GATE), "the whole graph still previews"


def test_a_kubeconfig_output_known_at_preview_is_read_at_preview(
    run_program: ProgramRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A component's inputs arrive as outputs even when they are literals: known is what counts."""
    logged: list[str] = []
    for level in ("info", "warn"):
        monkeypatch.setattr(f"pulumi.log.{level}", lambda message, *_a, **_k: logged.append(message))
    run_program({}, preview=True, program=lab_program(tmp_path, "pulumi.Output.secret('/tmp/kubeconfig')"))
    assert preflight.DEFERRED not in logged
    assert any(line.startswith("Preflight: 0 failing") for line in logged), logged


def test_a_cluster_known_only_at_up_is_checked_before_the_provider_can_reach_it(
    run_program: ProgramRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_rights = dataclasses.replace(PREPARED_CLUSTER, can_create=dict.fromkeys(ADMIN_RESOURCES, False))
    with pytest.raises(Exception, match="Preflight failed"):
        run_program({}, program=lab_program(tmp_path, "pulumi.Output.secret('/tmp/kubeconfig')"), cluster=no_rights)
    assert run_program.engine.created(RELEASE) == [], "nothing reaches a cluster that preflight refused"


def test_bad_inputs_name_each_input_with_its_reason() -> None:
    with pytest.raises(InputPropertiesError) as raised:
        build(object.__new__(Lab), "lab", {"lab": {"gpu_nodes": ["Not A Node"]}})
    paths = [error["property_path"] for error in raised.value.errors or []]
    assert paths == ["lab.gpuNodes[0]"], raised.value.errors
