"""`chaos`: a soak under load with faults injected at random, then invariants checked over the
whole history (issue 19). `python -m benchmarks chaos [--minutes N]` (default 5).

Distributed mode on this machine: two gateways, two image workers, a video and a style worker,
PostgreSQL (a temporary database, reached through a TCP proxy that can cut it), a Redis server
of the soak's own (restartable; the shared ones are never touched) and moto's S3 server (behind
a second proxy, so the store can go away without losing what it holds). The load runs in its
own process (`benchmarks/chaos/load.py`) and writes every request to a history file.

One file a part: `cluster` (the deployment and its dependencies), `faults` (what is injected,
when), `load` (the simulated users), `invariants` (the checks over the history), `soak` (the
run from start to report).
"""
