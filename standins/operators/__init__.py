"""STAND-IN operators for the local control plane: NOT the NVIDIA GPU Operator, KAI's operator,
gpu-fractioning's operator, nvml-mock, GPU Feature Discovery or a kubelet's device manager.

Each does, at run time and after a delay, what its real counterpart is documented to create
(standins/charts/README.md lists the sources): RuntimeClasses, node labels, allocatable GPUs,
DaemonSets and Deployments, status and node conditions, daemon logs. None of them models a GPU. They
let the program's gates and proofs run against a real API server with the real objects' shapes
and timing, and fail the way a cluster whose operator is slow or absent fails.

scripts/control-plane.sh starts them with every control plane instance. How long each takes, or
that it never works at all, is read from the ConfigMap kube-system/kgf-stand-in-operators (see
knobs.py), so a test can make an operator slow or absent.
"""
