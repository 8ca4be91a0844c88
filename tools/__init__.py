"""Maintainer tools for this repository, not part of the installed package: the
generators of data that ships or is published, run by hand."""
