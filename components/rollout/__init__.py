"""Before an upgrade: what the running cluster has and what a change will do to it."""
