"""Issue 32 item 3: sparklance's errors arrive in a classic PySpark session as PySpark's own classes,
with a condition and SQLSTATE (the Connect side is in test_spark_connect.py); see error_cases.py."""
import lance

from error_cases import EXPECTED, run


def test_errors_have_pyspark_classes_conditions_and_sqlstates(spark, warehouse):
    seen = run(spark, warehouse, "classic")
    assert seen == EXPECTED
    # The conflicting UPDATE wrote nothing: the table holds the two rows and pylance's one.
    rows = lance.dataset(str(warehouse / "db" / "classic_errors.lance")).to_table().sort_by([("id", "ascending"), ("name", "ascending")]).to_pylist()
    assert rows == [{"id": 1, "name": "a"}, {"id": 1, "name": "racer"}, {"id": 2, "name": "b"}]
    # The failed writes left their tables empty, as pylance reads them, at their first version.
    for name in ("classic_vectors", "classic_required"):
        dataset = lance.dataset(str(warehouse / "db" / f"{name}.lance"))
        assert (dataset.version, dataset.count_rows()) == (1, 0)
