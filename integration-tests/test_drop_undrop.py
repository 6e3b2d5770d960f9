"""DROP TABLE keeps a table recoverable on every store: undrop_table brings it back from the local
trash as from an object store's in-place drop (see test_s3.py), and the trash is emptied after its
retention (DROP TABLE, empty_trash). pylance opens what comes back."""
import os

import lance
import pytest

from conftest import table_path


def _trash(warehouse):
    root = warehouse / ".trash" / "db"
    return sorted(os.listdir(root)) if root.exists() else []


def test_undrop_from_the_local_trash_and_empty_it(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    name = t.split(".")[-1]
    spark.sql(f"CREATE TABLE {t} AS SELECT id FROM range(5)")
    spark.sql(f"DROP TABLE {t}")
    assert not os.path.exists(path) and any(e.startswith(name + "-") for e in _trash(warehouse))
    assert spark.sql(f"CALL lance.system.undrop_table(table => 'db.{name}')").first().version == 1
    assert spark.table(t).count() == 5 and lance.dataset(path).count_rows() == 5

    # Dropped twice: the newest copy comes back; a new table of the name stands in the way.
    spark.sql(f"INSERT INTO {t} VALUES (5)")
    spark.sql(f"DROP TABLE {t}")
    spark.sql(f"CREATE TABLE {t} (id BIGINT)")
    with pytest.raises(Exception, match="TABLE_ALREADY_EXISTS|already exists"):
        spark.sql(f"CALL lance.system.undrop_table(table => 'db.{name}')")
    spark.sql(f"DROP TABLE {t}")
    assert sum(e.startswith(name + "-") for e in _trash(warehouse)) == 2
    assert spark.sql(f"CALL lance.system.undrop_table(table => 'db.{name}')").first().version == 1
    assert spark.table(t).count() == 0

    # Young copies stay (default retention 7 days); older_than empties the trash of what is older.
    assert spark.sql("CALL lance.system.empty_trash()").first().deleted == []
    deleted = spark.sql("CALL lance.system.empty_trash(older_than => '0 seconds')").first().deleted
    assert len(deleted) >= 1 and not any(e.startswith(name + "-") for e in _trash(warehouse))
    assert spark.table(t).count() == 0  # the live table is no part of the trash
    with pytest.raises(Exception, match="not a dropped table"):
        spark.sql(f"CALL lance.system.undrop_table(table => 'db.{name}_never')")
