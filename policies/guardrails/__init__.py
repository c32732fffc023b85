"""The pack's policies grouped by domain; `rules.py` assembles them into `POLICIES`."""
