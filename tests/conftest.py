"""Settings for the whole test run, applied before any test module imports gRPC."""

import os

# The terminal-client tests spawn `ascension` with pexpect, which forks this process while it
# holds open gRPC channels. gRPC's fork support then restarts its poller in the child, which
# sometimes aborted there ("epoll_wait error: Bad file descriptor") before the exec. The child
# only execs, so it needs no fork support.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
