package sparklance.spark

import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

class StableRowIdsSuite extends AnyFunSuite with LocalSpark {
  private def lineage(table: String): Map[Int, (Long, Long, Long)] =
    sql(s"SELECT id, _rowid, _row_created_at_version, _row_last_updated_at_version FROM $table").collect()
      .map(r => r.getInt(0) -> (r.getLong(1), r.getLong(2), r.getLong(3))).toMap

  test("UPDATE and MERGE keep row ids and created-at versions; inserts get fresh ids") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sr")
    sql("CREATE TABLE lance.sr.t (id INT, v STRING) TBLPROPERTIES ('enable_stable_row_ids'='true', 'optimize_write'='false')") // v1
    sql("INSERT INTO lance.sr.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")                                   // v2
    val v2 = lineage("lance.sr.t")
    assert(v2.values.map(_._1).toSet == Set(0L, 1L, 2L))
    assert(v2.values.forall { case (_, c, u) => c == 2 && u == 2 })
    sql("UPDATE lance.sr.t SET v = 'B' WHERE id = 2")                                                   // v3
    val v3 = lineage("lance.sr.t")
    assert(v3(2) == ((v2(2)._1, 2L, 3L)))
    assert(v3(1) == v2(1) && v3(3) == v2(3))
    sql("""MERGE INTO lance.sr.t t USING (SELECT * FROM VALUES (3, 'C'), (4, 'd') AS s(id, v)) s ON t.id = s.id
           WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")                          // v4
    val v4 = lineage("lance.sr.t")
    assert(v4(3) == ((v2(3)._1, 2L, 4L)))
    assert(v4(4)._1 == 3L && v4(4)._2 == 4L && v4(4)._3 == 4L)
    sql("DELETE FROM lance.sr.t WHERE id = 1")                                                          // v5
    assert(lineage("lance.sr.t") == v4 - 1)
    val ds = new Dataset(LocalStorage, warehouse.resolve("sr/t.lance").toString)
    assert(ds.snapshot().stableRowIds && ds.snapshot().manifest.getNextRowId == 4)
    assert(sql("SELECT * FROM lance.sr.t WHERE _rowid = 2").collect().toSeq == Seq(Row(3, "C")))

    // Change data, commit by commit.
    val changes = sql("SELECT id, v, _rowid, _change_type, _commit_version FROM lance.sr.t CHANGES FROM VERSION 3 TO VERSION 5")
      .collect().map(r => (r.getInt(0), r.getString(1), r.getLong(2), r.getString(3), r.getLong(4))).toSet
    val expected = Set(
      (2, "b", 1L, "update_preimage", 3L), (2, "B", 1L, "update_postimage", 3L),
      (3, "c", 2L, "update_preimage", 4L), (3, "C", 2L, "update_postimage", 4L), (4, "d", 3L, "insert", 4L),
      (1, "a", 0L, "delete", 5L))
    assert(changes == expected || changes == expected.map {
      case (i, v, r, "update_preimage", c) => (i, v, r, "delete", c)
      case (i, v, r, "update_postimage", c) => (i, v, r, "insert", c)
      case other => other
    }, changes)
    val history = sql("SELECT version, operation, rows_added, rows_deleted, rows FROM lance.sr.t.history").collect().toSeq
    assert(history.map(_.getLong(0)) == Seq(1L, 2L, 3L, 4L, 5L))
    assert(history.map(r => (r.getLong(2), r.getLong(3), r.getLong(4))) ==
      Seq((0L, 0L, 0L), (3L, 0L, 3L), (1L, 1L, 3L), (2L, 1L, 4L), (0L, 1L, 3L)), history)
  }

  test("change data needs stable row ids; the property cannot be turned on later") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sr")
    sql("CREATE TABLE lance.sr.plain (id INT)")
    sql("INSERT INTO lance.sr.plain VALUES (1)")
    val e = intercept[Exception](sql("SELECT * FROM lance.sr.plain CHANGES FROM VERSION 1 TO VERSION 2").collect())
    assert(e.getMessage.contains("stable row ids"), e.getMessage)
    val alter = intercept[Exception](sql("ALTER TABLE lance.sr.plain SET TBLPROPERTIES ('enable_stable_row_ids'='true')"))
    assert(alter.getMessage.contains("enable_stable_row_ids' of lance.sr.plain: cannot be changed"), alter.getMessage)
    // Without stable ids the row id is the row address, as in Lance.
    assert(sql("SELECT _rowid = _rowaddr FROM lance.sr.plain").head().getBoolean(0))
  }

  test("CTAS with stable row ids, and change data selected by commit time") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sr")
    sql("CREATE TABLE lance.sr.c TBLPROPERTIES ('enable_stable_row_ids'='true') AS SELECT id, CAST(id AS STRING) AS v FROM range(5)") // v1
    assert(sql("SELECT count(DISTINCT _rowid), min(_rowid), max(_rowid), min(_row_created_at_version) FROM lance.sr.c").head() ==
      Row(5L, 0L, 4L, 1L))
    val t1 = sql("SELECT timestamp FROM lance.sr.c.history WHERE version = 1").head().getTimestamp(0)
    Thread.sleep(5)
    sql("UPDATE lance.sr.c SET v = 'x' WHERE id = 4")                                            // v2
    val t2 = sql("SELECT timestamp FROM lance.sr.c.history WHERE version = 2").head().getTimestamp(0)
    sql("DELETE FROM lance.sr.c WHERE id < 2")                                                   // v3
    def kinds(q: String) = sql(q).collect().map(r => (r.getLong(0), r.getString(1), r.getLong(2))).toSet
    assert(kinds(s"SELECT id, _change_type, _commit_version FROM lance.sr.c CHANGES FROM TIMESTAMP '$t1' EXCLUSIVE TO TIMESTAMP '$t2'") ==
      Set((4L, "delete", 2L), (4L, "insert", 2L)))
    assert(kinds("SELECT id, _change_type, _commit_version FROM lance.sr.c CHANGES FROM VERSION 1 TO VERSION 1") ==
      (0L until 5L).map(i => (i, "insert", 1L)).toSet)
    assert(kinds("SELECT id, _change_type, _commit_version FROM lance.sr.c CHANGES FROM VERSION 3 EXCLUSIVE").isEmpty)
    // A commit that changes nothing is never made, so versions and changes stay in step.
    sql("UPDATE lance.sr.c SET v = 'y' WHERE id = 42")
    assert(sql("SELECT max(version) FROM lance.sr.c.history").head().getLong(0) == 3)
    // REPLACE keeps the id high-water mark: ids are never reused.
    sql("CREATE OR REPLACE TABLE lance.sr.c TBLPROPERTIES ('enable_stable_row_ids'='true') AS SELECT 9L AS id, 'z' AS v")
    assert(sql("SELECT _rowid FROM lance.sr.c").head().getLong(0) == 5L)
  }
}
