"""Many programs at once: ``bench`` (``solar bench``: a suite of benchmark-style model files),
``sweep`` (``solar sweep``: models x devices x policies x sizes x layouts), ``definition``
(kernel-benchmark definitions and workloads, read without torch) and ``definition_cli``
(``solar analyze DEFINITION``), docs/benchmarks.md; ``_child`` runs their analyses in child
processes."""
