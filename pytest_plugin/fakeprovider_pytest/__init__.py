"""pytest plugin for fakeprovider."""
