package sparklance.spark

import org.scalatest.funsuite.AnyFunSuite

/**
 * History names the statement that made each version (`operation_parameters.statement`) beside
 * Lance's operation, and DML records the rows it inserted, updated and deleted
 * (`operation_metrics`), since Spark returns no rows from a DSv2 DELETE / UPDATE / MERGE.
 */
class HistoryStatementsSuite extends AnyFunSuite with LocalSpark {
  private def history(table: String): Seq[(String, String, Map[String, Long])] =
    sql(s"SELECT operation, operation_parameters, operation_metrics FROM $table.history ORDER BY version").collect().toSeq.map { r =>
      (r.getString(0), r.getMap[String, String](1).getOrElse("statement", null), r.getMap[String, Long](2).toMap)
    }

  private def counts(inserted: Long, updated: Long, deleted: Long) =
    Map("num_inserted_rows" -> inserted, "num_updated_rows" -> updated, "num_deleted_rows" -> deleted)

  test("each statement's version names it, and DML its row counts") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.hs")
    val t = "lance.hs.t"
    sql(s"CREATE TABLE $t (id BIGINT, v INT) TBLPROPERTIES ('optimize_write' = 'false', 'zonemap_columns' = '')")
    sql(s"INSERT INTO $t SELECT id, 0 FROM range(10)")
    sql(s"INSERT OVERWRITE $t SELECT id, 0 FROM range(20)")
    sql(s"UPDATE $t SET v = 1 WHERE id < 3")
    sql(s"DELETE FROM $t WHERE id >= 18")
    sql(s"MERGE INTO $t t USING (SELECT id, id % 2 = 0 AS gone FROM range(15, 25)) s ON t.id = s.id " +
      "WHEN MATCHED AND s.gone THEN DELETE WHEN MATCHED THEN UPDATE SET v = 2 WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 3)")
    sql(s"ALTER TABLE $t ADD COLUMNS (w INT, x STRING)")
    sql(s"ALTER TABLE $t RENAME COLUMN x TO y")
    sql(s"ALTER TABLE $t ALTER COLUMN w TYPE BIGINT")
    sql(s"ALTER TABLE $t DROP COLUMN y")
    sql(s"ALTER TABLE $t SET TBLPROPERTIES ('lance.compaction.target_rows_per_fragment' = '100')")
    sql(s"CALL lance.system.compact(table => 'hs.t')")
    sql(s"CALL lance.system.restore(table => 'hs.t', version => 2)")
    sql(s"TRUNCATE TABLE $t")
    val h = history(t)
    assert(h.map(_._2) == Seq("CREATE TABLE", "INSERT", "INSERT OVERWRITE", "UPDATE", "DELETE", "MERGE", "ALTER ADD COLUMNS",
      "ALTER RENAME COLUMN", "ALTER COLUMN TYPE", "ALTER DROP COLUMNS", "SET TBLPROPERTIES", "COMPACT", "COMPACT", "RESTORE",
      "TRUNCATE"), h)
    assert(h.map(_._1) == Seq("Overwrite", "Append", "Overwrite", "Update", "Delete", "Update", "Merge", "Project", "Merge",
      "Project", "UpdateConfig", "ReserveFragments", "Rewrite", "Restore", "Delete"), h)
    // The ids 15..24 of the merge: 15 and 17 updated, 16 deleted (18, 19 were deleted before), 18..24 inserted.
    assert(h.map(_._3).slice(1, 6) == Seq(counts(10, 0, 0), counts(20, 0, 10), counts(0, 3, 0), counts(0, 0, 2),
      counts(7, 2, 1)), h)
    assert(h.head._3 == counts(0, 0, 0) && h(6)._3.isEmpty && h.last._3 == counts(0, 0, 10))
  }
}
