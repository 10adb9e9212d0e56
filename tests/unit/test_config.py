"""Stack config validation: every mistake is reported at once, by config path, before anything is registered."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, get_args

import pulumi
import pytest

from components.config.load import ConfigError, parse_config, unread_keys
from components.gpu_cluster.gpu_fractioning import configuration_warnings, memory_quantity
from components.vocabulary import fractioning
from components.vocabulary.fractioning import RUNTIME_SOCKETS, mpsd_memory_limit_mib
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
        "  - kai-gpu-fractions:registry.server: must be a registry host, with an optional port and an optional "
        "lowercase repository path, without a scheme, tag or trailing slash; "
        'for example: "registry.example.com/team/kai-fork"',
        "  - kai-gpu-fractions:forks.tag: 'latest' moves with every push; pin a tag that names one build; "
        'for example: "smshare-44d1d0a-af0544e"',
        "  - kai-gpu-fractions:forks.images: Input should be 'build', 'verify' or 'prebuilt'; for example: \"build\"",
        "  - kai-gpu-fractions:nodes.gpusPerNode: Input should be greater than or equal to 1; for example: 8",
    ]


@pytest.mark.parametrize("tag", ["0.0.0", "0.1.0", "latest"])
def test_fallback_tags_are_refused(tag: str) -> None:
    (line,) = error_lines({"registry": GOOD_REGISTRY, "forks": f'{{"tag": "{tag}"}}'})
    assert line.startswith("  - kai-gpu-fractions:forks.tag: ")


def test_an_empty_tag_is_refused_rather_than_falling_back_to_the_chart_version() -> None:
    (line,) = error_lines({"registry": GOOD_REGISTRY, "forks": '{"tag": ""}'})
    assert line.startswith("  - kai-gpu-fractions:forks.tag: must not be empty"), line


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


def test_the_node_runtimes_type_checkers_see_are_those_the_socket_table_knows() -> None:
    """The Literal written out for type checkers, in order (the config schema lists them so), is the
    table's keys: a runtime added to one and not the other fails here."""
    tree = ast.parse(Path(fractioning.__file__).read_text())
    (written,) = (
        [element.value for element in node.value.slice.elts]  # type: ignore[attr-defined]
        for branch in tree.body
        if isinstance(branch, ast.If) and ast.unparse(branch.test) == "TYPE_CHECKING"
        for node in branch.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "NodeRuntime"
    )
    assert written == list(RUNTIME_SOCKETS) == list(get_args(fractioning.NodeRuntime))


@pytest.mark.parametrize("runtime", list(RUNTIME_SOCKETS))
def test_every_runtime_the_socket_table_knows_is_accepted(runtime: str) -> None:
    config = parse_config({"registry": GOOD_REGISTRY, "gpuFractioning": json.dumps({"nodeRuntime": runtime})})
    assert RUNTIME_SOCKETS[config.gpu_fractioning.node_runtime] is RUNTIME_SOCKETS[runtime]  # type: ignore[index]


def test_a_runtime_the_socket_table_does_not_know_is_refused_at_validation() -> None:
    (line,) = error_lines({"registry": GOOD_REGISTRY, "gpuFractioning": '{"nodeRuntime": "cri-o"}'})
    assert "gpuFractioning.nodeRuntime" in line


def test_gpu_operator_v26_7_0_is_allowed_only_with_a_warning_about_the_weaker_memory_cap() -> None:
    config = parse_config({"registry": GOOD_REGISTRY, "gpuFractioning": '{"minimumGpuOperatorVersion": "v26.7.0"}'})
    (warning,) = configuration_warnings(config.gpu_fractioning)
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" in warning and "can change" in warning
    assert configuration_warnings(parse_config({"registry": GOOD_REGISTRY}).gpu_fractioning) == []


# ---------------------------------------------------------------- one regression case per class of mistake

A100_RAW = {"registry": GOOD_REGISTRY}
LAB_RAW = {"profile": "lab", "lab": '{"kind": null, "gpuNodes": ["gpu-node-0"]}'}
KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n"


def with_key(base: dict[str, str], key: str, value: object) -> dict[str, str]:
    """`base` with `key` (dotted) set to `value`, as the engine hands structured config over."""
    top, *rest = key.split(".")
    decoded: dict[str, Any] = {k: json.loads(v) if v.startswith(("{", "[")) else v for k, v in base.items()}
    if not rest:
        decoded[top] = value
    else:
        node = decoded.setdefault(top, {})
        for part in rest[:-1]:
            node = node.setdefault(part, {})
        node[rest[-1]] = value
    return {k: json.dumps(v) if isinstance(v, dict | list) else str(v) for k, v in decoded.items()}


@pytest.mark.parametrize(
    ("base", "key", "value", "reason"),
    [
        # What used to end in a traceback.
        (A100_RAW, "nodes.gpuMemoryMib", int("9" * 400), "less than or equal to 1048576"),
        (A100_RAW, "forks.workdir", "~nosuchuser/forks", "home directory this machine does not have"),
        (A100_RAW, "forks.workdir", "forks\x00dir", "control characters"),
        # Kubernetes names.
        (A100_RAW, "kai.namespace", "", "must not be empty"),
        (A100_RAW, "kai.namespace", "KAI", "DNS-1123 label"),
        (A100_RAW, "gpuOperator.namespace", "gpu operator", "DNS-1123 label"),
        (A100_RAW, "gpuFractioning.namespace", "fräctioning", "DNS-1123 label"),
        (A100_RAW, "smokeTest.namespace", "n" * 70_000, "DNS-1123 label"),
        (A100_RAW, "smokeTest.queue", "queue with spaces", "DNS-1123 label"),
        (A100_RAW, "registry", {"server": "registry.example.com/x", "pullSecretName": "Secret!"}, "DNS-1123 subdomain"),
        (LAB_RAW, "lab", {"kind": {"name": "Kai_Hami"}}, "DNS-1123 label"),
        (LAB_RAW, "lab", {"kind": None, "gpuNodes": ["n0", "n0"]}, "names n0 more than once"),
        (LAB_RAW, "lab", {"kind": None, "gpuNodes": []}, "at least one node"),
        (A100_RAW, "preflight", {"hostAccess": {"checkPod": {"namespace": "Kube System"}}}, "DNS-1123 label"),
        # Image references.
        (A100_RAW, "registry.server", "registry.example.com/Team", "lowercase repository path"),
        (A100_RAW, "registry.server", "registry.example.com/team:v1", "without a scheme, tag"),
        (A100_RAW, "registry.server", "//", "registry host"),
        (A100_RAW, "registry.server", "-registry.example.com/x", "registry host"),
        (A100_RAW, "registry.server", "registry.example.com/a b", "registry host"),
        (A100_RAW, "smokeTest.image", "nvidia/cuda@sha256:", "image reference"),
        (A100_RAW, "smokeTest.image", "nvidia/cuda", "tag or a digest"),
        (A100_RAW, "smokeTest.image", "nvidia/cuda:latest", "moves with every push"),
        (LAB_RAW, "lab", {"kind": None, "gpuNodes": ["n0"], "devicePluginImage": "x:y\nz"}, "control characters"),
        (LAB_RAW, "lab", {"kind": None, "gpuNodes": ["n0"], "nvmlMock": {"imageRepository": ""}}, "not be empty"),
        (LAB_RAW, "lab", {"kind": None, "gpuNodes": ["n0"], "nvmlMock": {"imageTag": "latest"}}, "moves with"),
        (A100_RAW, "preflight", {"hostAccess": {"checkPod": {"image": "busybox"}}}, "tag or a digest"),
        # Chart pins.
        (A100_RAW, "gpuOperator.chart", {"version": "*"}, "one exact chart version"),
        (A100_RAW, "gpuOperator.chart", {"version": "latest"}, "one exact chart version"),
        (A100_RAW, "gpuOperator.chart", {"version": "v26"}, "one exact chart version"),
        (A100_RAW, "gpuOperator.chart", {"version": " v26.7.1"}, "whitespace"),
        (A100_RAW, "gpuOperator.chart", {"version": "v26.7.1\n"}, "whitespace"),
        (A100_RAW, "gpuOperator.chart", {"version": "v２６.7.1"}, "one exact chart version"),
        (A100_RAW, "gpuOperator.chart", {"version": "26.7.1"}, "with a leading v, such as v26.7.1"),
        (
            LAB_RAW,
            "kai.chart",
            {"chart": "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", "version": "latest"},
            "one exact",
        ),
        (A100_RAW, "gpuOperator.chart", {"chart": ""}, "must not be empty"),
        (A100_RAW, "gpuOperator.chart", {"chart": "gpu-operator", "repo": "", "version": "v26.7.1"}, "not be empty"),
        (A100_RAW, "gpuOperator.chart", {"chart": "gpu-operator", "repo": "ftp://x", "version": "v26.7.1"}, "URL"),
        # Driver versions.
        (A100_RAW, "gpuOperator.driver", {"version": "615"}, "NNN.NN or NNN.NN.NN"),
        (A100_RAW, "gpuOperator.driver", {"version": "615.."}, "NNN.NN or NNN.NN.NN"),
        (A100_RAW, "gpuOperator.driver", {"version": "615.71.09;reboot"}, "NNN.NN or NNN.NN.NN"),
        (A100_RAW, "gpuOperator.driver", {"version": "615.71.09\n"}, "whitespace"),
        (A100_RAW, "gpuOperator.driver", {"version": "６１５.71.09"}, "NNN.NN or NNN.NN.NN"),
        (A100_RAW, "gpuOperator.driver", {"version": "595.91.07"}, "r615 or newer"),
        # Strict numbers and switches.
        (A100_RAW, "nodes.gpusPerNode", True, "not true or false"),
        (A100_RAW, "nodes.gpusPerNode", "8_0", "plain whole number"),
        (A100_RAW, "forks", {"kaiScheduler": {"pullRequest": "23_68"}}, "plain whole number"),
        (A100_RAW, "smokeTest.gpuFraction", 1e-300, "greater than or equal to 0.01"),
        (A100_RAW, "smokeTest.gpuFraction", float("nan"), "finite number"),
        (A100_RAW, "smokeTest.gpuFraction", 0.333, "multiple of 0.01"),
        (A100_RAW, "smokeTest.prove", 1, "true or false"),
        # Nothing from config becomes an option of git or ssh.
        (A100_RAW, "forks", {"kaiScheduler": {"repository": "--upload-pack=touch /tmp/pwned"}}, "start with '-'"),
        (A100_RAW, "preflight", {"hostAccess": {"ssh": {"user": "-oProxyCommand=x"}}}, "start with '-'"),
        (A100_RAW, "preflight", {"hostAccess": {"ssh": {"addresses": {"n0": "-oProxyCommand=x"}}}}, "start with '-'"),
        (A100_RAW, "preflight", {"hostAccess": {"ssh": {"command": ["-v"]}}}, "ssh program, not an option"),
        # Empty or padded is not "default".
        (A100_RAW, "forks.workdir", "", "must not be empty"),
        (A100_RAW, "forks.platform", "", "must not be empty"),
        (A100_RAW, "cluster.context", "", "must not be empty"),
        (A100_RAW, "preflight", {"hostAccess": {}}, "exactly one of `ssh` and `checkPod`"),
        (A100_RAW, "preflight", {"hostAccess": {"ssh": {"command": []}}}, "must name the ssh program"),
    ],
)
def test_each_class_of_mistake_is_refused_naming_its_key(
    base: dict[str, str], key: str, value: object, reason: str
) -> None:
    message = "\n".join(error_lines(with_key(base, key, value), frozenset({"cluster"})))
    assert f"kai-gpu-fractions:{key.split('.')[0]}" in message and reason in message, message


def test_a_partial_chart_key_keeps_its_default_chart_and_gets_its_own_charts_example() -> None:
    config = parse_config(
        {**LAB_RAW, "lab": '{"kind": null, "gpuNodes": ["n0"], "isolator": {"chart": {"version": "1.2.0-chart"}}}'}
    )
    assert config.lab.isolator.chart.chart == "oci://docker.io/projecthami/kai-resource-isolator"
    assert config.lab.isolator.chart.version == "1.2.0-chart"
    (line,) = error_lines(
        with_key(LAB_RAW, "lab", {"kind": None, "gpuNodes": ["n0"], "isolator": {"chart": {"version": "x"}}})
    )
    assert line.endswith('for example: "1.1.0-chart"'), "the isolator's own chart, not the GPU Operator's"


def test_a_partial_fork_pin_keeps_the_rest_of_its_default() -> None:
    config = parse_config(
        with_key(A100_RAW, "forks", {"kaiScheduler": {"repository": "https://mirror.example.com/kai.git"}})
    )
    assert config.forks.kai_scheduler.commit == "44d1d0a966465c69b1fd0d24b40b9a1ebb73699e", (
        "a mirror of the same commit"
    )


def test_an_inline_kubeconfig_must_be_stored_encrypted() -> None:
    raw = with_key(A100_RAW, "cluster", {"kubeconfig": KUBECONFIG})
    (line,) = error_lines(raw)
    assert line.startswith("  - kai-gpu-fractions:cluster.kubeconfig: holds a kubeconfig's contents"), line
    assert parse_config(raw, frozenset({"cluster"})).cluster.kubeconfig_is_contents


def test_a_blank_registry_password_is_refused() -> None:
    raw = {"registry": '{"server": "r.example.com/x", "username": "robot"}', "registryPassword": " "}
    assert error_lines(raw, frozenset({"registryPassword"})) == [
        "  - kai-gpu-fractions:registryPassword: must not be empty"
    ]


def test_keys_the_profile_does_not_read_are_named_in_warnings() -> None:
    raw = {**LAB_RAW, "gpuOperator": '{"enabled": false}', "nodes": '{"gpusPerNode": 4}'}
    assert unread_keys(raw, parse_config(raw)) == [
        "kai-gpu-fractions:gpuOperator is set, but the lab profile does not read it",
        "kai-gpu-fractions:nodes is set, but the lab profile does not read it",
    ]


# ---------------------------------------------------------------- what docker, buildx, crane and Helm take


@pytest.mark.parametrize(
    "server", ["localhost:5000", "localhost", "registry.example.com", "10.0.0.5:5000", "[::1]:5000", "ghcr.io/team"]
)
def test_a_registry_host_with_an_optional_port_and_no_path_is_a_registry(server: str) -> None:
    config = parse_config({"registry": json.dumps({"server": server})})
    assert config.fork_registry.server == server, "docker and crane push <host[:port]>/<repository> as it is"
    assert config.fork_registry.host == server.split("/", 1)[0]


@pytest.mark.parametrize("server", ["kai-fork", "team/kai-fork", "localhost:5000/", "oci://localhost:5000"])
def test_a_registry_server_without_a_registry_host_is_refused(server: str) -> None:
    (line,) = error_lines({"registry": json.dumps({"server": server})})
    assert line.startswith("  - kai-gpu-fractions:registry.server: must be a registry host, with an optional port"), (
        "a first component without '.', ':' or localhost is a Docker Hub user, not a registry"
    )


def test_a_registry_without_a_path_gets_the_forks_images_directly_under_its_host(run_program: ProgramRunner) -> None:
    engine, _ = run_program({"registry": {"server": "localhost:5000"}})
    environments = {r.name: r.inputs["environment"] for r in engine.created("command:local:Command")}
    kai = environments["kai-scheduler-images-build"]
    assert kai["DOCKER_REPO_BASE"] == "localhost:5000/kai-scheduler", "as the guide's build pushes them"
    assert kai["REGISTRY_HOST"] == "localhost:5000", "docker login takes the host with its port"
    values = engine.release("gpu-fractioning").inputs["values"]["images"]
    assert values["operator"]["repository"] == "localhost:5000/kai-gpu-fractioning/operator"


@pytest.mark.parametrize("platform", ["linux/amd64,linux/arm64", "linux/arm64", "linux/arm/v7,linux/amd64"])
def test_a_comma_list_of_platforms_is_one_multi_platform_build(platform: str, run_program: ProgramRunner) -> None:
    assert parse_config({"registry": GOOD_REGISTRY, "forks": json.dumps({"platform": platform})}).forks.platform == (
        platform
    )
    engine, _ = run_program({"registry": {"server": "localhost:5000"}, "forks": {"platform": platform}})
    environments = {r.name: r.inputs["environment"] for r in engine.created("command:local:Command")}
    assert environments["kai-scheduler-images-build"]["DOCKER_BUILD_PLATFORM"] == platform, (
        "buildx takes the list as it is and pushes one manifest list"
    )
    assert environments["kai-gpu-fractioning-images-build"]["PLATFORM"] == platform


@pytest.mark.parametrize(
    ("platform", "reason"),
    [
        ("linux/amd64,linux/arm46", "'linux/arm46' is not an OS/architecture pair such as linux/amd64"),
        ("linux/amd64,", "'' is not an OS/architecture pair"),
        ("linux/amd64, linux/arm64", "' linux/arm64' is not an OS/architecture pair"),
        ("linux/amd64,linux/amd64", "names linux/amd64 more than once"),
        ("linux", "must be an OS/architecture pair such as linux/amd64"),
        ("linx/amd64", "must be an OS/architecture pair such as linux/amd64"),
    ],
)
def test_each_platform_of_the_list_is_checked(platform: str, reason: str) -> None:
    (line,) = error_lines({"registry": GOOD_REGISTRY, "forks": json.dumps({"platform": platform})})
    assert line.startswith("  - kai-gpu-fractions:forks.platform: "), line
    assert reason in line, line
    assert 'for example: "linux/amd64"' in line, "the message carries a good value"


@pytest.mark.parametrize(
    ("key", "chart"),
    [
        ("gpuOperator", {"chart": "oci://", "version": "v26.7.1"}),
        ("kai", {"chart": "oci://", "version": "v0.17.0"}),
        ("gpuFractioning", {"chart": "oci://ghcr.io", "version": "0.1.2"}),
        ("kai", {"chart": "oci://ghcr.io/kai-scheduler/kai-scheduler:v0.17.0", "version": "v0.17.0"}),
    ],
)
def test_an_oci_chart_reference_without_a_registry_and_repository_is_refused(key: str, chart: dict[str, str]) -> None:
    (line,) = error_lines({"registry": GOOD_REGISTRY, key: json.dumps({"chart": chart})})
    assert line.startswith(f"  - kai-gpu-fractions:{key}.chart: `chart` must name a registry host and the chart"), line
    assert "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler" in line, "the message shows a good reference"


@pytest.mark.parametrize("version", ["v26.4.0", "v26.7.0", "v26.7.1-rc.1", "v25.10.1"])
def test_a_gpu_operator_chart_older_than_gpu_fractionings_minimum_is_refused(version: str) -> None:
    (line,) = error_lines({"registry": GOOD_REGISTRY, "gpuOperator": json.dumps({"chart": {"version": version}})})
    assert line == (
        f"  - kai-gpu-fractions:gpuOperator.chart.version: {version} is older than v26.7.1, the oldest GPU Operator "
        "gpu-fractioning starts with (gpuFractioning.minimumGpuOperatorVersion); pin v26.7.1 or newer; "
        'for example: "v26.7.1"'
    )


def test_the_gpu_operator_minimum_follows_gpu_fractionings_setting_and_the_charts_spelling() -> None:
    lowered = json.dumps({"minimumGpuOperatorVersion": "v26.7.0"})
    chart = json.dumps({"chart": {"version": "v26.7.0"}})
    parse_config({"registry": GOOD_REGISTRY, "gpuOperator": chart, "gpuFractioning": lowered})
    for version in ("v26.7.1", "v26.10.0", "v27.0.0"):
        parse_config({"registry": GOOD_REGISTRY, "gpuOperator": json.dumps({"chart": {"version": version}})})
    mirror = json.dumps({"chart": {"chart": "mirror/gpu-operator", "version": "26.4.0"}})
    (line,) = error_lines({"registry": GOOD_REGISTRY, "gpuOperator": mirror})
    assert "pin 26.7.1 or newer" in line, "a chart spelled without the v gets the fix in its own spelling"


def test_a_gpu_operator_the_stack_does_not_install_is_left_to_preflight() -> None:
    managed_elsewhere = json.dumps({"enabled": False, "chart": {"version": "v26.4.0"}})
    parse_config({"registry": GOOD_REGISTRY, "gpuOperator": managed_elsewhere})
