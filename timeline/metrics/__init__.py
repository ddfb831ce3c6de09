"""Metric samples: the one package that writes and reads them.

Samples are stored as one row per series and hour (``SampleChunk``: packed times and values)
plus per-minute rollups (``SampleRollup``); the series rows carry each series' sample count and
time range. Nothing outside this package touches those tables' storage:

- ``packing``: the binary forms (Postgres epoch, packed arrays, binary COPY tuples); pure.
- ``writer``: chunks written by binary COPY, merged into stored hours, deleted with their series.
- ``rollups``: per-minute rollups, computed with numpy and stored by COPY.
- ``series``: series rows created for a load, their counts, ranges and metadata kept up.
- ``reader``: samples and rollups read back as numpy arrays.

Why chunks and not a row per sample: see packing's docstring.
"""
