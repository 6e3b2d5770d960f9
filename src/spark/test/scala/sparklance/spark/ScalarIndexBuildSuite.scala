package sparklance.spark

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.connector.catalog.index.SupportsIndex
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.scalatest.funsuite.AnyFunSuite

/**
 * BTREE, BITMAP and LABEL_LIST indices built by CREATE INDEX ... USING and the create_index
 * procedure: listed, used by sparklance's data skipping (fewer splits read, the same rows as a scan
 * without skipping), and still right after DELETE, UPDATE, MERGE, appends and compaction. pylance's
 * use of them is checked by integration-tests/test_scalar_index_build.py.
 */
class ScalarIndexBuildSuite extends AnyFunSuite with LocalSpark {
  private val filters = Seq("k = 1234", "k < 40", "k BETWEEN 100 AND 120", "k IN (5, 77, 2999, 4000)", "k IS NULL",
    "s = 'c3'", "s IN ('c0', 'c5')", "s IS NULL", "s = 'c9'", "d = DATE'2024-01-05'", "d < DATE'2024-01-03'", "d IS NULL")

  private def create(name: String): String = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sib")
    val t = s"lance.sib.$name"
    sql(s"CREATE TABLE $t (k BIGINT, s STRING, d DATE, tags ARRAY<STRING>) TBLPROPERTIES " +
      "('max_rows_per_file' = '750', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    append(t, 0, 3000)
    t
  }

  private def append(t: String, from: Long, to: Long): Unit =
    sql(s"""SELECT /*+ COALESCE(1) */ CASE WHEN id % 97 = 0 THEN NULL ELSE id END AS k,
         |CASE WHEN id % 11 = 0 THEN NULL ELSE concat('c', CAST(id % 8 AS STRING)) END AS s,
         |CASE WHEN id % 13 = 0 THEN NULL ELSE date_add(DATE'2024-01-01', CAST(id % 10 AS INT)) END AS d,
         |CASE WHEN id % 17 = 0 THEN NULL ELSE array(concat('t', CAST(id % 5 AS STRING))) END AS tags
         |FROM range($from, $to)""".stripMargin).writeTo(t).append()

  private def indices(name: String): Seq[(String, String, Seq[String])] =
    spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog].loadTable(Identifier.of(Array("sib"), name))
      .asInstanceOf[SupportsIndex].listIndexes().toSeq.map(i => (i.indexName(), i.indexType(), i.columns().toSeq.map(_.fieldNames().mkString("."))))
      .sortBy(_._1)

  private def splitsRead(df: DataFrame): Long = {
    df.collect()
    df.queryExecution.executedPlan.collect { case s: BatchScanExec => s.metrics("splitsRead").value }.sum
  }

  private def rows(t: String, where: String, skipping: Boolean): Seq[String] =
    spark.read.option("data_skipping", skipping.toString).table(t).where(where).collect().map(_.toString).toSeq.sorted

  /** Every filter returns with skipping what a scan without it returns. */
  private def assertRight(t: String): Unit = filters.foreach { where =>
    assert(rows(t, where, skipping = true) == rows(t, where, skipping = false), where)
  }

  test("CREATE INDEX ... USING btree / bitmap / label_list builds indices data skipping uses") {
    val t = create("t")
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE k = 1234")) == 4)
    sql(s"CREATE INDEX k_bt ON $t USING btree (k) OPTIONS (zone_size = 100)")
    sql(s"CREATE INDEX s_bm ON $t USING bitmap (s)")
    sql(s"CREATE INDEX d_bt ON $t USING BTREE (d)")
    sql(s"CREATE INDEX tags_ll ON $t USING label_list (tags)")
    assert(indices("t") == Seq(("d_bt", "BTREE", Seq("d")), ("k_bt", "BTREE", Seq("k")), ("s_bm", "BITMAP", Seq("s")),
      ("tags_ll", "LABEL_LIST", Seq("tags"))))
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE k = 1234")) == 1)
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE k IN (5, 2999)")) == 2)
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE s = 'c9'")) == 0)
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE s = 'c0' AND k < 700")) == 1)
    assert(sql(s"SELECT count(*) FROM $t WHERE k IS NULL").head().getLong(0) == 31)
    assertRight(t)
  }

  test("array_contains skips by a LABEL_LIST index, in queries and in DELETE / UPDATE, with the rows of a full scan") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sib")
    val t = "lance.sib.labels"
    sql(s"CREATE TABLE $t (k BIGINT, tags ARRAY<STRING>, n ARRAY<INT>) TBLPROPERTIES " +
      "('max_rows_per_file' = '500', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    // Fragment f holds the tag 'f<f>' in every row; 'odd' and 'even' are everywhere; some lists are
    // NULL, empty, or hold a NULL element.
    sql("""SELECT /*+ COALESCE(1) */ id AS k,
          |CASE WHEN id % 23 = 0 THEN NULL WHEN id % 29 = 0 THEN array() WHEN id % 31 = 0 THEN array(NULL, 'odd')
          |  ELSE array(concat('f', CAST(id DIV 500 AS STRING)), IF(id % 2 = 0, 'even', 'odd')) END AS tags,
          |IF(id % 7 = 0, NULL, array(CAST(id % 10 AS INT), CAST(id DIV 500 AS INT) + 100)) AS n
          |FROM range(0, 2000)""".stripMargin).writeTo(t).append()
    val where = Seq("array_contains(tags, 'f2')", "array_contains(tags, 'nowhere')", "array_contains(tags, 'even')",
      "NOT array_contains(tags, 'f1')", "array_contains(tags, 'f1') OR k < 10", "array_contains(tags, 'f3') AND k % 3 = 0",
      "array_contains(tags, 'f0') AND array_contains(tags, 'even')", "array_contains(n, 102)", "array_contains(n, 7)")
    def right(): Unit = where.foreach(w => assert(rows(t, w, skipping = true) == rows(t, w, skipping = false), w))
    right()
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE array_contains(tags, 'f2')")) == 4)
    sql(s"CREATE INDEX tags_ll ON $t USING label_list (tags)")
    sql(s"CREATE INDEX n_ll ON $t USING label_list (n)")
    right()
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE array_contains(tags, 'f2')")) == 1)
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE array_contains(tags, 'nowhere')")) == 0)
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE array_contains(n, 103) AND array_contains(tags, 'odd')")) == 1)
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE array_contains(tags, 'f1') OR array_contains(tags, 'f3')")) == 2)
    // Spark evaluates array_contains itself on what the scan reads: the plan keeps it.
    assert(sql(s"SELECT k FROM $t WHERE array_contains(tags, 'f2')").queryExecution.executedPlan.toString.contains("array_contains"))
    val kept = rows(t, "array_contains(tags, 'f2') AND k % 2 = 1", skipping = false)
    val moved = rows(t, "array_contains(tags, 'f3') AND k % 5 = 0", skipping = false).size
    sql(s"DELETE FROM $t WHERE array_contains(tags, 'f2') AND k % 2 = 0")
    sql(s"UPDATE $t SET tags = array('moved') WHERE array_contains(tags, 'f3') AND k % 5 = 0")
    right()
    assert(rows(t, "array_contains(tags, 'f2')", skipping = true) == kept)
    assert(moved > 50 && rows(t, "array_contains(tags, 'moved')", skipping = true).size == moved)
  }

  test("the create_index procedure builds them too, replacing an index of the same name and kind") {
    val t = create("p")
    val built = sql("CALL lance.system.create_index(table => 'sib.p', column => 's', index_type => 'BITMAP', name => 's_ix')").head()
    assert((built.getString(0), built.getString(1), built.getLong(2), built.getLong(4)) == ("s_ix", "BITMAP", 4L, 1L))
    sql("CALL lance.system.create_index(table => 'sib.p', column => 's', index_type => 'BITMAP', name => 's_ix')")
    assert(indices("p") == Seq(("s_ix", "BITMAP", Seq("s"))))
    val e = intercept[Exception](sql("CALL lance.system.create_index(table => 'sib.p', column => 's', index_type => 'BTREE', name => 's_ix')"))
    assert(e.getMessage.contains("is not a BTREE index of 's'"), e)
    assertRight(t)
  }

  test("create_index without a name takes pylance's <column>_idx, or <column>_<kind>_idx where the zone map has it") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sib")
    sql("CREATE TABLE lance.sib.named (k BIGINT, s STRING)") // zone maps k_idx and s_idx, as every catalog table
    sql("INSERT INTO lance.sib.named VALUES (1, 'a'), (2, 'b')")
    def build(table: String, column: String, kind: String) =
      sql(s"CALL lance.system.create_index(table => 'sib.$table', column => '$column', index_type => '$kind')").head().getString(0)
    assert(build("named", "k", "BTREE") == "k_btree_idx")
    assert(build("named", "k", "BTREE") == "k_btree_idx") // replaced, not a second one
    assert(build("named", "s", "BITMAP") == "s_bitmap_idx")
    assert(indices("named") == Seq(("k_btree_idx", "BTREE", Seq("k")), ("k_idx", "ZONEMAP", Seq("k")),
      ("s_bitmap_idx", "BITMAP", Seq("s")), ("s_idx", "ZONEMAP", Seq("s"))))
    create("bare") // without zone maps
    assert(build("bare", "k", "BTREE") == "k_idx")
    assert(build("bare", "k", "BTREE") == "k_idx")
    assert(indices("bare").map(_._1) == Seq("k_idx"))
  }

  test("unknown options and unsuitable columns are refused by name, writing nothing") {
    val t = create("bad")
    val version = sql(s"SELECT max(version) FROM $t.history").head().getLong(0)
    Seq(s"CREATE INDEX b ON $t USING btree (k) OPTIONS (page_size = 10)" -> "unknown option page_size for a BTREE index",
      s"CREATE INDEX b ON $t USING bitmap (k) OPTIONS (zone_size = 10)" -> "zone_size applies to BTREE indices, not to BITMAP",
      s"CREATE INDEX b ON $t USING btree (k) OPTIONS (zone_size = 0)" -> "zone_size = 0 is out of range",
      s"CREATE INDEX b ON $t USING label_list (s)" -> "LABEL_LIST index needs a column of arrays",
      s"CREATE INDEX b ON $t USING btree (tags)" -> "cannot have a BTREE index").foreach { case (statement, words) =>
      val e = intercept[Exception](sql(statement).collect())
      assert(e.getMessage.contains(words), s"$statement: $e")
    }
    assert(sql(s"SELECT max(version) FROM $t.history").head().getLong(0) == version && indices("bad").isEmpty)
  }

  test("the indices stay right across DELETE, UPDATE, MERGE, appends and compaction") {
    val t = create("dml")
    sql(s"CREATE INDEX k_bt ON $t USING btree (k)")
    sql(s"CREATE INDEX s_bm ON $t USING bitmap (s)")
    sql(s"CREATE INDEX d_bm ON $t USING bitmap (d)")
    sql(s"DELETE FROM $t WHERE k BETWEEN 100 AND 200 OR s = 'c3'")
    assertRight(t)
    val moved = sql(s"SELECT count(*) FROM $t WHERE k % 10 = 1").head().getLong(0)
    sql(s"UPDATE $t SET k = k + 100000, s = 'c9' WHERE k % 10 = 1")
    assertRight(t)
    assert(moved > 200 && rows(t, "s = 'c9'", skipping = true).size == moved)
    sql(s"MERGE INTO $t t USING (SELECT id AS k, 'c1' AS s FROM range(2990, 3100)) src ON t.k = src.k " +
      "WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN INSERT (k, s) VALUES (src.k, src.s)")
    assertRight(t)
    append(t, 5000, 5600)
    assertRight(t)
    sql("CALL lance.system.compact(table => 'sib.dml', target_rows_per_fragment => 100000)")
    assertRight(t)
    assert(sql(s"SELECT count(*) FROM $t WHERE s = 'c9'").head().getLong(0) == moved)
  }

  test("optimize_index covers appended fragments with a delta segment, or merges segments into one") {
    val t = create("opt")
    sql(s"CREATE INDEX k_bt ON $t USING btree (k) OPTIONS (zone_size = 500)")
    sql(s"CREATE INDEX s_bm ON $t USING bitmap (s)")
    append(t, 3000, 3600)
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE k = 3300")) == 1 && splitsRead(sql(s"SELECT k FROM $t WHERE k = 1234")) == 2)
    val delta = sql("CALL lance.system.optimize_index(table => 'sib.opt')").head()
    assert(delta.getSeq[String](0).sorted == Seq("k_bt", "s_bm") && delta.getLong(1) == 2 && delta.getLong(2) == 2 && delta.getLong(3) == 0)
    // The appended fragment is covered now: a key of the old ones reads only its own fragment.
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE k = 1234")) == 1)
    assert(splitsRead(sql(s"SELECT k FROM $t WHERE s = 'c9'")) == 0)
    assertRight(t)
    val segments = sql(s"SELECT name, count(*) FROM $t.indices GROUP BY name ORDER BY name").collect().map(r => r.getString(0) -> r.getLong(1)).toSeq
    assert(segments == Seq("k_bt" -> 2L, "s_bm" -> 2L))
    // Nothing uncovered: nothing committed.
    val version = sql(s"SELECT max(version) FROM $t.history").head().getLong(0)
    assert(sql("CALL lance.system.optimize_index(table => 'sib.opt', name => 'k_bt')").head().getLong(4) == version)
    val merged = sql("CALL lance.system.optimize_index(table => 'sib.opt', name => 'k_bt', num_indices_to_merge => 2)").head()
    assert(merged.getSeq[String](0) == Seq("k_bt") && merged.getLong(2) == 1 && merged.getLong(3) == 2)
    assert(sql(s"SELECT count(*) FROM $t.indices WHERE name = 'k_bt'").head().getLong(0) == 1)
    assertRight(t)
  }

  test("a BTREE sorted by a shuffle is the BTREE of the driver's merge of sorted runs, byte for byte") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sib")
    val t = "lance.sib.paths"
    sql(s"CREATE TABLE $t (k BIGINT, f DOUBLE, s STRING, m DECIMAL(10, 2), b BOOLEAN) TBLPROPERTIES " +
      "('max_rows_per_file' = '700', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    sql("""SELECT /*+ COALESCE(1) */ CASE WHEN id % 97 = 0 THEN NULL ELSE (id * 7919) % 1000 END AS k,
          |CASE WHEN id % 50 = 0 THEN CAST('NaN' AS DOUBLE) WHEN id % 7 = 0 THEN NULL WHEN id % 9 = 0 THEN -0.0
          |  WHEN id % 10 = 0 THEN 0.0 ELSE (id % 40) / 4.0 - 3 END AS f,
          |CASE WHEN id % 11 = 0 THEN NULL ELSE concat(CASE WHEN id % 3 = 0 THEN 'é' ELSE 'z' END, CAST(id % 13 AS STRING)) END AS s,
          |CASE WHEN id % 17 = 0 THEN NULL ELSE CAST((id % 25) * -1.25 AS DECIMAL(10, 2)) END AS m,
          |CASE WHEN id % 13 = 0 THEN NULL ELSE id % 3 = 0 END AS b
          |FROM range(0, 2000)""".stripMargin).writeTo(t).append()
    val dir = warehouse.resolve("sib/paths.lance/_indices")
    def segmentDirs(): Set[java.nio.file.Path] =
      if (!java.nio.file.Files.exists(dir)) Set.empty else java.nio.file.Files.list(dir).toArray.map(_.asInstanceOf[java.nio.file.Path]).toSet
    def build(name: String, column: String, shuffle: Boolean): java.nio.file.Path = {
      val before = segmentDirs()
      if (shuffle) spark.conf.set(indexing.ScalarIndexJob.DriverMergeRowsKey, "0")
      try sql(s"CREATE INDEX $name ON $t USING btree ($column) OPTIONS (zone_size = 64)")
      finally spark.conf.unset(indexing.ScalarIndexJob.DriverMergeRowsKey)
      val Seq(added) = (segmentDirs() -- before).toSeq
      added
    }
    for (column <- Seq("k", "f", "s", "m", "b")) {
      val merged = build(s"${column}_merged", column, shuffle = false)
      val shuffled = build(s"${column}_shuffled", column, shuffle = true)
      for (file <- Seq("page_data.lance", "page_lookup.lance"))
        assert(java.util.Arrays.equals(java.nio.file.Files.readAllBytes(merged.resolve(file)),
          java.nio.file.Files.readAllBytes(shuffled.resolve(file))), s"$column: $file")
    }
    assert(sql(s"SELECT count(*) FROM $t WHERE f = 0.0").head().getLong(0) ==
      spark.read.option("data_skipping", "false").table(t).where("f = 0.0").count())
  }
}
