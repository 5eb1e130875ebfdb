"""paimon-lab benchmark suite: ``python -m bench`` (see bench/README.md).

Modules: :mod:`bench.data` (the shared data set and its checksum), :mod:`bench.systems` (one
adapter per system under test), :mod:`bench.workloads` (one module per workload, auto-discovered),
:mod:`bench.worker` (a measurement in a fresh process), :mod:`bench.runner` (orchestration),
:mod:`bench.report` (table and targets), :mod:`bench.cli` (command line).
"""
