"""The laptop lab: a kind cluster with fake A100s (nvml-mock), KAI v0.17.0 with HAMi-core, the
kai-resource-isolator, and the pods that show where fake GPUs stop."""
