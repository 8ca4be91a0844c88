"""The command line: ``sglang-shims`` and its subcommands."""
