"""The generators of the repository's committed data.

Each module here rebuilds one data file from public sources (package indexes, upstream
git history) and records in the file what it was built from, so that the file can be
rebuilt by anyone and checked offline: ``python -m tools.refresh.<name> --check``
verifies the committed copy without the network.  A rebuild needs the network and is
run by a maintainer.
"""
