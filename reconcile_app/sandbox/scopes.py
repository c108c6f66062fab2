"""SMART scope grammar (v1 `.read/.write/.*` and v2 `.cruds`): parsing, coverage and permission checks."""
from __future__ import annotations

import re
from dataclasses import dataclass

# Scopes that carry no resource permission but are legal to request.
PLAIN_SCOPES = {
    "launch", "launch/patient", "launch/encounter", "openid", "fhirUser", "profile",
    "offline_access", "online_access",
}
_RESOURCE_SCOPE = re.compile(r"^(patient|user|system)/(\*|[A-Z][A-Za-z]+)\.(read|write|\*|c?r?u?d?s?)(\?.*)?$")
_V1_PERMS = {"read": "rs", "write": "cud", "*": "cruds"}


@dataclass(frozen=True)
class ResourceScope:
    context: str  # patient | user | system
    resource_type: str  # a type or "*"
    perms: frozenset[str]  # subset of c r u d s


def parse_resource_scope(scope: str) -> ResourceScope | None:
    match = _RESOURCE_SCOPE.match(scope)
    if not match or not match.group(3):
        return None
    context, resource_type, perms, _query = match.groups()
    return ResourceScope(context, resource_type, frozenset(_V1_PERMS.get(perms, perms)))


def invalid_scopes(requested: list[str]) -> list[str]:
    """Scopes outside the grammar (a v2 query suffix is accepted but not enforced by the sandbox)."""
    return [s for s in requested if s not in PLAIN_SCOPES and parse_resource_scope(s) is None]


def _covers(allowed: ResourceScope, wanted: ResourceScope) -> bool:
    return (
        allowed.context == wanted.context
        and allowed.resource_type in ("*", wanted.resource_type)
        and wanted.perms <= allowed.perms
    )


def scopes_not_allowed(requested: list[str], registered: str) -> list[str]:
    """Requested scopes the client's registration does not cover."""
    allowed_plain = {s for s in registered.split() if s in PLAIN_SCOPES}
    allowed_resource = [r for r in (parse_resource_scope(s) for s in registered.split()) if r]
    refused = []
    for scope in requested:
        wanted = parse_resource_scope(scope)
        if wanted is None:
            if scope not in allowed_plain:
                refused.append(scope)
        elif not any(_covers(a, wanted) for a in allowed_resource):
            refused.append(scope)
    return refused


def scope_permits(scope: str, *, resource_type: str, perm: str) -> tuple[bool, str]:
    """Whether a granted scope string allows `perm` (c/r/u/d/s) on a type; also returns the widest context."""
    best = ""
    for parsed in (parse_resource_scope(s) for s in scope.split()):
        if parsed and parsed.resource_type in ("*", resource_type) and perm in parsed.perms:
            # system and user scopes see across patients; patient scopes only their compartment.
            if parsed.context in ("system", "user"):
                return True, parsed.context
            best = parsed.context
    return bool(best), best
