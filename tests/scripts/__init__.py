"""The project's scripts outside the package: tools/, examples/, docs/."""
