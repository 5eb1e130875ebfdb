import pyarrow as pa
import pytest

from paimon_lab import Catalog


@pytest.fixture
def catalog(tmp_path):
    cat = Catalog(str(tmp_path / "warehouse"))
    cat.create_database("db")
    return cat


@pytest.fixture
def sample_schema():
    return pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64()), ("dt", pa.string())])


def make_rows(n, start=0, parts=("a", "b", "c")):
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "name": [f"name-{i}" for i in range(start, start + n)],
        "value": [i * 0.5 for i in range(start, start + n)],
        "dt": [parts[i % len(parts)] for i in range(start, start + n)],
    })


# ---------------------------------------------------------------- interop (pypaimon as a peer)

@pytest.fixture
def warehouse(tmp_path) -> str:
    """A fresh warehouse directory (a string path) shared by both engines in one test."""
    path = tmp_path / "interop-warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture
def lab_catalog(warehouse):
    """paimon_lab's catalog over ``warehouse``, with database ``db``."""
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    return cat


@pytest.fixture
def py_catalog(warehouse):
    """pypaimon's filesystem catalog over the same ``warehouse``, with database ``db``."""
    from pypaimon import CatalogFactory

    cat = CatalogFactory.create({"warehouse": warehouse})
    cat.create_database("db", True)
    return cat
