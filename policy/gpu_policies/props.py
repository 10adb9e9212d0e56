"""Reading engine props safely (missing fields, preview-time unknowns), config knobs and SDK adapters."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from pulumi_policy import (
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

T = TypeVar("T")

_UNKNOWN_SENTINELS = frozenset(
    {
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_OBJECT_VALUE,
        UNKNOWN_STRING_VALUE,
    }
)


class Unknown:
    """Marks a value that the engine cannot know until the update runs."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()


class NotApplicable(Exception):
    """Raised by a check when its policy does not apply to what it was given."""


class Violation(NamedTuple):
    message: str
    urn: str | None = None


def dig(obj: Any, *path: str) -> Any:
    """The value at `path` through nested mappings, or None once a step is missing or not a mapping.

    Raises the SDK's UnknownValueError when a value on the way is unknown during preview: the engine's
    proxies raise it themselves, and raw sentinels (props built without a proxy) raise it here.
    """
    for depth, key in enumerate(path):
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
        if isinstance(obj, str) and obj in _UNKNOWN_SENTINELS:
            raise UnknownValueError(obj, list(path[: depth + 1]))
    return obj


def peek(obj: Any, *path: str) -> Any:
    """Like `dig`, but returns UNKNOWN instead of raising, for checks that can skip one value."""
    try:
        return dig(obj, *path)
    except UnknownValueError:
        return UNKNOWN


def mapping(obj: Any, *path: str) -> Mapping[str, Any]:
    """The mapping at `path`, or an empty one when it is absent or not a mapping."""
    found = dig(obj, *path)
    return found if isinstance(found, Mapping) else {}


def keys(obj: Any, *path: str) -> frozenset[str]:
    """The keys of the mapping at `path`; iterating keys never reads (possibly unknown) values."""
    return frozenset(mapping(obj, *path))


def elements(obj: Any, *path: str) -> list[Any]:
    """The elements of the list at `path`, or an empty list when it is absent."""
    found = dig(obj, *path)
    if isinstance(found, Sequence) and not isinstance(found, str):
        return list(found)
    return []


def is_true(value: Any) -> bool:
    """Whether a Helm value means true, as a bool or as the string `--set` would pass."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def quoted(values: Sequence[str]) -> str:
    return ", ".join(repr(value) for value in values)


def described(value: Any) -> str:
    """A found value for a message: `is not set`, or `is '<value>'`."""
    return "is not set" if value in (None, "") else f"is {value!r}"


@dataclass(frozen=True)
class Knob(Generic[T]):
    """One setting of a policy's config: its key, its only default and its JSON schema."""

    key: str
    default: T
    description: str
    schema: Mapping[str, Any]

    def read(self, config: Mapping[str, Any]) -> T:
        value = config.get(self.key)
        return self.default if value is None else value

    def json_schema(self) -> dict[str, Any]:
        default = list(self.default) if isinstance(self.default, tuple) else self.default
        return {**self.schema, "description": self.description, "default": default}


def config_schema(*knobs: Knob[Any]) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties={knob.key: knob.json_schema() for knob in knobs})


ResourceCheck = Callable[[str, Mapping[str, Any], Mapping[str, Any]], list[str]]
StackCheck = Callable[[Sequence[PolicyResource], Mapping[str, Any]], list[Violation]]


def _skip_reason(skipped: Exception) -> str:
    if isinstance(skipped, UnknownValueError):
        return f"Not checked during preview: the {skipped.message}."
    return str(skipped)


def resource_validation(check: ResourceCheck) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    """Adapts a pure check to the SDK: unknown-at-preview input makes the policy not applicable."""

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        try:
            messages = check(args.resource_type, args.props, args.get_config())
        except (NotApplicable, UnknownValueError) as skipped:
            args.not_applicable(_skip_reason(skipped))
            return
        for message in messages:
            report_violation(message, None)

    return validate


def stack_validation(check: StackCheck) -> Callable[[StackValidationArgs, ReportViolation], None]:
    """Adapts a pure stack check to the SDK, reporting each violation against its resource."""

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        try:
            violations = check(args.resources, args.get_config())
        except (NotApplicable, UnknownValueError) as skipped:
            args.not_applicable(_skip_reason(skipped))
            return
        for violation in violations:
            report_violation(violation.message, violation.urn)

    return validate
