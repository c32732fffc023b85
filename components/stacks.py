"""Which stacks are protected: read by the program (what it protects) and the policy pack (what it checks).

Pure standard library, like the TPU catalog, because the policy pack imports it from its own virtualenv. One
list, so a stack the program leaves unprotected is never one the policy skips: a stack named `production` is
protected and checked like `prod`.
"""

PROTECTED_STACKS = ("prod", "production")
"""Stacks whose cluster and bucket carry `protect`; the `protected-stack-resources` policy's default."""
