package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.Row
import org.apache.spark.sql.connector.catalog.Identifier
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.Pylance
import sparklance.format.commit.Transactions
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.Dataset

/**
 * UPDATE and MERGE choose per fragment between rewriting the updated rows whole and rewriting
 * the assigned columns of all the fragment's rows in place (REWRITE_COLUMNS, as pylance's
 * update_columns), by estimated bytes written; the choice can be forced; pylance reads the result.
 */
class InPlaceUpdateSuite extends AnyFunSuite with LocalSpark {
  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("inplace"), table)))
  }
  private def txn(table: String): Transaction = Transactions.committed(dataset(table), dataset(table).latestVersion).get
  private def rows(q: String) = sql(q).collect().toSeq
  private def addresses(table: String) = rows(s"SELECT id, _rowaddr FROM lance.inplace.$table ORDER BY id")

  /** 3 fragments of 100 rows: a small `n`, a wide `payload`. */
  private def newTable(name: String, props: String = ""): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.inplace")
    sql(s"CREATE TABLE lance.inplace.$name (id BIGINT NOT NULL, n INT, payload STRING) " +
      s"TBLPROPERTIES ('max_rows_per_file' = '100', 'optimize_write' = 'false'$props)")
    sql(s"INSERT INTO lance.inplace.$name SELECT /*+ COALESCE(1) */ id, CAST(id AS INT), repeat(CAST(id AS STRING), 60) FROM range(300)")
  }

  private def pylanceSum(table: String): String = {
    val script = Files.createTempFile("inplace", ".py")
    Files.writeString(script, "import sys, lance\nds = lance.dataset(sys.argv[1])\n" +
      "t = ds.to_table(columns=['id', 'n'])\nprint(ds.count_rows(), sum(t.column('n').to_pylist()), len(ds.get_fragments()))\n")
    Pylance.run(script, dataset(table).path).trim.linesIterator.toSeq.last
  }

  test("an UPDATE of most rows of a fragment rewrites only the assigned column there; of few rows, whole rows") {
    newTable("auto")
    val before = addresses("auto")
    val nField = dataset("auto").snapshot().schema.field("n").get.id
    // Fragment 0 entirely, fragment 2 one row: in place for 0, whole rows for 2, fragment 1 untouched.
    sql("UPDATE lance.inplace.auto SET n = n + 1000 WHERE id < 100 OR id = 250")
    val update = txn("auto").getUpdate
    assert(update.getUpdateMode == Transaction.UpdateMode.REWRITE_COLUMNS && update.getFieldsModifiedList.asScala.toSeq == Seq(nField))
    assert(update.getUpdatedFragmentOffsetBitmapsMap.keySet.asScala == Set(0L), "fragment 0 in place")
    assert(update.getNewFragmentsCount == 1 && update.getNewFragments(0).getPhysicalRows == 1, "the row of fragment 2 moved")
    val fragment0 = dataset("auto").snapshot().fragments.find(_.getId == 0).get
    assert(fragment0.getFilesList.asScala.map(_.getFieldsList.asScala.map(_.intValue).toSeq).toSeq ==
      Seq(Seq(0, -2, 2), Seq(nField)), "the old file lists n as -2, the new file holds only n")
    val after = addresses("auto")
    assert(after.take(100) == before.take(100), "rows updated in place keep their addresses")
    assert(after(250) != before(250))
    assert(rows("SELECT sum(n) FROM lance.inplace.auto").head.getLong(0) == (0 until 300).sum + 101 * 1000)
    assert(pylanceSum("auto") == s"300 ${(0 until 300).sum + 101 * 1000} 4")
    val history = rows("SELECT operation_parameters FROM lance.inplace.auto.history ORDER BY version DESC LIMIT 1").head.getMap[String, String](0)
    assert(history.get("rows_updated_in_place").contains("100") && history.get("fragments_updated_in_place").contains("1") &&
      history.get("update_mode").contains("rewrite_columns"), history)
  }

  test("the choice can be forced: by the table property, or for the next statements by the session setting") {
    newTable("forced", ", 'rewrite_mode' = 'columns'")
    sql("UPDATE lance.inplace.forced SET n = -1 WHERE id = 7")
    assert(txn("forced").getUpdate.getUpdatedFragmentOffsetBitmapsMap.asScala.view.mapValues(b =>
      sparklance.format.deletion.PortableBitmaps.fromBytes(b.toByteArray).toArray.toSeq).toMap == Map(0L -> Seq(7)))
    spark.conf.set("spark.sparklance.rewrite_mode", "rows")
    try {
      sql("UPDATE lance.inplace.forced SET n = -2")
      assert(txn("forced").getUpdate.getUpdateMode == Transaction.UpdateMode.REWRITE_ROWS)
    } finally spark.conf.unset("spark.sparklance.rewrite_mode")
    assert(rows("SELECT DISTINCT n FROM lance.inplace.forced") == Seq(Row(-2)))
    val e = intercept[Exception](sql("ALTER TABLE lance.inplace.forced SET TBLPROPERTIES ('rewrite_mode' = 'cells')"))
    assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists(_.getMessage.contains("auto, rows, columns")), e)
  }

  test("on stable row ids, rows updated in place keep their ids and only they get the commit's version; CHANGES shows them") {
    newTable("lineage", ", 'enable_stable_row_ids' = 'true'")
    sql("DELETE FROM lance.inplace.lineage WHERE id IN (3, 4)")
    val ids = rows("SELECT id, _rowid, _row_created_at_version FROM lance.inplace.lineage ORDER BY id")
    sql("UPDATE lance.inplace.lineage SET n = 0 WHERE id < 90")
    val v = dataset("lineage").latestVersion
    assert(txn("lineage").getUpdate.getUpdateMode == Transaction.UpdateMode.REWRITE_COLUMNS)
    assert(rows("SELECT id, _rowid, _row_created_at_version FROM lance.inplace.lineage ORDER BY id") == ids)
    assert(rows("SELECT id FROM lance.inplace.lineage WHERE _row_last_updated_at_version = " + v).map(_.getLong(0)) ==
      (0L until 90L).filterNot(Set(3L, 4L)))
    val changes = rows(s"SELECT id, n, _change_type FROM lance.inplace.lineage CHANGES FROM VERSION $v TO VERSION $v " +
      "WITH (computeUpdates = 'true') ORDER BY id, _change_type")
    assert(changes.size == 176 && changes.take(2) == Seq(Row(0L, 0, "update_postimage"), Row(0L, 0, "update_preimage")) &&
      changes(2) == Row(1L, 0, "update_postimage") && changes(3) == Row(1L, 1, "update_preimage"))
    assert(rows("SELECT count(*), sum(n) FROM lance.inplace.lineage") == Seq(Row(298L, (90 until 300).sum.toLong)))
  }

  test("MERGE updating most rows of a fragment in place, with a delete clause; a MERGE that inserts rewrites rows") {
    newTable("merge")
    spark.range(0, 100).selectExpr("id", "CAST(id * 2 AS INT) AS n2").createOrReplaceTempView("merge_src")
    sql("MERGE INTO lance.inplace.merge t USING merge_src s ON t.id = s.id " +
      "WHEN MATCHED AND s.id = 50 THEN DELETE WHEN MATCHED THEN UPDATE SET n = s.n2")
    val update = txn("merge").getUpdate
    assert(update.getUpdateMode == Transaction.UpdateMode.REWRITE_COLUMNS && update.getNewFragmentsCount == 0)
    assert(dataset("merge").snapshot().fragments.head.hasDeletionFile, "the deleted row is tombstoned in the same fragment")
    assert(rows("SELECT count(*), sum(n) FROM lance.inplace.merge") == Seq(Row(299L, ((0 until 100).filter(_ != 50).map(_ * 2).sum +
      (100 until 300).sum).toLong)))
    sql("MERGE INTO lance.inplace.merge t USING (SELECT id, 7 AS n FROM range(100, 400)) s ON t.id = s.id " +
      "WHEN MATCHED THEN UPDATE SET n = s.n WHEN NOT MATCHED THEN INSERT (id, n, payload) VALUES (s.id, s.n, 'new')")
    assert(txn("merge").getUpdate.getUpdateMode == Transaction.UpdateMode.REWRITE_ROWS, "inserts keep rows mode in auto")
    assert(pylanceSum("merge") == s"399 ${(0 until 100).filter(_ != 50).map(_ * 2).sum + 300 * 7} " +
      s"${dataset("merge").snapshot().fragments.size}")
  }

  test("a struct column is rewritten in place on file format 2.2, and moves rows on 2.0, where Lance cannot") {
    for (version <- Seq("2.2", "2.0")) {
      val name = s"nested_${version.replace('.', '_')}"
      sql("CREATE NAMESPACE IF NOT EXISTS lance.inplace")
      sql(s"CREATE TABLE lance.inplace.$name (id BIGINT NOT NULL, st STRUCT<x: INT, y: STRING>, payload STRING) " +
        s"TBLPROPERTIES ('max_rows_per_file' = '50', 'optimize_write' = 'false', 'data_storage_version' = '$version')")
      sql(s"INSERT INTO lance.inplace.$name SELECT /*+ COALESCE(1) */ id, named_struct('x', CAST(id AS INT), 'y', 'a'), " +
        s"repeat('p', 300) FROM range(100)")
      sql(s"UPDATE lance.inplace.$name SET st.x = st.x + 1 WHERE id < 50")
      val mode = txn(name).getUpdate.getUpdateMode
      assert(mode == (if (version == "2.2") Transaction.UpdateMode.REWRITE_COLUMNS else Transaction.UpdateMode.REWRITE_ROWS), version)
      assert(rows(s"SELECT sum(st.x), count(DISTINCT st.y) FROM lance.inplace.$name") == Seq(Row((0 until 100).sum + 50L, 1L)))
      val script = Files.createTempFile("inplace", ".py")
      Files.writeString(script, "import sys, lance\nt = lance.dataset(sys.argv[1]).to_table()\n" +
        "print(sum(r['x'] for r in t.column('st').to_pylist()), t.num_rows)\n")
      assert(Pylance.run(script, dataset(name).path).trim.linesIterator.toSeq.last == s"${(0 until 100).sum + 50} 100")
    }
  }
}
