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
