"""The stack test builds images and starts containers: `make stack-test` runs it (after the suite
in .ci/run), with SFUMATO_STACK_TEST=1; the suite itself leaves it out."""

import os

if os.environ.get("SFUMATO_STACK_TEST") != "1":
    collect_ignore = ["test_stack.py"]
