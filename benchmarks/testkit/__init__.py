"""The harness the tests and the benchmarks share: loopback ports and bounded waits, the
outages a fault test or the chaos soak injects, the steerable pipelines, the fixture sites'
server and test images. It lives here, beside the benchmarks, because `tests` may import
`benchmarks` but `benchmarks` never imports `tests` (the import-linter contracts in
pyproject.toml): `python -m benchmarks` runs without the test suite or its dev extras."""
