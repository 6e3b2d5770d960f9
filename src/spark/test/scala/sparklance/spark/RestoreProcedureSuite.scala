package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.connector.catalog.Identifier
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.Pylance
import sparklance.format.table.Dataset

/** `CALL lance.system.restore(...)`: pylance's Restore, read back by us and by pylance. */
class RestoreProcedureSuite extends AnyFunSuite with LocalSpark {
  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("rs"), table)))
  }
  private def ids(q: String) = sql(q).collect().map(_.getLong(0)).toSeq.sorted

  test("restore makes a version newest again: rows, schema and config, with ids never reused") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.rs")
    sql("CREATE TABLE lance.rs.t (id BIGINT, v STRING) TBLPROPERTIES ('enable_stable_row_ids' = 'true')")   // v1
    sql("INSERT INTO lance.rs.t SELECT id, 'a' FROM range(0, 10)")                                        // v2
    sql("DELETE FROM lance.rs.t WHERE id < 5")                                                           // v3
    sql("INSERT INTO lance.rs.t SELECT id, 'b' FROM range(100, 103)")                                     // v4
    val before = dataset("t").snapshot()
    val row = sql("CALL lance.system.restore(table => 'rs.t', version => 2)").collect().head
    assert(row.getLong(0) == 2 && row.getLong(1) == 5)
    assert(ids("SELECT id FROM lance.rs.t") == (0L until 10L))
    assert(sql("SELECT _rowid FROM lance.rs.t").collect().map(_.getLong(0)).sorted.toSeq == (0L until 10L))
    val now = dataset("t").snapshot()
    assert(now.manifest.getMaxFragmentId == before.manifest.getMaxFragmentId && now.manifest.getNextRowId == before.manifest.getNextRowId)
    assert(spark.table("lance.rs.t.history").collect().last.getAs[String]("operation") == "Restore")
    // New rows after a restore get fresh ids, never those of rows the restore dropped.
    sql("INSERT INTO lance.rs.t SELECT 200L, 'c'")
    assert(sql("SELECT _rowid FROM lance.rs.t WHERE id = 200").collect().head.getLong(0) == before.manifest.getNextRowId)
    val script = Files.createTempFile("restore", ".py")
    Files.writeString(script,
      """import sys, lance
        |ds = lance.dataset(sys.argv[1])
        |t = ds.to_table(columns=["id"], with_row_id=True)
        |print(ds.version, sorted(t.column("id").to_pylist()), ds.checkout_version(5).count_rows())
        |""".stripMargin)
    assert(Pylance.run(script, dataset("t").path).trim.linesIterator.toSeq.last ==
      s"6 ${(0 until 10).mkString("[", ", ", "")}, 200] 10")
  }

  test("restore by timestamp, and its errors: missing version, both or neither argument; nothing written") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.rs")
    sql("CREATE TABLE lance.rs.e (id BIGINT)")
    sql("INSERT INTO lance.rs.e VALUES (1)")
    val at = dataset("e").snapshot().commitMicros
    Thread.sleep(5)
    sql("INSERT INTO lance.rs.e VALUES (2)")
    val version = dataset("e").latestVersion
    val missing = intercept[org.apache.spark.sql.AnalysisException](sql("CALL lance.system.restore(table => 'rs.e', version => 42)").collect())
    assert(missing.getCondition == "LANCE_VERSION_NOT_FOUND" && missing.getCause.isInstanceOf[sparklance.format.VersionNotFoundException])
    assert(intercept[IllegalArgumentException](sql("CALL lance.system.restore(table => 'rs.e')").collect())
      .asInstanceOf[org.apache.spark.SparkThrowable].getCondition == "LANCE_INVALID_ARGUMENT")
    intercept[IllegalArgumentException](sql(s"CALL lance.system.restore(table => 'rs.e', version => 1, timestamp => TIMESTAMP '2020-01-01')").collect())
    assert(dataset("e").latestVersion == version)
    val ts = java.time.Instant.EPOCH.plusNanos(at * 1000)
    sql(s"CALL lance.system.restore(table => 'rs.e', timestamp => TIMESTAMP '${java.sql.Timestamp.from(ts)}')").collect()
    assert(ids("SELECT id FROM lance.rs.e") == Seq(1L))
  }
}
