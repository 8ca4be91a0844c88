"""Maintainer tools for this repository; not part of the installed package."""
