"""The stack's typed configuration, one module per domain; each model sits next to the values derived from it.

Floors (a module imports only those below it): `stack` (StackConfig, loading, cross-domain checks) over
`queues` and `serving` (each over `pools`), `pools`, `cluster` and `monitoring` over `base`.
"""

from components.config.base import PROJECT, ConfigError
from components.config.stack import StackConfig, load, load_from_pulumi

__all__ = ["PROJECT", "ConfigError", "StackConfig", "load", "load_from_pulumi"]
