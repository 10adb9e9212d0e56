"""The pack served over the analyzer protocol, started the way the Python language host starts it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gpu_policies
import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden

POLICY_DIR = Path(gpu_policies.__file__).resolve().parents[1]
# pulumi.policy's entry point runs the pack directory with runpy, which puts that directory on sys.path.
LAUNCH = f"import runpy; runpy.run_path({str(POLICY_DIR)!r}, run_name='__main__')"


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    server = subprocess.Popen(
        [sys.executable, "-c", LAUNCH], stdout=subprocess.PIPE, cwd=tmp_path_factory.mktemp("elsewhere")
    )
    try:
        assert server.stdout is not None
        port = server.stdout.readline().decode().strip()
        assert port.isdigit(), "the pack prints its gRPC port first, as the engine expects"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        server.terminate()
        server.wait(timeout=10)


def struct(props: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(props)
    return message


def test_the_served_pack_lists_every_policy_as_mandatory(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert [policy.name for policy in info.policies] == [policy.name for policy in gpu_policies.POLICIES]
    assert {policy.enforcementLevel for policy in info.policies} == {analyzer_pb2.MANDATORY}, (
        "every guide trap must fail the preview"
    )


def analyze_stack(analyzer: analyzer_pb2_grpc.AnalyzerStub, resources: list[golden.Resource]) -> Any:
    request = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(type=r.type, properties=struct(r.props), urn=f"urn:{r.name}", name=r.name)
            for r in resources
        ]
    )
    return analyzer.AnalyzeStack(request)


def test_a_pod_violation_reaches_the_engine_as_a_mandatory_diagnostic(
    analyzer: analyzer_pb2_grpc.AnalyzerStub,
) -> None:
    pod = golden.smoke_pod()
    del pod["spec"]["runtimeClassName"]
    diagnostics = analyze_stack(analyzer, [golden.Resource(golden.POD, "pod", pod)]).diagnostics
    assert [(d.policyName, d.enforcementLevel, d.urn) for d in diagnostics] == [
        ("gpu-pod-require-runtime-class", analyzer_pb2.MANDATORY, "urn:pod")
    ], "exactly the runtime-class policy fails the preview, against the pod"


def test_an_unknown_value_is_reported_not_applicable_rather_than_cannot_run(
    analyzer: analyzer_pb2_grpc.AnalyzerStub,
) -> None:
    pod = golden.smoke_pod()
    pod["spec"]["runtimeClassName"] = UNKNOWN_STRING_VALUE
    response = analyze_stack(analyzer, [golden.Resource(golden.POD, "pod", pod)])
    assert list(response.diagnostics) == [], "no advisory 'can't run policy' noise and no crash"
    assert "gpu-pod-require-runtime-class" in {skip.policy_name for skip in response.not_applicable}


def test_a_stack_violation_points_at_the_release(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    resources = golden.fork_stack()
    next(r for r in resources if r.name == "gpu-fractioning").props["values"]["images"]["mpsd"]["tag"] = ""
    diagnostics = analyze_stack(analyzer, resources).diagnostics
    assert [(d.policyName, d.urn) for d in diagnostics] == [
        ("kai-fork-require-explicit-image-tags", "urn:gpu-fractioning")
    ], "the empty mpsd tag is reported against the gpu-fractioning release"
