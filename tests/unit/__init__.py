"""Decisions made in the test process itself: no interpreter started."""
