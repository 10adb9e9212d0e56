"""The package's input types, made from the stack config's model (components/config/model.py), so each
key, its type, whether it is required and the values an enum takes are written once. The engine's
schema is inferred from these classes (pulumi.provider.experimental.analyzer), which reads only
TypedDicts and Enums (not pydantic models, Literals or unions): hence the translation.

Every section is plain (its values known when the program runs, as stack config is), since the
program decides the graph from it; the kubeconfig, which another resource may create in the same
update, and the registry password are the inputs that may be unknown or secret.
"""

import enum
import re
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict, Union, get_args, get_origin

from pydantic import BaseModel

from components.config.model import ClusterConfig, StackConfig

# The consumer names the cluster with the component's own kubeconfig and context inputs.
LEFT_OUT: frozenset[type[BaseModel]] = frozenset({ClusterConfig})

_MADE: dict[Any, type] = {}


def pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", text) if part)


def enum_member(value: str) -> str:
    name = re.sub(r"[^0-9A-Za-z]+", "_", value).strip("_").upper()
    return name if name[:1].isalpha() else f"V{name}"


def plain_type(annotation: Any) -> Any:
    """An annotation without pydantic's metadata (Annotated) and without None in a union."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        others = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(others) != 1:
            raise TypeError(f"the package cannot express the union {annotation}")
        return plain_type(others[0])
    return annotation


def schema_type(annotation: Any, owner: str, key: str) -> Any:
    """The package's type for a model field's annotation."""
    annotation = plain_type(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return literal_enum(owner + pascal(key), get_args(annotation))
    if origin is list:
        return list[schema_type(get_args(annotation)[0], owner, key)]  # type: ignore[misc]
    if origin is dict:
        return dict[str, schema_type(get_args(annotation)[1], owner, key)]  # type: ignore[misc]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return section(annotation)
    if annotation in (str, int, float, bool):
        return annotation
    raise TypeError(f"the package cannot express {owner}.{key}: {annotation}")


def literal_enum(name: str, values: tuple[Any, ...]) -> type:
    if values not in _MADE:
        members = [(enum_member(str(v)), v) for v in values]
        _MADE[values] = enum.Enum(name, members, type=str, module=__name__)  # type: ignore[misc,assignment]
    return _MADE[values]


def section(model: type[BaseModel]) -> type:
    """A config section as a TypedDict: snake_case keys (the schema shows them in camelCase, as
    stack config spells them), required where the model has no default."""
    made = _MADE.get(model)
    if made is None:
        owner = model.__name__.removesuffix("Config") or model.__name__
        fields = {
            name: (Required if field.is_required() else NotRequired)[schema_type(field.annotation, owner, name)]
            for name, field in model.model_fields.items()
            if plain_type(field.annotation) not in LEFT_OUT
        }
        made = types.new_class(model.__name__, (TypedDict,), {}, lambda ns: ns.update(__annotations__=fields))
        made.__module__ = __name__
        made.__doc__ = (model.__doc__ or "").strip() or None
        _MADE[model] = made
    return made


def made_from() -> dict[str, type[BaseModel]]:
    """The config model each input type was made from, by the type's name."""
    return {made.__name__: model for model, made in _MADE.items() if isinstance(model, type)}


def as_config(value: Any, annotation: Any = StackConfig) -> Any:
    """Inputs (snake_case keys, enum members) as stack config holds them (camelCase keys, plain
    values), so the model's messages name keys as the schema spells them."""
    annotation = plain_type(annotation)
    if isinstance(value, enum.Enum):
        return value.value
    if annotation is int and isinstance(value, float) and value.is_integer():
        # The engine carries every number as a double: 8 arrives as 8.0.
        return int(value)
    if isinstance(value, Mapping):
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = annotation.model_fields
            return {
                fields[key].alias or key if key in fields else key: as_config(item, fields[key].annotation)
                if key in fields
                else item
                for key, item in value.items()
            }
        item_type = get_args(annotation)[1] if get_origin(annotation) is dict else Any
        return {key: as_config(item, item_type) for key, item in value.items()}
    if isinstance(value, list | tuple):
        item_type = get_args(annotation)[0] if get_origin(annotation) is list else Any
        return [as_config(item, item_type) for item in value]
    return value


# Every section of stack config, by its snake_case key, as the package types it.
SECTIONS: dict[str, Any] = typing.get_type_hints(section(StackConfig), include_extras=True)
