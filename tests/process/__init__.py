"""Fresh interpreters: the finder, waking, the engine in a real process, fork, atexit,
threads, faults and attacks."""
