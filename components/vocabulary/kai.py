"""What the program knows of KAI-Scheduler's API: its Queue, SchedulingShard, PodGroup and Config
kinds, the Deployments and webhooks its operator runs, its scheduler's name, its default Queue, and
the namespace of its reservation pods."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# The leaf Queue KAI's chart creates on install, under `default-parent-queue`; the lab creates one of
# the same name under its own `default`.
DEFAULT_QUEUE = "default-queue"

QUEUE_GROUP, QUEUE_VERSION, QUEUE_PLURAL = "scheduling.run.ai", "v2", "queues"
QUEUE_API_VERSION = f"{QUEUE_GROUP}/{QUEUE_VERSION}"
SHARD_GROUP, SHARD_VERSION, SHARD_PLURAL = "kai.scheduler", "v1", "schedulingshards"
SHARD_API_VERSION = f"{SHARD_GROUP}/{SHARD_VERSION}"
# The Queues KAI's chart creates on install and keeps on uninstall (with the `default` shard).
CHART_KEPT_QUEUES = ("default-parent-queue", DEFAULT_QUEUE)
RESERVATION_NAMESPACE = "kai-resource-reservation"

# The operator reconciles only the cluster-scoped Config of this name.
CONFIG_GROUP, CONFIG_VERSION, CONFIG_PLURAL = "kai.scheduler", "v1", "configs"
CONFIG_NAME = "kai-config"
# The chart runs only `kai-operator`; the operator creates the others from kai-config (and the
# scheduler from SchedulingShard `default`).
SCHEDULER_DEPLOYMENT = "kai-scheduler-default"
DEPLOYMENTS = (
    "kai-operator",
    "admission",
    "binder",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
    SCHEDULER_DEPLOYMENT,
)

SCHEDULER_NAME = "kai-scheduler"
# The namespace the guide installs KAI in: kai.namespace's default.
DEFAULT_NAMESPACE = "kai-scheduler"
PODGROUP_GROUP, PODGROUP_VERSION, PODGROUP_PLURAL = "scheduling.run.ai", "v2alpha2", "podgroups"


Admits = Literal["pods", "queues", "podgroups"]
# Config block, the operator's default name prefix, the validated version, what it admits.
VALIDATING_CONTROLLERS: tuple[tuple[str, str, str, Admits], ...] = (
    ("queueController", "kai-queue-validation-", QUEUE_VERSION, "queues"),
    ("podGroupController", "kai-podgroup-validation-", PODGROUP_VERSION, "podgroups"),
)


@dataclass(frozen=True)
class WebhookConfiguration:
    """One webhook configuration KAI's operator registers, `failurePolicy: Fail`, in the reconcile
    that creates its Deployments (recorded in standins/upstream/kai-scheduler)."""

    kind: Literal["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    name: str
    # What it admits, so a refusal can be traced to the object kind that provoked it.
    admits: Admits


def webhook_configurations(config_spec: Mapping[str, Any] | None) -> tuple[WebhookConfiguration, ...]:
    """The configurations the operator registers for `kai-config`'s spec: its names (or the
    operator's defaults) and, for the queue and PodGroup controllers, only while validation is on."""
    spec = config_spec or {}
    admission = spec.get("admission") or {}
    found = [
        WebhookConfiguration(
            "MutatingWebhookConfiguration",
            str(admission.get("mutatingWebhookConfigurationName") or "mutating-kai-admission"),
            "pods",
        ),
        WebhookConfiguration(
            "ValidatingWebhookConfiguration",
            str(admission.get("validatingWebhookConfigurationName") or "validating-kai-admission"),
            "pods",
        ),
    ]
    for block, default_prefix, version, admits in VALIDATING_CONTROLLERS:
        webhooks = (spec.get(block) or {}).get("webhooks") or {}
        if webhooks.get("enableValidation", True) is False:
            continue
        prefix = str(webhooks.get("webhookConfigurationNamePrefix") or default_prefix)
        found.append(WebhookConfiguration("ValidatingWebhookConfiguration", f"{prefix}{version}", admits))
    return tuple(found)
