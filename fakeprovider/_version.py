"""The version, in one place: the package re-exports it, the build reads it (pyproject.toml),
the CLI and the journal's run header print it."""

__version__ = "0.1.0"
