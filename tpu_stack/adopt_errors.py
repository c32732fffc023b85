"""The adopt command's error, apart from adopt.py so the workload command loads no SDK to catch it."""


class AdoptError(Exception):
    """The cluster cannot be adopted, or its outputs not read; one line."""
