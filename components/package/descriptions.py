"""The schema's descriptions: every input and output of the package's components and every property of
its types, as the SDKs show them. The engine's analyzer reads attribute docstrings only from classes
written in source; the input types are made from the config model (args.py), so their texts are the
model's own attribute docstrings, the stack config's documentation, read here when the schema is made.
"""

from typing import Any

from pulumi.provider.experimental.analyzer import Analyzer
from pydantic.alias_generators import to_camel

from components.cluster.engine import PACKAGE
from components.cluster.results import CheckResult
from components.package.args import made_from
from components.package.component import PreflightFinding, ProofCheck
from components.preflight.decisions import Finding

# How a component reaches the cluster and the registry (components/package/component.py args_type).
ACCESS = {
    "kubeconfig": "The cluster's kubeconfig: a path, or the file's contents, kept secret; it may be an output of "
    "the resource that makes the cluster. Without it, the ambient kubeconfig.",
    "context": "The kubeconfig context to use; without it, the kubeconfig's current context.",
    "registryPassword": "The password of `registry.username`, kept secret.",
}

# What the components return: the top-level program's stack outputs (components/stack.py deploy).
OUTPUTS = {
    "preflight": "The build guide's prerequisites that did not pass on the cluster before the installs, each "
    "with where, what was seen and its fix; empty when every row passed.",
    "rolloutPlan": "What this update does to the running cluster's GPU nodes and their fractional pods, read "
    "before anything is registered.",
    "imageTag": "The tag both fork images are pushed and pulled with.",
    "imageDigests": "Each fork image's digest in the registry.",
    "releases": "The status of each Helm release installed, by release.",
    "smokePods": "The two smoke pods' names.",
    "proof": "Each check of the proof: whether it held, and what was measured.",
    "proofReport": "The proof's results, as `up` prints them.",
    "provedOn": "The GPU-side versions the proof last held on; they change only when a proof holds.",
    "gpuProfile": "The fake GPUs of each GPU node: the profile, how many, their memory and product.",
    "gpuNodes": "The nodes labelled as GPU nodes.",
    "labPods": "The lab's pods: the whole-GPU pod and the shared pod.",
    "sharedPodBoundary": "What the lab proof saw of the shared pod at the reservation-pod boundary, where fake "
    "GPUs stop.",
    "admission": "The admission policy's readiness report, or the warning that it is off.",
    "release": "The status of the step's Helm release.",
    "ready": "The report of the step's gate: each of the build guide's checks of the step, and what it saw.",
}


def attribute_docs(cls: type) -> dict[str, str]:
    """A class's attribute docstrings by attribute name (the string right after each annotated
    attribute), read as Pulumi's analyzer reads those of the classes written in source; its
    whitespace made single."""
    reader = Analyzer(PACKAGE)
    found = {name: reader.get_docstring(cls, name) for name in cls.__annotations__}
    return {name: " ".join(text.split()) for name, text in found.items() if text}


def type_descriptions() -> dict[str, dict[str, str]]:
    """By the name of each type made from a class: its properties' descriptions, by camelCase name."""
    found = {name: {to_camel(k): text for k, text in attribute_docs(m).items()} for name, m in made_from().items()}
    for record, shape in ((PreflightFinding, Finding), (ProofCheck, CheckResult)):
        found[record.__name__] = attribute_docs(shape)
    return found


def describe(document: dict[str, Any]) -> None:
    """Describes each property of the schema's components and types that the analyzer left bare: by
    the texts above, else by the description of the type it refers to (a component's config section).
    An enum type made from a field's choices takes that field's description."""
    by_type, resources, types = type_descriptions(), document.get("resources", {}), document.get("types", {})
    for token, entry in [*resources.items(), *types.items()]:
        own = {**ACCESS, **OUTPUTS} if token in resources else by_type.get(token.rsplit(":", 1)[-1], {})
        for key in ("inputProperties", "properties"):
            for name, prop in entry.get(key, {}).items():
                ref = prop.get("$ref") or prop.get("items", {}).get("$ref") or ""
                referred = types.get(str(ref).removeprefix("#/types/"), {})
                text = own.get(name) or referred.get("description")
                if text and not prop.get("description"):
                    prop["description"] = text
                if "enum" in referred and not referred.get("description"):
                    referred["description"] = prop.get("description")
