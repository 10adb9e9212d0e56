"""The floor every check stands on: one Kubernetes client adapter and the Protocol the checks take it
by, one deadline-bounded wait, the facts read off nodes, a check's result, and how a check runs
inside the Pulumi engine."""
