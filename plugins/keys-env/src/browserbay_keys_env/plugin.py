"""Cluster defaults from the environment the keeper was started with.

Two spellings, both precedence ``cluster`` (a user's own key always wins over them):

- ``BAY_INTEGRATION_<ID>_<FIELD>``: one value, the id and field upper-cased with ``:`` and
  ``-`` as ``_`` (``BAY_INTEGRATION_CLOUD_STEEL_API_KEY``);
- ``BAY_INTEGRATIONS``: a JSON list of ``{"id": "<integration>", "values": {"<field>": "..."}}``
  (one variable for many rows; a ``BAY_INTEGRATION_*`` variable wins over it per field).

The keeper seals these out of its process environment at start
(:func:`browserbay.keys.seal_environment`); this source reads the sealed snapshot, so a
rotated cluster value reaches the keeper at its next start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from browserbay.hookspecs import hookimpl
from browserbay.keys import INTEGRATIONS_VAR, env_name, key_environ
from browserbay.model import KeySource


class ClusterEnvError(ValueError):
    """``BAY_INTEGRATIONS`` cannot be read; the message says how to fix it (never a value)."""


def parse_integrations(text: str) -> dict[str, dict[str, str]]:
    """``BAY_INTEGRATIONS`` as ``{integration: {field: value}}``."""
    fix = (
        f'{INTEGRATIONS_VAR} must be a JSON list of {{"id": "<integration>", "values": '
        '{"<field>": "<value>"}}; fix it where the keeper is started'
    )
    try:
        rows = json.loads(text)
    except ValueError:
        raise ClusterEnvError(f"{INTEGRATIONS_VAR} is not JSON: {fix}") from None
    if not isinstance(rows, list):
        raise ClusterEnvError(f"{INTEGRATIONS_VAR} is not a list: {fix}")
    table: dict[str, dict[str, str]] = {}
    for i, row in enumerate(rows):
        values = row.get("values") if isinstance(row, dict) else None
        ident = row.get("id") if isinstance(row, dict) else None
        if not isinstance(ident, str) or not isinstance(values, dict):
            raise ClusterEnvError(f"{INTEGRATIONS_VAR}[{i}] lacks an id or values: {fix}")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
            raise ClusterEnvError(f"{INTEGRATIONS_VAR}[{i}] values must be strings: {fix}")
        table.setdefault(ident, {}).update(values)
    return table


def lookup(environ: Mapping[str, str], integration_id: str, field: str) -> str | None:
    """The cluster's value of one field: its own variable first, then the JSON list."""
    value = environ.get(env_name(integration_id, field))
    if value:
        return value
    text = environ.get(INTEGRATIONS_VAR, "").strip()
    if not text:
        return None
    return parse_integrations(text).get(integration_id, {}).get(field) or None


def get(integration_id: str, field: str) -> str | None:
    return lookup(key_environ(), integration_id, field)


@hookimpl
def bay_key_sources() -> list[KeySource]:
    return [KeySource("env", "cluster", get, order=10, protection=lambda: PROTECTION)]


PROTECTION = (
    "the keeper's start environment: moved onto an fd and out of /proc/<keeper>/environ at "
    "start; the process that started the keeper held it while it ran"
)
