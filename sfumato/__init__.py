"""The composition root: the `sfumato` command and the processes it assembles (embedded mode, a
gateway, a worker). The only package that imports both `gateway` and `workers`."""
