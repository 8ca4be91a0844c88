"""A stand-in sglang package: only the module the step trace waits for."""
