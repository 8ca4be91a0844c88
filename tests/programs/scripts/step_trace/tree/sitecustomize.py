"""A sitecustomize further down the path: the step trace's own must run it."""

import os

os.environ["STEP_TRACE_CHAINED"] = "1"
