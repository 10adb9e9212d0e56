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
from components.config.load import PROFILE_KEYS, ConfigError, parse_config
from components.config.model import AdmissionConfig, SmokeTestConfig, StackConfig
from components.package.component import build, raw_config
from components.package.descriptions import attribute_docs
from components.package.pieces import PIECES, GpuOperator
from components.package.stacks import COMPONENTS, AdmissionPolicy, Lab, deploy
from components.plugin import schema
from components.preflight import run as preflight
from components.preflight.decisions import Finding
from components.vocabulary.fractioning import RUNTIME_SOCKETS
from tests.package_schema import undescribed
from tests.unit.harness import GET_REGISTRY_IMAGE, POD, PREPARED_CLUSTER, RELEASE, STEP_GATE, ProgramRunner

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "kai-gpu-fractions:index:"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return json.loads(schema())


def typed(spec: dict[str, Any]) -> dict[str, Any]:
    """A property's type, without its description."""
    return {key: value for key, value in spec.items() if key != "description"}


def enum_values(document: dict[str, Any], name: str) -> list[str]:
    return [member["value"] for member in document["types"][TOKEN + name]["enum"]]


def test_the_schema_names_the_package_at_the_projects_one_version(document: dict[str, Any]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (document["name"], document["version"]) == ("kai-gpu-fractions", project["version"])
    named = sorted(TOKEN + component.__name__ for component in (*COMPONENTS, *PIECES))
    assert sorted(document["resources"]) == named and len(named) == 8


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
        assert typed(stack[key]) == {"type": "string", "secret": True}, "not plain: another resource may make it"
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


def test_every_component_type_input_output_and_property_is_described(document: dict[str, Any]) -> None:
    """A key added to the config model without its docstring fails here, as does a new output."""
    assert undescribed(document) == []


def test_the_descriptions_are_the_config_models_own_docstrings(document: dict[str, Any]) -> None:
    smoke = document["types"][TOKEN + "SmokeTestConfig"]
    assert smoke["properties"]["gpuFraction"]["description"] == attribute_docs(SmokeTestConfig)["gpu_fraction"]
    assert smoke["description"] == SmokeTestConfig.__doc__
    lab = document["resources"][TOKEN + "Lab"]["inputProperties"]
    assert lab["lab"]["description"] == document["types"][TOKEN + "LabConfig"]["description"], "the section's own"
    finding = document["types"][TOKEN + "PreflightFinding"]["properties"]
    assert finding["fix"]["description"] == attribute_docs(Finding)["fix"]
    mode = document["types"][TOKEN + "AdmissionMode"]
    assert mode["description"] == attribute_docs(AdmissionConfig)["mode"], "an enum, its field's"


class Sample:
    """The class's own, not an attribute's."""

    first: int
    """The first,
    on two lines."""
    second: str = "x"
    third = 3
    """After an attribute without an annotation."""
    fourth: bool


def test_attribute_docstrings_are_the_strings_right_after_annotated_attributes() -> None:
    """Pulumi's analyzer reads only classes at a module's top level, as the config model's are."""
    assert attribute_docs(Sample) == {"first": "The first, on two lines."}


def test_inputs_become_stack_config_with_enums_as_their_values(document: dict[str, Any]) -> None:
    mode = AdmissionPolicy.__init__.__annotations__["args"].__annotations__["admission"]
    mode_enum = typing.get_type_hints(typing.get_args(mode)[0])["mode"]
    raw = raw_config("admission", {"admission": {"mode": mode_enum.WARN, "ready_timeout_seconds": 60}, "context": "c"})
    assert raw == {
        "admission": {"mode": "warn", "readyTimeoutSeconds": 60},
        "profile": "admission",
        "cluster": {"context": "c"},
    }


def test_numbers_from_the_engine_are_read_as_the_model_types_them() -> None:
    """The engine carries every number as a double; a whole number is an integer where the model
    counts, and a fraction stays one."""
    args = {"nodes": {"gpus_per_node": 8.0, "gpu_memory_mib": 40960.0}, "smoke_test": {"gpu_fraction": 0.5}}
    raw = raw_config("fork", {"registry": {"server": "registry.example.com/kai"}, **args})
    config = parse_config(raw)
    assert (config.nodes.gpus_per_node, config.nodes.gpu_memory_mib, config.smoke_test.gpu_fraction) == (8, 40960, 0.5)
    with pytest.raises(ConfigError, match="gpusPerNode"):
        parse_config(raw_config("fork", {"registry": {"server": "r.example.com/k"}, "nodes": {"gpus_per_node": 7.5}}))


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
        build(object.__new__(Lab), "lab", {"lab": {"gpu_nodes": ["Not A Node"]}}, deploy)
    paths = [error["property_path"] for error in raised.value.errors or []]
    assert paths == ["lab.gpuNodes[0]"], raised.value.errors


PIECE_SECTIONS = {
    "ForkImages": {"forks", "registry", "registryPassword"},
    "GpuOperator": {"gpuOperator", "gpuFractioning", "nodes", "smokeTest", "kubeconfig", "context"},
    "KaiScheduler": {"forks", "registry", "registryPassword", "kai", "kubeconfig", "context"},
    "GpuFractioning": {"forks", "registry", "registryPassword", "gpuFractioning", "nodes", "kai"}
    | {"kubeconfig", "context"},
    "SmokeTest": {"smokeTest", "nodes", "gpuFractioning", "gpuOperator", "kubeconfig", "context"},
}


@pytest.mark.parametrize("piece", sorted(PIECE_SECTIONS))
def test_each_piece_takes_the_sections_its_step_reads(document: dict[str, Any], piece: str) -> None:
    resource = document["resources"][TOKEN + piece]
    assert set(resource["inputProperties"]) == PIECE_SECTIONS[piece]
    reads_registry = "registry" in PIECE_SECTIONS[piece]
    assert ("registry" in resource.get("requiredInputs", [])) == reads_registry, "its images live there"
    if reads_registry:
        assert typed(resource["inputProperties"]["registryPassword"]) == {"type": "string", "secret": True}


PIECE_PROGRAM = """
import pulumi
from components.package import pieces

REGISTRY = {{"server": "registry.example.com/team/kai-fork", "username": "robot"}}
made = pieces.{piece}("piece", {args})
pulumi.export("outputs", {{key: getattr(made, key, None) for key in {outputs}}})
"""

PIECE_CASES = {
    # piece: (its inputs as Python source, its output attributes, the releases it installs)
    "ForkImages": ('{"registry": REGISTRY, "registry_password": "pw", "forks": {"images": "verify"}}', [], []),
    "GpuOperator": ('{"kubeconfig": "/tmp/k"}', ["release", "ready"], ["gpu-operator"]),
    "KaiScheduler": (
        '{"kubeconfig": "/tmp/k", "registry": REGISTRY, "registry_password": "pw"}',
        ["ready"],
        ["kai-scheduler"],
    ),
    "GpuFractioning": ('{"kubeconfig": "/tmp/k", "registry": REGISTRY}', ["ready"], ["gpu-fractioning"]),
    "SmokeTest": ('{"kubeconfig": "/tmp/k"}', ["smoke_pods"], []),
}


def piece_program(tmp_path: Path, piece: str) -> Path:
    args, outputs, _ = PIECE_CASES[piece]
    path = tmp_path / "program.py"
    path.write_text(PIECE_PROGRAM.format(piece=piece, args=args, outputs=outputs))
    return path


@pytest.mark.parametrize("piece", sorted(PIECE_CASES))
def test_a_piece_registers_its_step_alone_under_itself(run_program: ProgramRunner, tmp_path: Path, piece: str) -> None:
    engine, outputs = run_program({}, program=piece_program(tmp_path, piece))
    (made,) = engine.created(TOKEN + piece)
    inside = [r for r in engine.registrations if r is not made]
    assert inside and all(engine.is_inside(r.urn, made.urn) for r in inside), "nothing lands beside the piece"
    releases = sorted(str(r.inputs.get("name")) for r in engine.created(RELEASE))
    assert releases == PIECE_CASES[piece][2], "one step, not the stack"
    gates = sorted(r.name for r in engine.created(STEP_GATE))
    assert gates == [f"{name}-ready" for name in releases], "each step gated on its verification"
    assert all(value is not None for value in outputs["outputs"].values()), outputs
    assert not engine.created("pulumi:providers:kubernetes") or piece != "ForkImages", "images reach no cluster"
    # Alone, nothing of the stack waits for its namespaces at destroy: each waits for its own.
    assert engine.created("kai-gpu-fractions:index:NamespacesGone") == []
    assert all("annotations" not in r.inputs["metadata"] for r in engine.created("kubernetes:core/v1:Namespace"))


def test_the_fork_image_piece_checks_each_pushed_image_and_installs_nothing(
    run_program: ProgramRunner, tmp_path: Path
) -> None:
    engine, _ = run_program({}, program=piece_program(tmp_path, "ForkImages"))
    checked = sorted(
        {args["name"].split(":")[0].rsplit("/", 1)[1] for token, args in engine.invokes if token == GET_REGISTRY_IMAGE}
    )
    assert checked and engine.fork_sources == [], "verify mode reads the registry and needs no fork tree"
    assert engine.created(RELEASE) == [] and engine.created(POD) == []


def test_kai_alone_takes_its_chart_from_the_fork_and_builds_no_image(
    run_program: ProgramRunner, tmp_path: Path
) -> None:
    program = tmp_path / "program.py"
    program.write_text(
        PIECE_PROGRAM.format(
            piece="KaiScheduler",
            args='{"registry": REGISTRY, "registry_password": "pw", "forks": {"images": "build"}}',
            outputs=["release"],
        )
    )
    engine, _ = run_program({}, program=program)
    assert [key for key, _pin, _workdir in engine.fork_sources] == ["kai-scheduler"], "its chart, at the pin"
    assert engine.created("kai-gpu-fractions:forks:ForkImages") == [], "ForkImages builds them"
    values = engine.release("kai-scheduler").inputs["values"]
    assert "registry.example.com/team/kai-fork" in json.dumps(values), "its images come from the registry"
    assert engine.created("kubernetes:core/v1:Secret"), "pulled with the registry's credentials"


def test_a_piece_without_a_registry_it_needs_names_the_input() -> None:
    with pytest.raises(InputPropertiesError) as raised:
        build(object.__new__(GpuOperator), "fork", {"gpu_operator": {"namespace": "Not Valid"}}, deploy, False)
    assert [error["property_path"] for error in raised.value.errors or []] == ["gpuOperator.namespace"]
