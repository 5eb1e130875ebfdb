"""What a new user runs first: the README's API tour and a SQL session, on whatever versions this
environment has, with deprecation and future warnings turned into errors (paimon-lab must not lean
on APIs its dependencies are removing)."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRICT = ["-W", "error::DeprecationWarning", "-W", "error::FutureWarning", "-W", "error::PendingDeprecationWarning"]

SQL_TOUR = """
import tempfile, paimon_lab
wh = tempfile.mkdtemp()
s = paimon_lab.sql.Session()
s.run(f"CREATE CATALOG c WITH ('type'='paimon', 'warehouse'='file:{wh}'); USE CATALOG c")
s.run("CREATE DATABASE db; USE db")
s.run("CREATE TABLE orders (id BIGINT, dt STRING, amount DECIMAL(10, 2), PRIMARY KEY (dt, id) NOT ENFORCED) "
      "PARTITIONED BY (dt) WITH ('bucket'='2', 'changelog-producer'='lookup', 'deletion-vectors.enabled'='true')")
s.run("INSERT INTO orders VALUES (1, 'a', 1.50), (2, 'a', 2.25), (3, 'b', 9.99)")
s.run("UPDATE orders SET amount = 0 WHERE id = 2")
s.run("DELETE FROM orders WHERE id = 3")
rows = s.run("SELECT dt, count(*) AS n, sum(amount) AS total FROM orders GROUP BY dt ORDER BY dt").to_pylist()
assert [(r["dt"], r["n"], str(r["total"])) for r in rows] == [("a", 2, "1.50")], rows
s.run("CALL sys.compact('db.orders')")
assert s.run("SELECT count(*) AS n FROM `orders$snapshots`").to_pylist()[0]["n"] >= 4
print(s.run("SELECT * FROM orders ORDER BY id").to_pandas())
"""


def _run(args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, *STRICT, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_readme_api_tour_runs_without_deprecations():
    out = _run([os.path.join(ROOT, "scripts", "readme_tour.py")])
    assert out.returncode == 0, out.stderr[-3000:]
    assert "README API tour: 3 blocks ran" in out.stdout


def test_sql_session_runs_without_deprecations():
    out = _run(["-c", SQL_TOUR])
    assert out.returncode == 0, out.stderr[-3000:]
