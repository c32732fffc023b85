"""The platform's lifecycle rules the scenarios judge by: the catalogue lives in offline/catalogue.py, which the
pull request plan diff reads at run time too; the tests import it from here."""

from offline.catalogue import (
    CATALOGUE,
    ENGINE,
    REFUSES,
    REPLACES,
    REQUIRES,
    Catalogue,
    Record,
    Refuses,
    Replaces,
    Requires,
)

__all__ = [
    "CATALOGUE",
    "ENGINE",
    "REFUSES",
    "REPLACES",
    "REQUIRES",
    "Catalogue",
    "Record",
    "Refuses",
    "Replaces",
    "Requires",
]
