"""Sample incidents: deterministic bundles for demos, tests and benchmarks."""

from ingest.samples.dsv4_wedge import EXPECTED, write_bundle

__all__ = ["EXPECTED", "write_bundle"]
