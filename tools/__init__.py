"""The benchmarks and test helpers of rtnet-xdp, one module each (see README.md).

Run from the repository root as modules, e.g. ``python3 -m tools.bench_suite --quick``;
they import each other as ``from tools import bench_runs`` and the project as installed
(``pip install -e .``)."""
