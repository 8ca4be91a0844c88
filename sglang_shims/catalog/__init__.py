"""Patch folders on disk: manifests, loading, and the generated files."""
