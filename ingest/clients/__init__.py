"""I/O clients with timeouts: git repositories (``git``), the Prometheus HTTP API."""
