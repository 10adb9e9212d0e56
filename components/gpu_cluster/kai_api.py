"""What the program knows of KAI-Scheduler's API: its Queue, SchedulingShard and Config kinds, the
Deployments its operator runs, and the namespace of its GPU reservation pods."""

QUEUE_GROUP, QUEUE_VERSION, QUEUE_PLURAL = "scheduling.run.ai", "v2", "queues"
QUEUE_API_VERSION = f"{QUEUE_GROUP}/{QUEUE_VERSION}"
SHARD_API_VERSION = "kai.scheduler/v1"
RESERVATION_NAMESPACE = "kai-resource-reservation"

# The operator reconciles only the cluster-scoped Config of this name.
CONFIG_GROUP, CONFIG_VERSION, CONFIG_PLURAL = "kai.scheduler", "v1", "configs"
CONFIG_NAME = "kai-config"
# The chart runs only `kai-operator`; the operator creates the others from kai-config (and the
# scheduler from SchedulingShard `default`).
DEPLOYMENTS = (
    "kai-operator",
    "admission",
    "binder",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
    "kai-scheduler-default",
)
