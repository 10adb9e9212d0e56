"""The upstream facts the pack's rules rest on, each stated once with where it comes from."""

from __future__ import annotations

import re

# Pod annotations KAI-Scheduler reads as a fraction request (pkg/common/constants/constants.go @
# d5bc503a). gpu-fraction-num-devices only counts together with one of the other two.
FRACTION_ANNOTATION = "gpu-fraction"
MEMORY_ANNOTATION = "gpu-memory"
NUM_DEVICES_ANNOTATION = "gpu-fraction-num-devices"
FRACTION_ANNOTATIONS = (FRACTION_ANNOTATION, MEMORY_ANNOTATION, NUM_DEVICES_ANNOTATION)
# NvFractions' own per-container requests (kai-scheduler/api constants/constants.go @ 556f51ba;
# gpu-fractioning's fractioningAgent.annotationPrefix defaults to `nvidia.com/container.`).
CONTAINER_MEMORY_MARKER = re.compile(r"nvidia\.com/container\.[^./]+\.gpu-memory\.(request|limit)")

# How KAI parses the values (pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go @
# v0.17.0): gpu-fraction with Go's strconv.ParseFloat, refused when <= 0 or >= 1; gpu-memory and
# gpu-fraction-num-devices with strconv.ParseUint(v, 10, 64), refused when 0. These are the subsets
# of what Go accepts that both enforcers agree on: ASCII digits only, no spaces, no underscores,
# no hexadecimal, no NaN or Inf, at most 19 digits.
FRACTION_PATTERN = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,2})?")
POSITIVE_WHOLE_NUMBER_PATTERN = re.compile(r"0*[1-9][0-9]{0,18}")

# The whole-GPU resource KAI refuses beside a fraction (Dynamo README, Known Issues); the GPU
# resources the device plugin advertises (nvidia.com/gpu, nvidia.com/gpu.shared with time-slicing
# renaming, nvidia.com/mig-<profile> with the mixed MIG strategy) all need the NVIDIA runtime.
GPU_RESOURCE = "nvidia.com/gpu"
GPU_RESOURCE_PATTERN = re.compile(r"nvidia\.com/(gpu|mig-).*")

# gpu-fractioning's mpsd mounts the MPS pipe directory from the host (operator/internal/
# fractioningmanager/components/mpsd/mpsd.go @ 23ad945b); /var/run is /run on every current distro.
MPS_PIPE_DIRECTORIES = ("/run/nvidia-mps", "/var/run/nvidia-mps")

# The label this project puts on every namespace it owns for privileged system daemons; the
# admission policy's binding skips the namespaces that carry it.
SYSTEM_NAMESPACE_LABEL = "kai-gpu-fractions/system-namespace"
SYSTEM_NAMESPACE_VALUE = "true"

# KAI admission's admission.gpuFractionRuntimeClassName default and the RuntimeClass the GPU
# Operator creates (operator.runtimeClass), both `nvidia`.
DEFAULT_RUNTIME_CLASS = "nvidia"
# KAI's spec.global.schedulerName and podgrouper.queueLabelKey defaults.
DEFAULT_SCHEDULER_NAME = "kai-scheduler"
DEFAULT_QUEUE_LABEL = "kai.scheduler/queue"
# Where the API server puts an object that names no namespace.
DEFAULT_NAMESPACE = "default"

# Chart names (Chart.yaml `name`): deployments/kai-scheduler @ d5bc503a, the fork's
# operator/charts @ 5440d2c6, and the GPU Operator's deployments/gpu-operator.
KAI_CHART = "kai-scheduler"
GPU_FRACTIONING_CHART = "gpu-fractioning"
GPU_OPERATOR_CHART = "gpu-operator"
# Where the fork keeps gpu-fractioning's chart in its tree, for a checkout the pack cannot read.
GPU_FRACTIONING_CHART_DIRECTORY = "operator/charts"

# The CRDs each chart ships, by which the pack recognises a chart's rendered objects.
KAI_CRDS = frozenset({"configs.kai.scheduler", "schedulingshards.kai.scheduler"})
GPU_FRACTIONING_CRDS = frozenset({"gpufractioningconfigs.gpu-fractioning.kai.scheduler"})
GPU_OPERATOR_CRDS = frozenset({"clusterpolicies.nvidia.com"})
KAI_CONFIG = "kubernetes:kai.scheduler/v1:Config"
GPU_FRACTIONING_CONFIG = "kubernetes:gpu-fractioning.kai.scheduler/v1alpha1:GpuFractioningConfig"
CLUSTER_POLICY = "kubernetes:nvidia.com/v1:ClusterPolicy"

# KAI's chart appends -fips to every resolved tag unless global.fipsMode is "off" (templates/
# _helpers.tpl `kai-scheduler.imageTag` @ 00537307); gpu-fractioning's does for "on" and "only"
# (operator/charts/tests/fips_test.yaml @ fb38aad9).
FIPS_OFF = "off"
FIPS_TAG_SUFFIX = "-fips"

# The node agents gpu-fractioning's chart deploys, each `images.<name>.{repository,tag}`, and the
# environment variables its operator Deployment passes their images in (templates/deployment.yaml
# @ 97130aba).
NODE_AGENT_IMAGES = ("operator", "mpsd", "fractiond", "metricsd")
IMAGE_ENV_SUFFIXES = ("_IMAGE_REPOSITORY", "_IMAGE_TAG")
