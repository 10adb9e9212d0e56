"""What the program knows of fractional pods: the annotations that make KAI and gpu-fractioning
treat a pod as one, the values they accept, where mpsd keeps its pipes, and the admission policy's
name, its modes and the label of the namespaces it skips.

The pack (policy/gpu_policies/kube.py) states the same facts in its own package;
tests/unit/test_fraction_admission.py holds the two to each other.
"""

from __future__ import annotations

# KAI's fraction annotations (pkg/common/constants/constants.go: GpuFraction, GpuMemory,
# GpuFractionsNumDevices) and NvFractions' per-container memory markers under gpu-fractioning's
# default `fractioningAgent.annotationPrefix` (../shared/reference/upstream-facts.md).
FRACTION_ANNOTATION = "gpu-fraction"
MEMORY_ANNOTATION = "gpu-memory"
NUM_DEVICES_ANNOTATION = "gpu-fraction-num-devices"
FRACTION_ANNOTATIONS = (FRACTION_ANNOTATION, NUM_DEVICES_ANNOTATION, MEMORY_ANNOTATION)
CONTAINER_MEMORY_MARKER = r"^nvidia[.]com/container[.][^./]+[.]gpu-memory[.](request|limit)$"

# KAI's binder validates with Go's strconv (gpu_request_validator.go): ParseFloat, then 0 < f < 1;
# ParseUint base 10, then > 0. The patterns are that grammar without hex floats, Inf and NaN, and
# with the exponent and the integers short enough that parsing can neither overflow nor error.
FRACTION_PATTERN = r"^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]{1,2})?$"
POSITIVE_INTEGER_PATTERN = r"^0*[1-9][0-9]{0,18}$"

# mpsd's hostPath for the MPS pipes (gpu-fractioning mpsd.go @ 23ad945b); /var/run is /run on
# every distribution a GPU node runs.
MPS_PIPE_DIRECTORIES = ("/run/nvidia-mps", "/var/run/nvidia-mps")


# Set on every namespace the program creates for a system daemon; the policy's binding skips exactly
# these namespaces, never a namespace by its name alone (components/gpu_cluster/fraction_admission.py).
SYSTEM_NAMESPACE_LABEL = "kai-gpu-fractions/system-namespace"
SYSTEM_NAMESPACE_LABELS = {SYSTEM_NAMESPACE_LABEL: "true"}

# The policy and its binding, one of each in a cluster.
POLICY_NAME = "kai-gpu-fractions-fractional-pods"
# What each admission mode asks of the API server (ValidatingAdmissionPolicyBinding.validationActions).
VALIDATION_ACTIONS: dict[str, list[str]] = {"deny": ["Deny"], "warn": ["Warn"], "audit": ["Audit"]}
