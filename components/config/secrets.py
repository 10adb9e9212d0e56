"""Config keys stored as secrets, and what the program derives from them kept secret on its way to the
state, the outputs and the logs.

The engine tells the program which top-level keys hold a secret (a key set with `--secret`, whole or
by `--path`, or a Pulumi ESC value marked `fn::secret`), but hands their values over in plaintext, and
the program then builds plain strings from them: `<server>/kai-scheduler`, `--context=<context>`, a
chart's values. So secretness is carried by value: every string a resource or an output receives that
contains a secret key's text (or one of the spellings the program derives from it, such as the
registry's host or a commit's short form), every number equal to a secret number, is passed on as a
Pulumi secret. Names that become an object's name or namespace are also its resource ID, which Pulumi
keeps in plaintext; booleans and the shape of the graph are not hidden.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi import _types

from components.config.model import StackConfig

# Shorter secret texts only match whole values: "8", "fork" or "k3s" must not make every string
# that holds them secret.
SUBSTRING_MINIMUM = 6
REDACTED = "[secret]"
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
# Inputs that are no data of the stack: the dynamic providers' pickled code.
_SKIPPED_PROPS = frozenset({"__provider"})
# Outputs a provider computes from inputs it does not mirror by name: kept secret with those inputs.
# A build prints the tag it pushed; a release's status repeats its chart, version and namespace.
COMMAND = "command:local:Command"
_DERIVED_OUTPUTS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    COMMAND: (frozenset({"create", "update", "environment", "triggers"}), ("stdout", "stderr")),
    "kubernetes:helm.sh/v3:Release": (frozenset({"chart", "version", "name", "namespace"}), ("status",)),
}
# A Kubernetes object's live status repeats its spec (a pod's container images), and the provider
# keeps a copy of every input in the output `__inputs`.
_KUBERNETES_OBJECT = (frozenset({"metadata", "spec"}), ("status", "__inputs"))
_NONE: tuple[frozenset[str], tuple[str, ...]] = (frozenset(), ())


def _is_object(type_: str) -> bool:
    return type_.startswith("kubernetes:") and not type_.startswith("kubernetes:helm.sh/")


@dataclass(frozen=True)
class SecretValues:
    """The plaintexts of the secret config keys, and how to keep them out of plaintext."""

    keys: frozenset[str] = frozenset()
    texts: frozenset[str] = frozenset()
    numbers: frozenset[float] = frozenset()

    @staticmethod
    def of(raw: Mapping[str, Any], config: StackConfig | None, secret_keys: frozenset[str]) -> SecretValues:
        """From the raw config values (decoded) of the keys stored as secrets, and the spellings the
        validated config derives from them."""
        keys = frozenset(key for key in secret_keys if key in raw)
        texts: set[str] = set()
        numbers: set[float] = set()
        for key in keys:
            for leaf in _leaves(raw[key]):
                if isinstance(leaf, str) and leaf.strip():
                    texts.add(leaf)
                    if _DECIMAL.fullmatch(leaf):  # `config set --path` stores a number as its text
                        numbers.add(float(leaf))
                elif isinstance(leaf, int | float) and not isinstance(leaf, bool):
                    numbers.add(leaf)
                    texts.add(str(leaf))
            if config is not None:
                texts |= set(_derived(config, key, raw[key]))
        texts |= {os.path.expanduser(text) for text in texts if text.startswith("~")}
        return SecretValues(keys, frozenset(t for t in texts if t), frozenset(numbers))

    def __bool__(self) -> bool:
        return bool(self.texts or self.numbers)

    def taints(self, value: Any) -> bool:
        """Whether a plain value (at any depth) holds or derives from a secret's text."""
        if isinstance(value, str):
            return value in self.texts or any(text in value for text in self._long_texts)
        if isinstance(value, bool):
            return False
        if isinstance(value, int | float):
            return value in self.numbers
        if isinstance(value, Mapping):
            return any(self.taints(k) or self.taints(v) for k, v in value.items())
        if isinstance(value, list | tuple):
            return any(self.taints(v) for v in value)
        if _types.is_input_type(type(value)):
            return self.taints(_types.input_type_to_untranslated_dict(value))
        return False

    def protect(self, value: Any) -> Any:
        """`value` with each part that holds a secret's text as a Pulumi secret: strings and
        numbers in dicts, lists and args objects one by one, an Output as a whole (once resolved:
        unknown in a preview as it was)."""
        if not self:
            return value
        if isinstance(value, pulumi.Output):
            return value.apply(self._secret_if_tainted)
        if isinstance(value, Mapping):
            if any(self.taints(key) for key in value):  # a key cannot be a secret on its own
                return pulumi.Output.secret(value)
            return {key: self.protect(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.protect(item) for item in value]
        if _types.is_input_type(type(value)):  # an args object: a copy with each field protected
            protected = copy.copy(value)
            for name, item in _types.input_type_to_untranslated_dict(value).items():
                pulumi.set(protected, name, self.protect(item))
            return protected
        return pulumi.Output.secret(value) if self.taints(value) else value

    def redact(self, text: str) -> str:
        """A message for the log, with each secret text (of SUBSTRING_MINIMUM or more) replaced."""
        for secret in sorted(self._long_texts, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return text

    def transformation(self, args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        """A stack transformation: each resource's inputs through `protect`, and each input that
        held a secret named in `additional_secret_outputs`, so the output that mirrors it (which
        a provider may return in plaintext) is kept secret too."""
        if not isinstance(args.props, Mapping):
            return None
        props = dict(args.props)
        tainted = []
        for name, value in args.props.items():
            if name in _SKIPPED_PROPS or value is None:
                continue
            protected = self.protect(value)
            if protected is not value:
                props[name] = protected
            if self.taints(value):  # what is plain already; an Output's provider carries its secretness on
                tainted.append(name)
        inputs, outputs = _DERIVED_OUTPUTS.get(args.type_, _KUBERNETES_OBJECT if _is_object(args.type_) else _NONE)
        if inputs & set(tainted):
            tainted += outputs
            if args.type_ == COMMAND:
                # The plugin streams the command's output into the update's log, where no secret
                # is masked; its stdout and stderr outputs stay, as secrets.
                props["logging"] = "none"
        opts = args.opts
        already = set(opts.additional_secret_outputs or [])
        added = [name for name in dict.fromkeys(tainted) if name not in already]
        if added and isinstance(args.resource, pulumi.CustomResource):
            # Lists of options merge by concatenation: this adds the names.
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=added))
        return pulumi.ResourceTransformationResult(props, opts)

    @property
    def _long_texts(self) -> frozenset[str]:
        return frozenset(text for text in self.texts if len(text) >= SUBSTRING_MINIMUM)

    def _secret_if_tainted(self, resolved: Any) -> Any:
        return pulumi.Output.secret(resolved) if self.taints(resolved) else resolved


NO_SECRETS = SecretValues()
_active: list[SecretValues] = [NO_SECRETS]


def keep_secret(secrets: SecretValues) -> None:
    """Makes every resource registered from now on, and `redact`, keep the secrets secret."""
    _active[0] = secrets
    root = pulumi.runtime.get_root_resource()
    # One transformation reading the active secrets: a stack (and a test process running several
    # programs under one root) never carries another program's.
    if secrets and _transform not in ((root._transformations or []) if root else []):
        pulumi.runtime.register_stack_transformation(_transform)


def _transform(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    return _active[0].transformation(args) if _active[0] else None


def redact(text: str) -> str:
    """A log message without the active secrets' texts (see keep_secret)."""
    return _active[0].redact(text)


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _derived(config: StackConfig, key: str, given: Any) -> Iterator[str]:
    """The spellings the program makes of the values given for `key` that hold none of them whole."""
    given = given if isinstance(given, Mapping) else {}
    if key == "registry" and config.registry is not None and "server" in given:
        yield config.registry.host
    if key == "cluster" and "kubeconfig" in given and config.cluster.kubeconfig_path:
        yield config.cluster.kubeconfig_path
    if key == "forks":
        pins = [given.get(name) for name in ("kaiScheduler", "gpuFractioning")]
        commits = [pin["commit"] for pin in pins if isinstance(pin, Mapping) and isinstance(pin.get("commit"), str)]
        for commit in commits:
            yield from (commit[:7], commit[:12])  # the default tag's and the checkout directory's
        if commits:
            yield config.forks.image_tag
