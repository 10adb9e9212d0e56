"""The provider plugin the engine runs for this package (provider/ starts it): each gate, proof,
rollout and destroy-time wait runs here, in a process of this project's own Python, with the handler
its resource class names (components/cluster/engine.py PackageResource); and a program in any
language constructs the package's components here (components/package/), from the schema it serves.

The handlers keep the interface of Python dynamic providers, so the values they see are the same:
plain Python values, secrets unwrapped. The plugin accepts secrets (constructing components needs
it), so it marks an output secret where the input of the same name held one, as the engine does for
a provider that does not.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import tomllib
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
import pulumi
from pulumi.dynamic import ResourceProvider
from pulumi.errors import InputPropertiesError
from pulumi.provider import server as component_server
from pulumi.provider.experimental import provider as api
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.property_value import Computed, PropertyValue
from pulumi.provider.experimental.server import ProviderServicer
from pulumi.runtime import rpc, settings
from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS
from pulumi.runtime.proto import engine_pb2, provider_pb2_grpc

from components.cluster.engine import PACKAGE, PackageResource, progress_sink, resource_type
from components.cluster.results import ReportedFailure
from components.gates.steps import StepGate
from components.proofs.resources import GpusAllocatable, LabProof, SmokeProof
from components.rollout.run import DriverRollout
from components.teardown.waits import KeptObjectsDeleted, NamespacesGone, PodsGoneBeforeUninstall

RESOURCES: tuple[type[PackageResource], ...] = (
    StepGate,
    SmokeProof,
    LabProof,
    GpusAllocatable,
    DriverRollout,
    PodsGoneBeforeUninstall,
    NamespacesGone,
    KeptObjectsDeleted,
)


def plugin_version() -> str:
    """The project's version, written once in pyproject.toml."""
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    return str(project["project"]["version"])


# Inputs that hold credentials: the schema marks them secret, so every SDK keeps them secret.
SECRET_INPUTS = ("kubeconfig", "registryPassword")


@functools.cache
def components() -> ComponentProvider:
    """The package's components and the schema inferred from them (imported on first use: a run that
    only checks has no need of the whole stack's imports)."""
    from components.package.pieces import PIECES
    from components.package.stacks import COMPONENTS

    return ComponentProvider([*COMPONENTS, *PIECES], PACKAGE, version=plugin_version())


def schema() -> str:
    from components.package.descriptions import describe

    document = json.loads(components().schema or "{}")
    describe(document)
    for resource in document.get("resources", {}).values():
        for key in SECRET_INPUTS:
            if key in resource.get("inputProperties", {}):
                resource["inputProperties"][key]["secret"] = True
    return json.dumps(document)


def plain(value: PropertyValue) -> Any:
    """A property as the dynamic provider server hands it over (unknowns as its UNKNOWN marker)."""
    inner = value.value
    if isinstance(inner, Computed):
        return rpc.UNKNOWN
    if isinstance(inner, Mapping):
        return {key: plain(item) for key, item in inner.items()}
    if isinstance(inner, Sequence) and not isinstance(inner, str):
        return [plain(item) for item in inner]
    return inner


def plain_map(properties: Mapping[str, PropertyValue]) -> dict[str, Any]:
    return {key: plain(value) for key, value in properties.items()}


def property_value(value: Any) -> PropertyValue:
    if isinstance(value, Mapping):
        return PropertyValue({str(key): property_value(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return PropertyValue([property_value(item) for item in value])
    if isinstance(value, int | float) and not isinstance(value, bool):
        return PropertyValue(float(value))
    return PropertyValue(value)


def property_map(
    values: Mapping[str, Any] | None, inputs: Mapping[str, PropertyValue] | None = None
) -> dict[str, PropertyValue]:
    """Outputs as properties, secret where the input of the same name held a secret."""
    secret = {key for key, value in (inputs or {}).items() if value.contains_secret()}
    return {key: property_value(value).with_secret(key in secret) for key, value in (values or {}).items()}


Progress = Callable[[str], Callable[[str], None]]


def to_engine_log(urn: str) -> Callable[[str], None]:
    """A check's progress lines as the engine's log under its resource: the engine hides a provider
    plugin's own output (sdk/go/common/resource/plugin/plugin.go at v3.260.0, unstructuredOutput)."""
    engine = settings.get_engine()

    def log(line: str) -> None:
        engine.Log(engine_pb2.LogRequest(severity=engine_pb2.INFO, message=line, urn=urn))  # type: ignore[union-attr]

    return log


class Plugin(api.Provider):
    """Dispatches each request to the handler of the resource's type."""

    def __init__(
        self, resources: Sequence[type[PackageResource]] = RESOURCES, progress: Progress = to_engine_log
    ) -> None:
        self.handlers: dict[str, ResourceProvider] = {resource_type(r.kind): r.handler() for r in resources}
        self.progress = progress

    async def run(self, urn: str, call: Callable[..., Any], *args: Any) -> Any:
        """`call` on a thread of its own (a gate waits for minutes), its progress under `urn`."""

        def reporting() -> Any:
            progress_sink.set(self.progress(urn))
            return call(*args)

        return await asyncio.to_thread(reporting)

    def handler(self, urn: str) -> ResourceProvider:
        kind = urn.split("::")[2].rsplit("$", 1)[-1]
        try:
            return self.handlers[kind]
        except KeyError:
            raise ValueError(f"{PACKAGE} serves no resource type {kind}") from None

    async def get_schema(self, request: api.GetSchemaRequest) -> api.GetSchemaResponse:
        return api.GetSchemaResponse(schema=schema())

    async def configure(self, request: api.ConfigureRequest) -> api.ConfigureResponse:
        # As the SDK's component server answers: the engine constructs components only through a
        # plugin that takes secrets, resource references and output values.
        return api.ConfigureResponse(accept_secrets=True, accept_resources=True, accept_outputs=True)

    async def check_config(self, request: api.CheckRequest) -> api.CheckResponse:
        return api.CheckResponse(inputs=request.new_inputs)

    async def diff_config(self, request: api.DiffRequest) -> api.DiffResponse:
        # Nothing to configure: taking over a resource from the dynamic provider replaces nothing.
        return api.DiffResponse(changes=False)

    async def check(self, request: api.CheckRequest) -> api.CheckResponse:
        return api.CheckResponse(inputs=request.new_inputs)

    async def diff(self, request: api.DiffRequest) -> api.DiffResponse:
        handler = self.handler(request.urn)
        result = handler.diff(request.resource_id, plain_map(request.old_state), plain_map(request.new_inputs))
        return api.DiffResponse(
            changes=result.changes,
            replaces=list(result.replaces or []),
            delete_before_replace=bool(result.delete_before_replace),
        )

    async def create(self, request: api.CreateRequest) -> api.CreateResponse:
        handler = self.handler(request.urn)
        result = await self.run(request.urn, handler.create, plain_map(request.properties))
        return api.CreateResponse(resource_id=result.id, properties=property_map(result.outs, request.properties))

    async def update(self, request: api.UpdateRequest) -> api.UpdateResponse:
        handler = self.handler(request.urn)
        result = await self.run(
            request.urn, handler.update, request.resource_id, plain_map(request.olds), plain_map(request.news)
        )
        return api.UpdateResponse(properties=property_map(result.outs, request.news))

    async def delete(self, request: api.DeleteRequest) -> None:
        handler = self.handler(request.urn)
        await self.run(request.urn, handler.delete, request.resource_id, plain_map(request.properties))

    async def read(self, request: api.ReadRequest) -> api.ReadResponse:
        return api.ReadResponse(request.resource_id, request.properties, request.inputs)


# Errors that are the operator's to read: a finding, bad inputs, a refused preflight.
MessageOnly = ReportedFailure | InputPropertiesError | pulumi.RunError


def reported(error: BaseException | None) -> MessageOnly | None:
    """The finding an error carries: the SDK's servers re-raise each one with its stack appended."""
    while error is not None:
        if isinstance(error, MessageOnly):
            return error
        inner = getattr(error, "inner", None)  # a component's own error (ComponentInitError)
        error = inner if isinstance(inner, BaseException) else error.__cause__ or error.__context__
    return None


def plainly(method: Callable[[Any, Any, Any], Awaitable[Any]]) -> Callable[[Any, Any, Any], Coroutine[Any, Any, Any]]:
    """A finding (a gate that did not hold, pods that did not stop) reaches the operator as its
    message alone, as it did from the dynamic provider; anything else keeps its stack."""

    async def call(self: Any, request: Any, context: Any) -> Any:
        try:
            return await method(self, request, context)
        except Exception as error:
            finding = reported(error)
            if finding is None:
                raise
            if isinstance(finding, InputPropertiesError):
                status = self.create_grpc_invalid_properties_status(finding.message, finding.errors)
                await context.abort_with_status(status)
            await context.abort(grpc.StatusCode.UNKNOWN, str(finding))

    return call


class Servicer(ProviderServicer):
    """The SDK's server for the resources, and its component server (the one component_provider_host
    runs) for Construct."""

    Create = plainly(ProviderServicer.Create)
    Update = plainly(ProviderServicer.Update)
    Delete = plainly(ProviderServicer.Delete)

    @plainly
    async def Construct(self, request: Any, context: Any) -> Any:
        hosted = component_server.ProviderServicer(components(), self._args, self._engine_address)
        return await hosted.Construct(request, context)


# How often the plugin asks whether the engine that started it is still there. Pulumi's own plugins
# ask every 5 minutes (sdk/go/pulumi/provider/main.go:131 at v3.260.0); a `pulumi up` killed outright
# (a cancelled CI job) would leave this Python process and its port behind that long.
ENGINE_CHECK_SECONDS = 5.0


async def stop_when_the_engine_is_gone(
    engine: str, server: grpc.aio.Server, every: float = ENGINE_CHECK_SECONDS
) -> None:
    """Calls the engine's gRPC health service every `every` seconds, as rpcutil.Healthcheck does
    (sdk/go/common/util/rpcutil/health.go), and stops `server` once the engine no longer answers at
    all. Unimplemented counts as alive, as upstream counts it, and so does a slow answer: only a
    closed port (UNAVAILABLE) stops the plugin, never a busy engine mid-update."""
    async with grpc.aio.insecure_channel(engine) as channel:
        # An empty HealthCheckRequest is zero bytes on the wire.
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        while True:
            await asyncio.sleep(every)
            try:
                await check(b"", timeout=max(every, 30.0))
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.UNAVAILABLE:
                    await server.stop(grace=None)
                    return


def serve(args: list[str]) -> None:
    """Serves the plugin on a loopback port, which it prints first, as the engine expects."""
    engine = next((a for a in args if not a.startswith("-")), "")
    # Also where the handlers' warnings (pulumi.log) go.
    settings.reset_options(engine_address=engine)

    async def run() -> None:
        server = grpc.aio.server(options=_GRPC_CHANNEL_OPTIONS)
        provider_pb2_grpc.add_ResourceProviderServicer_to_server(  # type: ignore[no-untyped-call]
            Servicer(args, plugin_version(), Plugin(), engine_address=engine), server
        )
        port = server.add_insecure_port(address="127.0.0.1:0")
        await server.start()
        sys.stdout.write(f"{port}\n")
        sys.stdout.flush()
        watch = asyncio.create_task(stop_when_the_engine_is_gone(engine, server)) if engine else None
        await server.wait_for_termination()
        if watch is not None:
            watch.cancel()

    asyncio.run(run())
