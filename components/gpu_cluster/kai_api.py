"""What the program knows of KAI-Scheduler's API: its Queue and SchedulingShard kinds, and the
namespace of its GPU reservation pods."""

QUEUE_GROUP, QUEUE_VERSION, QUEUE_PLURAL = "scheduling.run.ai", "v2", "queues"
QUEUE_API_VERSION = f"{QUEUE_GROUP}/{QUEUE_VERSION}"
SHARD_API_VERSION = "kai.scheduler/v1"
RESERVATION_NAMESPACE = "kai-resource-reservation"
