"""The GPU cluster stack the build guide installs, in its order: the GPU Operator, KAI-Scheduler,
the gpu-fractioning node agents, and the smoke pods that must share one GPU."""
