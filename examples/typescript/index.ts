// A team's TypeScript program: the laptop lab on a cluster it names, through the SDK that
// `pulumi package add` generates. Set the kubeconfig with `pulumi config set --secret kubeconfig`.
import * as pulumi from "@pulumi/pulumi";
import * as gpu from "@pulumi/kai-gpu-fractions";

const config = new pulumi.Config();
const charts = "charts"; // the charts the lab installs; omit these for the public ones
const lab = new gpu.Lab("lab", {
    kubeconfig: config.requireSecret("kubeconfig"),
    kai: { chart: { chart: `${charts}/kai-scheduler` } },
    lab: {
        gpuNodes: ["gpu-node-0"],
        nvmlMock: { buildImage: false, chart: { chart: `${charts}/nvml-mock` } },
        isolator: { chart: { chart: `${charts}/kai-resource-isolator` } },
        prove: false,
    },
});

export const preflight = lab.preflight;
export const labPods = lab.labPods;
