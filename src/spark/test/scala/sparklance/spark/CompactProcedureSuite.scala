package sparklance.spark

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException
import org.apache.spark.sql.connector.catalog.Identifier
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.InvalidOptionException
import sparklance.format.table.Dataset

/** `CALL lance.system.compact(...)`: a distributed compaction, its one-row report, and its errors. */
class CompactProcedureSuite extends AnyFunSuite with LocalSpark {
  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("cp"), table)))
  }

  private def smallFragments(table: String, stable: Boolean): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cp")
    // No zone maps: their folds after a compaction would add versions these tests count.
    sql(s"CREATE TABLE lance.cp.$table (id BIGINT, s STRING) TBLPROPERTIES ('optimize_write' = 'false', " +
      s"'enable_stable_row_ids' = '$stable', 'zonemap_columns' = '')")
    for (i <- 0 until 6) sql(s"INSERT INTO lance.cp.$table SELECT /*+ COALESCE(1) */ id, CAST(id AS STRING) FROM range(${i * 100}, ${i * 100 + 100})")
    sql(s"DELETE FROM lance.cp.$table WHERE id % 10 = 0")
  }

  test("compact rewrites small fragments in a Spark job; rows, row ids and versions stay; CHANGES shows nothing") {
    smallFragments("t", stable = true)
    val before = sql("SELECT id, s, _rowid, _row_created_at_version, _row_last_updated_at_version FROM lance.cp.t").collect().toSet
    val versionBefore = dataset("t").latestVersion
    val row = sql("CALL lance.system.compact(table => 'cp.t', target_rows_per_fragment => 250)").collect().head
    assert(row.getAs[Long]("read_version") == versionBefore && row.getAs[Long]("version") == versionBefore + 2)
    assert(row.getAs[Long]("fragments_removed") == 6 && row.getAs[Long]("fragments_added") == 2)
    assert(row.getAs[Long]("rows_rewritten") == 540 && row.getSeq[String](row.fieldIndex("left_alone")).isEmpty)
    assert(dataset("t").snapshot().fragments.map(_.getPhysicalRows) == Seq(270L, 270L))
    assert(sql("SELECT id, s, _rowid, _row_created_at_version, _row_last_updated_at_version FROM lance.cp.t").collect().toSet == before)
    assert(sql(s"SELECT * FROM lance.cp.t CHANGES FROM VERSION ${versionBefore + 1} TO VERSION ${versionBefore + 2}").count() == 0)
    assert(spark.table("lance.cp.t.history").collect().map(_.getAs[String]("operation")).takeRight(2).toSeq ==
      Seq("ReserveFragments", "Rewrite"))
    // Nothing left to do: no new version.
    val again = sql("CALL lance.system.compact('lance.cp.t', 250)").collect().head
    assert(again.isNullAt(again.fieldIndex("version")) && dataset("t").latestVersion == versionBefore + 2)
  }

  test("where limits compaction to fragments matching a predicate on _fragid; table config supplies options") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cp")
    sql("CREATE TABLE lance.cp.w (id BIGINT) TBLPROPERTIES ('optimize_write' = 'false', " +
      "'lance.compaction.target_rows_per_fragment' = '1000', 'zonemap_columns' = '')")
    for (i <- 0 until 6) sql(s"INSERT INTO lance.cp.w SELECT /*+ COALESCE(1) */ id FROM range(${i * 10}, ${i * 10 + 10})")
    val row = sql("CALL lance.system.compact(table => 'cp.w', `where` => '_fragid < 3')").collect().head
    assert(row.getAs[Long]("fragments_removed") == 3)
    assert(dataset("w").snapshot().fragments.map(_.getId) == Seq(3L, 4L, 5L, 6L))
    assert(sql("SELECT count(*), sum(id) FROM lance.cp.w").collect().head.toSeq == Seq(60L, (0L until 60L).sum))
  }

  test("errors are typed, name what is wrong, and write nothing") {
    smallFragments("e", stable = false)
    val version = dataset("e").latestVersion
    intercept[NoSuchTableException](sql("CALL lance.system.compact(table => 'cp.missing')").collect())
    val unknown = intercept[AnalysisException](sql("CALL lance.system.compact(table => 'cp.e', target_rows => 5)"))
    assert(unknown.getMessage.contains("target_rows"))
    val zero = intercept[AnalysisException](sql("CALL lance.system.compact(table => 'cp.e', max_source_fragments => 0)").collect())
    assert(zero.getCondition == "LANCE_INVALID_OPTION" && zero.getCause.isInstanceOf[InvalidOptionException])
    assert(zero.getMessage.contains("max_source_fragments"))
    val column = intercept[AnalysisException](sql("CALL lance.system.compact(table => 'cp.e', `where` => 'id > 3')").collect())
    assert(column.getMessage.contains("id"))
    val noProcedure = intercept[Exception](sql("CALL lance.system.optimize(table => 'cp.e')").collect())
    assert(Iterator.iterate[Throwable](noProcedure)(_.getCause).takeWhile(_ != null).exists(_.getMessage.contains("lance.system.compact")))
    assert(dataset("e").latestVersion == version)
  }
}
