from paimon_lab import Catalog
from paimon_lab.walkthrough import main


def test_walkthrough_runs_and_leaves_expected_table(tmp_path, capsys):
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "snapshot 3: OVERWRITE total=5 delta=-1" in out
    t = Catalog(str(tmp_path)).get_table("demo.orders")
    assert t.to_arrow(tag="before-fix").num_rows == 6
    assert sorted(t.to_arrow()["order_id"].to_pylist()) == [1, 3, 4, 5, 6]
