"""A watched import, then a change of the working folder to argv[1]: prints the report
folder the process holds."""
import os
import sys

import mymod

os.chdir(sys.argv[1])
print(os.environ["SGLANG_SHIMS_REPORT_DIR"])
