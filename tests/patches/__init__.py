"""Tests of individual patches, each against the real releases in its range."""
