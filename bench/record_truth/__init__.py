"""Acceptance programs of issue 28: third-party-style programs that time themselves."""
