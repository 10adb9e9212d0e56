"""Stack config validation: every mistake is reported at once, by config path, before anything is registered."""

from __future__ import annotations

import pulumi
import pytest

from components.config.load import ConfigError, parse_config
from components.gpu_cluster.gpu_fractioning import configuration_warnings, memory_quantity
from components.gpu_cluster.node_agents import RUNTIME_SOCKETS, mpsd_memory_limit_mib
from tests.unit.harness import ProgramRunner

GOOD_REGISTRY = '{"server": "registry.example.com/team/kai-fork"}'


def error_lines(raw: dict[str, str], secrets: frozenset[str] = frozenset()) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, secrets)
    return str(caught.value).splitlines()[1:]


def test_every_bad_key_is_named_with_its_reason_and_an_example_in_one_message() -> None:
    lines = error_lines(
        {
            "registry": '{"server": "https://registry.example.com/"}',
            "forks": '{"tag": "latest", "images": "push"}',
            "nodes": '{"gpusPerNode": 0}',
        }
    )
    assert lines == [
        "  - kai-gpu-fractions:registry.server: must be a registry host and path without scheme or trailing "
        'slash; for example: "registry.example.com/team/kai-fork"',
        "  - kai-gpu-fractions:forks.tag: 'latest' is a chart or Makefile fallback tag, not a build of the "
        'pinned forks; for example: "smshare-44d1d0a-af0544e"',
        "  - kai-gpu-fractions:forks.images: Input should be 'build', 'verify' or 'prebuilt'; for example: \"build\"",
        "  - kai-gpu-fractions:nodes.gpusPerNode: Input should be greater than or equal to 1; for example: 8",
    ]


@pytest.mark.parametrize("tag", ["0.0.0", "0.1.0", "latest"])
def test_fallback_tags_are_refused(tag: str) -> None:
    (line,) = error_lines({"registry": GOOD_REGISTRY, "forks": f'{{"tag": "{tag}"}}'})
    assert line.startswith("  - kai-gpu-fractions:forks.tag: ")


def test_an_empty_tag_is_refused_rather_than_falling_back_to_the_chart_version() -> None:
    (line,) = error_lines({"registry": GOOD_REGISTRY, "forks": '{"tag": ""}'})
    assert "fallback tag" in line


def test_a_misspelled_key_is_reported_instead_of_silently_ignored() -> None:
    lines = error_lines({"registry": GOOD_REGISTRY, "kai": '{"gpuSharingmode": "NvFractions"}', "smokeTests": "{}"})
    assert "  - kai-gpu-fractions:kai.gpuSharingmode: is not a known key" in lines[0]
    assert "  - kai-gpu-fractions:smokeTests: is not a known key" in lines[1]


def test_short_commits_and_old_drivers_are_refused() -> None:
    lines = error_lines(
        {
            "registry": GOOD_REGISTRY,
            "forks": '{"kaiScheduler": {"repository": "r", "pullRequest": 2368, "commit": "44d1d0a"}}',
            "gpuOperator": '{"driver": {"version": "595.91.07"}}',
        }
    )
    assert lines[0].startswith("  - kai-gpu-fractions:forks.kaiScheduler.commit: must be a full 40-character")
    assert lines[0].endswith('for example: "44d1d0a966465c69b1fd0d24b40b9a1ebb73699e"')
    assert lines[1].startswith("  - kai-gpu-fractions:gpuOperator.driver.version: must be an r615 or newer")


def test_the_registry_is_required_with_an_example() -> None:
    assert error_lines({}) == [
        "  - kai-gpu-fractions:registry: is required for the fork profile; "
        'for example: {"server": "registry.example.com/team/kai-fork"}'
    ]


def test_remote_charts_must_be_pinned_to_a_version() -> None:
    (line,) = error_lines(
        {
            "registry": GOOD_REGISTRY,
            "gpuOperator": '{"chart": {"chart": "gpu-operator", "repo": "https://x"}}',
        }
    )
    assert line.startswith("  - kai-gpu-fractions:gpuOperator.chart: a chart from a repository or OCI registry needs")


def test_a_plaintext_registry_password_is_refused() -> None:
    lines = error_lines({"registry": '{"server": "r.example.com/x", "username": "robot"}', "registryPassword": "pw"})
    assert lines == [
        "  - kai-gpu-fractions:registryPassword: must be stored encrypted; run "
        "`pulumi config set --secret registryPassword <value>`"
    ]


def test_a_password_without_a_username_is_refused() -> None:
    lines = error_lines({"registry": GOOD_REGISTRY, "registryPassword": "pw"}, frozenset({"registryPassword"}))
    assert lines[0].startswith("  - kai-gpu-fractions:registry.username: is required when registryPassword is set")


def test_a_bad_config_stops_the_program_before_any_resource_with_a_run_error(run_program: ProgramRunner) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_program(
            {
                "registry": {"server": "registry.example.com/x"},
                "forks": {"tag": "latest"},
                "nodes": {"gpus": 8},
            }
        )
    message = str(caught.value)
    assert "kai-gpu-fractions:forks.tag" in message and "kai-gpu-fractions:nodes.gpus" in message


def test_a_bad_config_registers_nothing(run_program: ProgramRunner) -> None:
    with pytest.raises(pulumi.RunError):
        run_program({"forks": {"tag": ""}})
    assert run_program.engine.registrations == [], "nothing may be half-applied"


@pytest.mark.parametrize(("gpus", "limit"), [(1, "1Gi"), (8, "1Gi"), (16, "1Gi"), (17, "1074Mi"), (32, "1824Mi")])
def test_mpsd_memory_is_1gi_up_to_16_gpus_then_50_mib_per_extra_gpu(gpus: int, limit: str) -> None:
    assert memory_quantity(mpsd_memory_limit_mib(gpus)) == limit


def test_microk8s_gives_the_cri_socket_its_own_directory_and_the_snap_nri_socket() -> None:
    sockets = RUNTIME_SOCKETS["microk8s"]
    assert sockets == {
        "criSocketPath": "/opt/kai-runtime/containerd.sock",
        "nriSocketPath": "/var/snap/microk8s/common/run/nri.sock",
    }
    cri_dir, nri_dir = (path.rsplit("/", 1)[0] for path in sockets.values())
    assert cri_dir != nri_dir, "two sockets in one directory make the fractiond DaemonSet invalid"


@pytest.mark.parametrize("runtime", ["k3s", "rke2"])
def test_k3s_and_rke2_use_their_embedded_containerd_socket(runtime: str) -> None:
    assert RUNTIME_SOCKETS[runtime] == {"criSocketPath": "/run/k3s/containerd/containerd.sock"}  # type: ignore[index]


def test_gpu_operator_v26_7_0_is_allowed_only_with_a_warning_about_the_weaker_memory_cap() -> None:
    config = parse_config({"registry": GOOD_REGISTRY, "gpuFractioning": '{"minimumGpuOperatorVersion": "v26.7.0"}'})
    (warning,) = configuration_warnings(config.gpu_fractioning)
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" in warning and "can change" in warning
    assert configuration_warnings(parse_config({"registry": GOOD_REGISTRY}).gpu_fractioning) == []
