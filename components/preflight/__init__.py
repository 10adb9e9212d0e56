"""Before anything is installed, in preview too: every prerequisite row of the build guide, read from
the cluster and its GPU hosts and decided."""
