"""What the program reads back from the cluster: preflight before anything registers, waits and
proofs after, as dynamic resources, all through one Kubernetes client adapter."""
