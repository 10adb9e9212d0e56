"""The provider plugin: what it serves, how it hands values to the handlers and findings to the
operator, and how the resources it serves take over those of the dynamic provider."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import subprocess
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pulumi
import pytest
from pulumi.dynamic import CreateResult, ResourceProvider
from pulumi.provider.experimental import provider as api
from pulumi.provider.experimental.property_value import Computed, PropertyValue
from pulumi.runtime import rpc

import components
from components.cluster.engine import (
    ClusterAccess,
    PackageResource,
    dynamic_type,
    resource_type,
    show_progress,
)
from components.cluster.results import ReportedFailure
from components.plugin import RESOURCES, Plugin, plain_map, plainly, plugin_version, property_map
from components.teardown.waits import KeptObjectsDeleted

Result = TypeVar("Result")
STACK = "urn:pulumi:dev::kai-gpu-fractions::pulumi:pulumi:Stack"


def run(call: Coroutine[Any, Any, Result]) -> Result:
    """On a loop of its own: asyncio.run would leave the thread without one for the tests after it."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(call)
    finally:
        loop.close()


def test_every_resource_of_the_package_is_served() -> None:
    defined = set()
    for module in pkgutil.walk_packages(components.__path__, "components."):
        for _, cls in inspect.getmembers(importlib.import_module(module.name), inspect.isclass):
            if issubclass(cls, PackageResource) and "handler" in vars(cls):
                defined.add(cls)
    assert defined == set(RESOURCES), "a resource class the plugin does not serve fails every `up` that creates it"
    assert len({r.kind for r in RESOURCES}) == len(RESOURCES)


def test_requests_go_to_the_handler_of_the_resources_type_whatever_its_parents() -> None:
    plugin = Plugin()
    urn = f"{STACK}$kai-gpu-fractions:index:LabProof$kai-gpu-fractions:index:StepGate::gate-kai"
    assert type(plugin.handler(urn)).__name__ == "StepGateProvider"
    with pytest.raises(ValueError, match="serves no resource type kai-gpu-fractions:index:Nope"):
        plugin.handler(f"{STACK}$kai-gpu-fractions:index:Nope::x")


def test_values_reach_the_handlers_as_the_dynamic_provider_server_hands_them() -> None:
    sent = {
        "namespace": PropertyValue("gpu-fractioning"),
        "timeout_seconds": PropertyValue(90.0),
        "objects": PropertyValue([PropertyValue({"name": PropertyValue("q"), "group": PropertyValue("")})]),
        "kubeconfig": PropertyValue("apiVersion: v1", is_secret=True),
        "triggers": PropertyValue(Computed()),
        "context": PropertyValue(None),
    }
    assert plain_map(sent) == {
        "namespace": "gpu-fractioning",
        "timeout_seconds": 90.0,
        "objects": [{"name": "q", "group": ""}],
        "kubeconfig": "apiVersion: v1",
        "triggers": rpc.UNKNOWN,
        "context": None,
    }


def test_outputs_go_back_as_property_values() -> None:
    outs = property_map({"results": [{"check": "a", "passed": True, "count": 8}], "report": "ok", "none": None})
    assert outs["results"] == PropertyValue(
        [PropertyValue({"check": PropertyValue("a"), "passed": PropertyValue(True), "count": PropertyValue(8.0)})]
    )
    assert plain_map(outs) == {"results": [{"check": "a", "passed": True, "count": 8.0}], "report": "ok", "none": None}


def test_an_output_is_secret_where_its_input_held_a_secret() -> None:
    """The plugin takes secrets (components need it), so it keeps them as the engine keeps them for a
    provider that does not: by the name of the input."""
    inputs = {
        "kubeconfig": PropertyValue("apiVersion: v1", is_secret=True),
        "triggers": PropertyValue({"versions": PropertyValue("615", is_secret=True)}),
        "namespace": PropertyValue("n"),
    }
    outs = property_map({"kubeconfig": "apiVersion: v1", "triggers": {"versions": "615"}, "namespace": "n"}, inputs)
    assert {key for key, value in outs.items() if value.is_secret} == {"kubeconfig", "triggers"}
    assert run(Plugin().configure(api.ConfigureRequest({}, {}, False, False))).accept_secrets is True


def test_taking_over_from_the_dynamic_provider_replaces_nothing() -> None:
    answer = run(Plugin().diff_config(api.DiffRequest(f"{STACK}::x", "id", {}, {}, [])))
    assert answer.changes is False and answer.replaces == []


def test_a_stored_pickle_is_no_change() -> None:
    """A stack the dynamic provider deployed holds `__provider` in its state; it is no input of the check."""
    olds = property_map({"namespace": "n", "objects": [], "kubeconfig": None, "context": None, "__provider": "gASV"})
    news = property_map({"namespace": "n", "objects": [], "kubeconfig": None, "context": None})
    request = api.DiffRequest(f"{STACK}$kai-gpu-fractions:index:KeptObjectsDeleted::kept", "id", olds, news, [])
    assert run(Plugin().diff(request)).changes is False
    changed = {**news, "namespace": PropertyValue("m")}
    request = api.DiffRequest(request.urn, "id", olds, changed, [])
    assert run(Plugin().diff(request)).changes is True


class Aborted(Exception):
    pass


class Context:
    def __init__(self) -> None:
        self.aborted: tuple[grpc.StatusCode, str] | None = None

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = (code, details)
        raise Aborted(details)


def test_a_finding_reaches_the_operator_as_its_message_alone() -> None:
    async def fails(_self: Any, _request: Any, _context: Any) -> None:
        try:
            raise ReportedFailure("SmokeProof: 1 of 5 checks failed")
        except ReportedFailure as error:  # the SDK's server re-raises with its stack appended
            raise Exception(f"{error}:\n  File ...") from None

    context = Context()
    with pytest.raises(Aborted):
        run(plainly(fails)(None, None, context))
    assert context.aborted == (grpc.StatusCode.UNKNOWN, "SmokeProof: 1 of 5 checks failed")


def test_any_other_error_keeps_its_stack() -> None:
    async def breaks(_self: Any, _request: Any, _context: Any) -> None:
        raise KeyError("namespace")

    context = Context()
    with pytest.raises(KeyError):
        run(plainly(breaks)(None, None, context))
    assert context.aborted is None


def test_each_resource_names_its_dynamic_type_as_an_alias_and_keeps_the_kubeconfig_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered: dict[str, Any] = {}

    def register(self: Any, t: str, name: str, props: Any, opts: pulumi.ResourceOptions) -> None:
        registered.update(type=t, name=name, opts=opts)

    monkeypatch.setattr(pulumi.CustomResource, "__init__", register)
    KeptObjectsDeleted("kept", access=ClusterAccess(None, None), objects=[("", "v1", "x", "y")])
    assert registered["type"] == resource_type("KeptObjectsDeleted")
    aliases = registered["opts"].aliases
    assert [a.type_ for a in aliases] == [dynamic_type("KeptObjectsDeleted")]
    assert registered["opts"].additional_secret_outputs == ["kubeconfig"]


class Talking(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        show_progress(f"gate for {props['step']}: waiting")
        return CreateResult(id_="1", outs=props)


class TalkingGate(PackageResource, handler=Talking):
    pass


def test_a_checks_progress_goes_to_the_engines_log_under_its_resource() -> None:
    said: list[tuple[str, str]] = []
    plugin = Plugin([TalkingGate], progress=lambda urn: lambda line: said.append((urn, line)))
    urn = f"{STACK}$kai-gpu-fractions:index:TalkingGate::gate"
    created = run(plugin.create(api.CreateRequest(urn, property_map({"step": "kai"}), 60, False)))
    assert said == [(urn, "gate for kai: waiting")]
    assert created.resource_id == "1" and plain_map(created.properties) == {"step": "kai"}


def test_the_version_is_the_projects() -> None:
    assert plugin_version() == "0.1.0"


REPO = Path(__file__).resolve().parents[2]
ENGINE_GONE_SCENARIO = """
import asyncio, grpc
from components.plugin import stop_when_the_engine_is_gone

async def scenario():
    engine, plugin = grpc.aio.server(), grpc.aio.server()
    port = engine.add_insecure_port("127.0.0.1:0")
    plugin.add_insecure_port("127.0.0.1:0")
    await engine.start()
    await plugin.start()
    watch = asyncio.create_task(stop_when_the_engine_is_gone(f"127.0.0.1:{port}", plugin, every=0.05))
    # wait_for_termination says whether it timed out: the server still served.
    served_while_alive = await plugin.wait_for_termination(timeout=0.5)
    await engine.stop(grace=None)
    stopped_once_gone = not await plugin.wait_for_termination(timeout=5)
    watch.cancel()
    print(served_while_alive, stopped_once_gone)

asyncio.run(scenario())
"""


def test_the_plugin_serves_while_its_engine_answers_and_stops_once_it_is_gone() -> None:
    """A stand-in engine with no health service answers UNIMPLEMENTED, which counts as alive, as
    Pulumi's rpcutil.Healthcheck counts it; once its port is closed, the plugin's server stops. In a
    process of its own: grpc.aio keeps global state that breaks the Pulumi mocks of later tests."""
    run = subprocess.run(
        [sys.executable, "-c", ENGINE_GONE_SCENARIO], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True"]


def test_the_plugin_starts_without_the_stack_the_config_model_or_the_kubernetes_client() -> None:
    """The engine starts the plugin for every `up`, `preview` and `destroy`: its start imports what
    serving a check needs, not the package's components and the config model behind them (imported
    when a program constructs one) nor the kubernetes client (imported when a check first reads the
    cluster). Each of them costs a tenth of a CPU-second or more at every start."""
    code = "import sys, components.plugin; print(*sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    loaded = set(run.stdout.split())
    assert {"components.plugin", "components.gates.steps", "components.proofs.smoke"} <= loaded
    heavy = {"components.package.stacks", "components.stack", "components.config.model", "kubernetes"}
    assert loaded & heavy == set()
