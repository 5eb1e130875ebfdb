"""A PySpark worker daemon that imports paimon_lab before forking workers.

PySpark forks every Python worker (executor tasks, and the planning workers of Python data
sources) from one daemon process. Set ``spark.python.daemon.module`` to
``paimon_lab.spark.daemon`` and the workers start with pyarrow, pandas and paimon_lab already
imported instead of importing them again in each process (seconds per worker on a busy machine).
"""

import pyarrow  # noqa: F401
import pyarrow.compute  # noqa: F401
import pyarrow.parquet  # noqa: F401
import pandas  # noqa: F401

import paimon_lab.spark.datasource  # noqa: F401
from pyspark import daemon

if __name__ == "__main__":
    daemon.manager()
