"""A team's own program: it makes its cluster, then the laptop lab on it, in one update.

`local.Command` stands in for the team's cluster resource (EKS, GKE, AKS, kind): its kubeconfig is
an output, unknown until the cluster exists, so preflight runs at `up` once it does.
"""

import pulumi
import pulumi_command as command
import pulumi_kai_gpu_fractions as gpu

cluster = command.local.Command(
    "cluster",
    create='cat "$KUBECONFIG"',
    logging="none",
    opts=pulumi.ResourceOptions(additional_secret_outputs=["stdout"]),  # credentials: never plaintext
)
charts = "charts"  # the charts the lab installs; omit these for the public ones
lab = gpu.Lab(
    "lab",
    kubeconfig=cluster.stdout,
    kai=gpu.KaiConfigArgs(chart=gpu.ChartSourceArgs(chart=f"{charts}/kai-scheduler")),
    lab=gpu.LabConfigArgs(
        gpu_nodes=["gpu-node-0"],
        nvml_mock=gpu.NvmlMockConfigArgs(build_image=False, chart=gpu.ChartSourceArgs(chart=f"{charts}/nvml-mock")),
        isolator=gpu.IsolatorConfigArgs(chart=gpu.ChartSourceArgs(chart=f"{charts}/kai-resource-isolator")),
        prove=False,
    ),
)
pulumi.export("preflight", lab.preflight)
pulumi.export("labPods", lab.lab_pods)
