"""pytest plugin entry point (fixtures arrive with the plugin issue)."""
