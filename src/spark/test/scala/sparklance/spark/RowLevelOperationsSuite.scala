package sparklance.spark

import java.nio.file.{Files, Path}
import org.apache.spark.sql.{AnalysisException, Row}
import org.apache.spark.sql.catalyst.expressions.BloomFilterMightContain
import org.apache.spark.sql.catalyst.expressions.DynamicPruningExpression
import org.apache.spark.sql.execution.{CommandResultExec, FilterExec, InSubqueryExec, LocalTableScanExec}
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.datasources.v2.{BatchScanExec, WriteDeltaExec}
import org.apache.spark.sql.execution.exchange.{ENSURE_REQUIREMENTS, ShuffleExchangeExec}
import org.apache.spark.sql.functions.col
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.io.{LocalStorage, Storage}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.Dataset
import sparklance.spark.rowlevel.SourceKeysContain

/**
 * DELETE / UPDATE / MERGE scenarios in the spirit of Spark's DeleteFromTableSuiteBase,
 * UpdateTableSuiteBase and MergeIntoTableSuiteBase, checked against expected rows.
 */
class RowLevelOperationsSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  private var counter = 0

  /**
   * A fresh table `lance.dml.tN` holding (pk, salary, dep) rows, spread over several fragments;
   * without the zone maps writes keep by default, so that a test's indices are the ones it builds.
   */
  private def table(rows: Seq[(Int, Option[Int], String)], rowsPerFile: Int = 3): String = {
    counter += 1
    val name = s"lance.dml.t$counter"
    sql("CREATE NAMESPACE IF NOT EXISTS lance.dml")
    sql(s"CREATE TABLE $name (pk INT NOT NULL, salary INT, dep STRING) TBLPROPERTIES ('max_rows_per_file' = '$rowsPerFile', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    if (rows.nonEmpty) {
      val values = rows.map { case (pk, s, d) => s"($pk, ${s.map(_.toString).getOrElse("NULL")}, ${Option(d).map(x => s"'$x'").getOrElse("NULL")})" }
      sql(s"INSERT INTO $name SELECT /*+ COALESCE(1) */ * FROM VALUES ${values.mkString(", ")}")
    }
    name
  }

  private val people = Seq((1, Some(100), "hr"), (2, Some(200), "software"), (3, None, "hr"),
    (4, Some(400), "hardware"), (5, Some(500), null), (6, Some(600), "software"), (7, Some(700), "hr"))

  private def rows(name: String): Seq[Row] = sql(s"SELECT * FROM $name ORDER BY pk").collect().toSeq
  private def pks(name: String): Seq[Int] = rows(name).map(_.getInt(0))
  private def dataset(name: String) = new Dataset(LocalStorage, warehouse.resolve(s"dml/${name.split('.').last}.lance").toString)
  private def lastTransaction(name: String): Transaction = {
    val ds = dataset(name)
    Transaction.parseFrom(LocalStorage.readAll(Storage.join(ds.path, s"_transactions/${ds.snapshot().manifest.getTransactionFile}")))
  }

  // ---- DELETE ----

  test("delete from an empty table") {
    val t = table(Nil)
    sql(s"DELETE FROM $t WHERE pk = 1")
    assert(rows(t).isEmpty)
  }

  test("delete with an alias and a simple condition") {
    val t = table(people)
    sql(s"DELETE FROM $t AS e WHERE e.salary > 350")
    assert(pks(t) == Seq(1, 2, 3))
    assert(lastTransaction(t).hasDelete)
  }

  test("delete with NULL conditions and IN / NOT IN lists holding NULL") {
    val t = table(people)
    sql(s"DELETE FROM $t WHERE CAST(NULL AS BOOLEAN)")
    assert(pks(t) == (1 to 7))
    sql(s"DELETE FROM $t WHERE salary IN (100, NULL)")
    assert(pks(t) == (2 to 7))
    sql(s"DELETE FROM $t WHERE salary NOT IN (200, NULL)") // NOT IN with a NULL is never true
    assert(pks(t) == (2 to 7))
    sql(s"DELETE FROM $t WHERE dep IS NULL OR salary IS NULL")
    assert(pks(t) == Seq(2, 4, 6, 7))
  }

  test("delete with IN, EXISTS, NOT EXISTS and scalar subqueries") {
    val t = table(people)
    spark.createDataFrame(Seq((2, "software"), (7, "hr"), (99, "x"))).toDF("id", "d").createOrReplaceTempView("deleted_ids")
    sql(s"DELETE FROM $t WHERE pk IN (SELECT id FROM deleted_ids)")
    assert(pks(t) == Seq(1, 3, 4, 5, 6))
    sql(s"DELETE FROM $t t WHERE EXISTS (SELECT 1 FROM deleted_ids d WHERE d.d = t.dep AND t.salary > 500)")
    assert(pks(t) == Seq(1, 3, 4, 5))
    sql(s"DELETE FROM $t t WHERE NOT EXISTS (SELECT 1 FROM deleted_ids d WHERE d.d = t.dep)")
    assert(pks(t) == Seq(1, 3))
    sql(s"DELETE FROM $t WHERE salary = (SELECT max(salary) FROM $t)")
    assert(pks(t) == Seq(3))
  }

  test("deleting every row of a fragment drops it; deleting everything is metadata-only") {
    val t = table(people) // fragments of 3 rows: [1,2,3] [4,5,6] [7]
    sql(s"DELETE FROM $t WHERE pk BETWEEN 4 AND 6")
    val snap = dataset(t).snapshot()
    assert(snap.fragments.size == 2)
    assert(snap.fragments.forall(!_.hasDeletionFile))
    assert(lastTransaction(t).getDelete.getDeletedFragmentIdsCount == 1)
    sql(s"DELETE FROM $t")
    assert(rows(t).isEmpty)
    assert(dataset(t).snapshot().fragments.isEmpty)
    sql(s"INSERT INTO $t VALUES (10, 1, 'a')")
    sql(s"TRUNCATE TABLE $t")
    assert(rows(t).isEmpty)
  }

  test("a DELETE naming whole fragments drops them without reading them") {
    val t = table(people) // fragments 0: [1,2,3], 1: [4,5,6], 2: [7]
    val plan = executed(s"DELETE FROM $t WHERE _fragid = 1")
    assert(plan.toString.contains("DeleteFromTable"), plan.toString)
    assert(pks(t) == Seq(1, 2, 3, 7))
    assert(lastTransaction(t).getDelete.getDeletedFragmentIdsList.asScala.map(_.longValue) == Seq(1L))
    assert(dataset(t).snapshot().fragments.forall(!_.hasDeletionFile))
  }

  test("non-deterministic conditions are rejected and change nothing") {
    val t = table(people)
    val before = dataset(t).latestVersion
    intercept[AnalysisException](sql(s"DELETE FROM $t WHERE rand() > 0.5"))
    intercept[AnalysisException](sql(s"UPDATE $t SET salary = 1 WHERE rand() > 0.5"))
    assert(dataset(t).latestVersion == before)
  }

  // ---- UPDATE ----

  test("update with alias, several columns, NULLs and expressions") {
    val t = table(people)
    sql(s"UPDATE $t AS e SET e.salary = e.salary + 1, dep = 'it' WHERE e.dep = 'hr'")
    assert(rows(t) == Seq(Row(1, 101, "it"), Row(2, 200, "software"), Row(3, null, "it"), Row(4, 400, "hardware"),
      Row(5, 500, null), Row(6, 600, "software"), Row(7, 701, "it")))
    sql(s"UPDATE $t SET dep = NULL WHERE salary IS NULL")
    sql(s"UPDATE $t SET salary = -1")
    assert(rows(t).map(_.getInt(1)).distinct == Seq(-1))
    assert(rows(t)(2) == Row(3, -1, null))
    assert(lastTransaction(t).hasUpdate)
  }

  test("update with an IN subquery and on an empty table") {
    val t = table(people)
    spark.createDataFrame(Seq(Tuple1(4), Tuple1(5))).toDF("id").createOrReplaceTempView("raise_ids")
    sql(s"UPDATE $t SET salary = salary * 10 WHERE pk IN (SELECT id FROM raise_ids)")
    assert(rows(t).filter(r => Set(4, 5).contains(r.getInt(0))).map(_.getInt(1)) == Seq(4000, 5000))
    val empty = table(Nil)
    sql(s"UPDATE $empty SET salary = 1")
    assert(rows(empty).isEmpty)
  }

  test("NOT NULL and type violations fail and leave the table at its previous version") {
    val t = table(people)
    val before = dataset(t).latestVersion
    val e = intercept[Exception](sql(s"UPDATE $t SET pk = NULL WHERE pk = 1").collect())
    assert(e.getMessage.contains("pk") || e.getMessage.contains("NULL"), e.getMessage)
    intercept[Exception](sql(s"UPDATE $t SET salary = 'not a number' WHERE pk = 1").collect())
    intercept[Exception](sql(s"INSERT INTO $t VALUES (NULL, 1, 'x')").collect())
    assert(dataset(t).latestVersion == before)
    assert(rows(t).size == 7)
  }

  // ---- MERGE ----

  private def source(rows: (Int, Option[Int], String)*): Unit =
    spark.createDataFrame(rows.map { case (a, b, c) => (a, b, c) }).toDF("pk", "salary", "dep").createOrReplaceTempView("src")

  test("merge with every clause kind") {
    val t = table(people)
    source((1, Some(111), "hr"), (2, Some(222), "software"), (8, Some(800), "new"), (9, Some(900), "skip"))
    sql(s"""MERGE INTO $t t USING src s ON t.pk = s.pk
           |WHEN MATCHED AND s.pk = 1 THEN UPDATE SET *
           |WHEN MATCHED THEN DELETE
           |WHEN NOT MATCHED AND s.dep <> 'skip' THEN INSERT *
           |WHEN NOT MATCHED BY SOURCE AND t.salary IS NULL THEN DELETE
           |WHEN NOT MATCHED BY SOURCE THEN UPDATE SET salary = t.salary + 5""".stripMargin)
    assert(rows(t) == Seq(Row(1, 111, "hr"), Row(4, 405, "hardware"), Row(5, 505, null), Row(6, 605, "software"),
      Row(7, 705, "hr"), Row(8, 800, "new")))
  }

  test("merge from a CTE and from a subquery, and a self merge") {
    val t = table(people)
    sql(s"""WITH cte AS (SELECT pk, salary * 2 AS salary, dep FROM $t WHERE dep = 'hr')
           |MERGE INTO $t t USING cte s ON t.pk = s.pk
           |WHEN MATCHED THEN UPDATE SET salary = s.salary""".stripMargin)
    assert(rows(t).filter(_.getString(2) == "hr").map(r => Option(r.get(1))) == Seq(Some(200), None, Some(1400)))
    sql(s"""MERGE INTO $t t USING (SELECT pk + 100 AS pk, salary, dep FROM $t WHERE pk < 3) s ON t.pk = s.pk
           |WHEN NOT MATCHED THEN INSERT (pk, salary, dep) VALUES (s.pk, s.salary, 'copy')""".stripMargin)
    assert(pks(t) == Seq(1, 2, 3, 4, 5, 6, 7, 101, 102))
    sql(s"MERGE INTO $t t USING $t s ON t.pk = s.pk WHEN MATCHED AND s.pk > 100 THEN DELETE")
    assert(pks(t) == (1 to 7))
  }

  test("insert-only merge takes the append path") {
    val t = table(people)
    source((1, Some(1), "dup"), (50, Some(5000), "new"))
    sql(s"MERGE INTO $t t USING src s ON t.pk = s.pk WHEN NOT MATCHED THEN INSERT *")
    assert(pks(t) == (1 to 7) :+ 50)
    assert(lastTransaction(t).hasAppend)
  }

  test("a source row matching several target rows is a cardinality violation and changes nothing") {
    val t = table(people)
    source((1, Some(1), "a"), (1, Some(2), "b"))
    val before = dataset(t).latestVersion
    val e = intercept[Exception](sql(s"MERGE INTO $t t USING src s ON t.pk = s.pk WHEN MATCHED THEN UPDATE SET *").collect())
    assert(e.getMessage.contains("MERGE_CARDINALITY_VIOLATION"), e.getMessage)
    assert(dataset(t).latestVersion == before)
    assert(rows(t).size == 7)
    // An unconditional delete is allowed to match several source rows.
    sql(s"MERGE INTO $t t USING src s ON t.pk = s.pk WHEN MATCHED THEN DELETE")
    assert(pks(t) == (2 to 7))
  }

  test("the DataFrame mergeInto API") {
    val t = table(people)
    source((2, Some(2), "x"), (70, Some(7), "y"))
    spark.table("src").mergeInto(t, col("src.pk") === col(s"$t.pk")).whenMatched().updateAll()
      .whenNotMatched().insertAll().merge()
    assert(rows(t).find(_.getInt(0) == 2).contains(Row(2, 2, "x")))
    assert(pks(t).contains(70))
  }

  // ---- what is written ----

  private def files(root: Path, dir: String): Set[String] = {
    val d = root.resolve(dir)
    if (!Files.exists(d)) Set.empty else Files.list(d).iterator().asScala.map(_.getFileName.toString).toSet
  }

  test("deleting 10 rows of 1M writes no data file; updating 10 rows writes only those rows") {
    counter += 1
    val t = s"lance.dml.big$counter"
    sql(s"CREATE TABLE $t (id BIGINT NOT NULL, v DOUBLE, s STRING)")
    sql(s"INSERT INTO $t SELECT id, id * 0.5, concat('row-', id) FROM range(1000000)")
    val root = Path.of(dataset(t).path)
    val dataBefore = files(root, "data")
    sql(s"DELETE FROM $t WHERE id % 100000 = 7")
    assert(files(root, "data") == dataBefore)
    assert(files(root, "_deletions").nonEmpty)
    assert(sql(s"SELECT count(*) FROM $t").head().getLong(0) == 999990)
    sql(s"UPDATE $t SET v = -1 WHERE id % 100000 = 8")
    val added = files(root, "data") -- dataBefore
    assert(added.size == 1, added)
    val snap = dataset(t).snapshot()
    val newFragment = snap.fragments.find(_.getFiles(0).getPath == added.head).get
    assert(newFragment.getPhysicalRows == 10)
    assert(sql(s"SELECT count(*) FROM $t WHERE v = -1").head().getLong(0) == 10)
    assert(sql(s"SELECT count(*) FROM $t").head().getLong(0) == 999990)
  }

  // ---- plan: runtime fragment filtering and write metrics ----

  private def executed(q: String) = sql(q).queryExecution.executedPlan match {
    case c: CommandResultExec => c.commandPhysicalPlan
    case other => other
  }

  test("UPDATE reads its condition's column first and the other columns of the matching rows only, and reports its metrics") {
    val t = table(people) // fragments [1,2,3] [4,5,6] [7]
    val plan = executed(s"UPDATE $t SET salary = 0 WHERE pk = 5")
    val scans = collectWithSubqueries(plan) { case s: BatchScanExec => s }
    // One scan, without the runtime group filter's job over every fragment's pk: the scan found
    // the matching row by pk itself and read it alone whole, not the 7 rows (or the 3 of its fragment).
    assert(scans.size == 1 && scans.head.runtimeFilters.isEmpty, plan)
    assert(scans.head.metrics("numOutputRows").value == 1)
    val write = collectFirst(plan) { case w: WriteDeltaExec => w }.get
    assert(write.metrics("rowsUpdated").value == 1)
    assert(write.metrics("rowsDeleted").value == 0)
    assert(write.metrics("deletionFilesWritten").value == 1)
    assert(write.metrics("dataFilesWritten").value == 1)
    assert(rows(t).find(_.getInt(0) == 5).contains(Row(5, 0, null)))
  }

  test("a DELETE reading only its condition's columns asks for no runtime group filter") {
    val t = table(people)
    val plan = executed(s"DELETE FROM $t WHERE pk = 5")
    val scans = collectWithSubqueries(plan) { case s: BatchScanExec => s }
    // One scan of pk, not a subquery over every fragment's pk followed by the same scan again.
    assert(scans.size == 1 && scans.head.runtimeFilters.isEmpty, plan)
    // Its deletions are written where they are found, not shuffled by fragment first.
    assert(collect(plan) { case s: ShuffleExchangeExec => s }.isEmpty, plan)
    assert(pks(t) == Seq(1, 2, 3, 4, 6, 7))
  }

  /** A table of `n` rows (pk 0 until n, salary = pk) in fragments of 1,000 rows. */
  private def numbered(n: Int): String = {
    val t = table(Nil, rowsPerFile = 1000)
    sql(s"INSERT INTO $t SELECT /*+ COALESCE(1) */ CAST(id AS INT), CAST(id AS INT), 'old' FROM range($n)")
    t
  }

  private def bloomFiltered(plan: org.apache.spark.sql.execution.SparkPlan) = collect(plan) {
    case f: FilterExec if f.condition.exists(_.isInstanceOf[BloomFilterMightContain]) => f
  }

  private def keySetFiltered(plan: org.apache.spark.sql.execution.SparkPlan) = collect(plan) {
    case f: FilterExec if f.condition.exists(_.isInstanceOf[SourceKeysContain]) => f
  }

  private val upsert = "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"

  test("a MERGE with NOT MATCHED filters the target by the exact set of its source's integer keys before the join") {
    val t = numbered(5000)
    source((10, Some(-1), "upd"), (2500, Some(-1), "upd"), (4999, Some(-1), "upd"), (7000, Some(7), "new"),
      (-3, None, "new"), (0, Some(-1), "upd"))
    val plan = executed(s"MERGE INTO $t t USING src s ON t.pk = s.pk $upsert")
    val filters = keySetFiltered(plan)
    assert(filters.size == 1 && bloomFiltered(plan).isEmpty, plan)
    // Of 5,000 target rows, exactly the 4 that match (key 0 among them) reach the join.
    assert(filters.head.metrics("numOutputRows").value == 4, filters.head.metrics("numOutputRows").value)
    // The scan reads only the key, so it asked for no runtime group filter.
    assert(collectWithSubqueries(plan) { case s: BatchScanExec => s }.forall(_.runtimeFilters.isEmpty), plan)
    // The join's output is written as it is partitioned, not shuffled again by fragment.
    assert(collect(plan) { case s: ShuffleExchangeExec => s.shuffleOrigin }.sortBy(_.toString) ==
      Seq(ENSURE_REQUIREMENTS, ENSURE_REQUIREMENTS), plan)
    val expected = (0 until 5000).map(i => if (Set(0, 10, 2500, 4999)(i)) Row(i, -1, "upd") else Row(i, i, "old")) ++
      Seq(Row(7000, 7, "new"))
    assert(rows(t) == Row(-3, null, "new") +: expected)
  }

  test("the exact key filters (Spark's, or the scan's) match date, timestamp and widened keys, compiled or interpreted") {
    Seq((true, true), (false, true), (false, false)).foreach { case (indexed, pruning) => exactKeyFilters(indexed, pruning) }
  }

  /**
   * MERGEs on date, timestamp and widened integer keys, on a table with zone maps (`indexed`) or
   * without. With an index and dynamic pruning (`pruning`) the target's scan keeps the rows of the
   * source's keys, except for the widened key, which no dynamic pruning filter can name; elsewhere
   * a filter of Spark's does.
   */
  private def exactKeyFilters(indexed: Boolean, pruning: Boolean): Unit = {
    counter += 1
    val t = s"lance.dml.typed$counter"
    sql("CREATE NAMESPACE IF NOT EXISTS lance.dml")
    sql(s"CREATE TABLE $t (d DATE, ts TIMESTAMP, small SMALLINT, v INT)" + (if (indexed) "" else " TBLPROPERTIES ('zonemap_columns' = '')"))
    sql(s"INSERT INTO $t SELECT date_add(DATE'1969-12-25', CAST(id AS INT)), " +
      "timestamp_micros(id * 3600000000 - 7200000000), CAST(id - 30 AS SMALLINT), 0 FROM range(60)")
    // A local relation, whose row count Spark knows.
    def at(instant: String) = java.sql.Timestamp.from(java.time.Instant.parse(instant))
    spark.createDataFrame(Seq(
      (java.sql.Date.valueOf("1970-01-01"), at("1970-01-01T00:00:00Z"), 0L, 1),
      (java.sql.Date.valueOf("1969-12-30"), at("1970-01-02T01:00:00Z"), -30L, 2),
      (java.sql.Date.valueOf("2001-01-01"), at("2001-01-01T00:00:00Z"), 70000L, 3)))
      .toDF("d", "ts", "small", "v").createOrReplaceTempView("typed_src")
    def merge(key: String) = withSQLConf("spark.sql.optimizer.dynamicPartitionPruning.enabled" -> pruning.toString) {
      executed(s"MERGE INTO $t t USING typed_src s ON t.$key = s.$key " +
        "WHEN MATCHED THEN UPDATE SET v = t.v + s.v WHEN NOT MATCHED THEN INSERT (d, ts, small, v) VALUES (s.d, s.ts, NULL, s.v)")
    }
    def values = sql(s"SELECT sum(v), count(*) FROM $t").head()
    val plans = Seq("d", "ts").map(merge) :+
      withSQLConf("spark.sql.codegen.factoryMode" -> "NO_CODEGEN", "spark.sql.codegen.wholeStage" -> "false")(merge("small"))
    plans.zipWithIndex.foreach { case (p, i) =>
      if (indexed && pruning && i < 2) {
        // The two matching rows of 60 (the first MERGE's), or three (the second's, with the row the first inserted).
        assert(keySetFiltered(p).isEmpty && targetScan(p).metrics("numOutputRows").value == 2 + i, p)
      } else assert(keySetFiltered(p).size == 1, p)
    }
    // Each MERGE matches two of the 60 rows (adding 1 + 2). The first and last insert a row
    // holding 3 (its small is NULL); the second matches the first's row instead (adding 3).
    assert(values == Row(3 * 6L, 62L))
  }

  test("a MERGE on two keys filters the target by a Bloom filter of the source's keys") {
    val t = numbered(5000)
    source((10, Some(10), "upd"), (2500, Some(2500), "upd"), (4999, Some(1), "no match"), (7000, Some(7), "new"))
    val plan = executed(s"MERGE INTO $t t USING src s ON t.pk = s.pk AND t.salary = s.salary $upsert")
    val filters = bloomFiltered(plan)
    assert(filters.size == 1 && keySetFiltered(plan).isEmpty, plan)
    // The 2 that match, and a few false positives at most.
    assert(filters.head.metrics("numOutputRows").value < 50, filters.head.metrics("numOutputRows").value)
    val expected = (0 until 5000).map(i => if (Set(10, 2500)(i)) Row(i, i, "upd") else Row(i, i, "old")) ++
      Seq(Row(4999, 1, "no match"), Row(7000, 7, "new"))
    assert(rows(t) == expected.sortBy(_.getInt(0)))
  }

  test("a MERGE from a source of unknown row count filters by a Bloom filter") {
    val t = numbered(3000)
    // Spark knows no bound on the rows an explode returns.
    spark.sql("SELECT pk, -1 AS salary, 'upd' AS dep FROM (SELECT explode(sequence(7, 2007, 1000)) AS pk)")
      .createOrReplaceTempView("src")
    val plan = executed(s"MERGE INTO $t t USING src s ON t.pk = s.pk $upsert")
    assert(keySetFiltered(plan).isEmpty && bloomFiltered(plan).size == 1, plan)
    assert(rows(t).filter(_.getInt(1) == -1).map(_.getInt(0)) == Seq(7, 1007, 2007))
  }

  test("MERGE plans without a key filter when Spark's runtime Bloom filters are off or the source is large") {
    val t = numbered(3000)
    source((5, Some(-1), "upd"), (9000, Some(9), "new"))
    val merge = s"MERGE INTO $t t USING src s ON t.pk = s.pk $upsert"
    def keyFilters(plan: org.apache.spark.sql.execution.SparkPlan) = bloomFiltered(plan) ++ keySetFiltered(plan)
    withSQLConf("spark.sql.optimizer.runtime.bloomFilter.enabled" -> "false") {
      assert(keyFilters(executed(merge)).isEmpty)
    }
    withSQLConf("spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold" -> "1") {
      source((6, Some(-1), "upd"))
      assert(keyFilters(executed(merge)).isEmpty)
    }
    assert(rows(t).filter(_.getInt(1) == -1).map(_.getInt(0)) == Seq(5, 6))
    assert(pks(t).size == 3001)
  }

  test("MERGE on indexed CHAR and VARCHAR keys: the scan keeps the rows Spark's join matches, trailing spaces and all") {
    counter += 1
    val t = s"lance.dml.chars$counter"
    sql("CREATE NAMESPACE IF NOT EXISTS lance.dml")
    // Zone maps on both keys (the default), so that the scan's key sets, not Spark's filters, narrow the rows.
    sql(s"CREATE TABLE $t (c CHAR(5), vc VARCHAR(5), v INT)")
    sql(s"INSERT INTO $t VALUES ('ab', 'ab', 1), ('abc  ', 'abc  ', 2), ('x', 'x', 3)")
    // Keys with and without trailing spaces: the scan's set compares bytes, as Spark's join does here.
    spark.sql("SELECT 'ab' AS k, 10 AS v UNION ALL SELECT 'abc', 20 UNION ALL SELECT 'x   ', 30 UNION ALL SELECT 'abc  ', 40")
      .createOrReplaceTempView("chars_src")
    def merge(key: String) = executed(s"MERGE INTO $t t USING chars_src s ON t.$key = s.k WHEN MATCHED THEN UPDATE SET v = t.v + s.v")
    def expected(key: String) = withSQLConf("spark.sql.optimizer.dynamicPartitionPruning.enabled" -> "false",
      "spark.sql.optimizer.runtime.bloomFilter.enabled" -> "false") {
      sql(s"SELECT t.$key, t.v + coalesce(sum(s.v), 0) FROM $t t LEFT JOIN chars_src s ON t.$key = s.k GROUP BY t.$key, t.v ORDER BY 1")
        .collect().toSeq
    }
    Seq("c", "vc").foreach { key =>
      val want = expected(key)
      val plan = merge(key)
      // The scan got the source's keys (its key set kept the rows) and the MERGE matched what Spark's join matches.
      assert(targetScan(plan).runtimeFilters.nonEmpty && bloomFiltered(plan).isEmpty, plan)
      assert(sql(s"SELECT $key, v FROM $t ORDER BY 1").collect().toSeq == want, key)
    }
    // Each MERGE matched 'ab' and 'abc  ': 1 + 10 + 10 and 2 + 40 + 40.
    assert(sql(s"SELECT v FROM $t ORDER BY v").collect().map(_.getInt(0)).toSeq == Seq(3, 21, 82))
  }

  test("MERGE on floating-point keys is not Bloom-filtered (0.0 = -0.0 hash apart); on string keys the scan keeps the source's") {
    counter += 1
    val t = s"lance.dml.keys$counter"
    sql("CREATE NAMESPACE IF NOT EXISTS lance.dml")
    sql(s"CREATE TABLE $t (d DOUBLE, s STRING, v INT)")
    sql(s"INSERT INTO $t VALUES (CAST('-0.0' AS DOUBLE), 'apple', 1), (2.5, 'pear', 2)")
    spark.sql("SELECT CAST(0.0 AS DOUBLE) AS d, 'pear' AS s, 10 AS v UNION ALL SELECT 9.0, 'fig', 90")
      .createOrReplaceTempView("keys_src")
    def merge(key: String) = executed(s"MERGE INTO $t t USING keys_src k ON t.$key = k.$key " +
      "WHEN MATCHED THEN UPDATE SET v = t.v + k.v WHEN NOT MATCHED THEN INSERT (d, s, v) VALUES (k.d, k.s, k.v)")
    assert(bloomFiltered(merge("d")).isEmpty)
    // -0.0 matched 0.0: 1 + 10.
    assert(sql(s"SELECT v FROM $t ORDER BY v").collect().map(_.getInt(0)).toSeq == Seq(2, 11, 90))
    val byString = merge("s")
    // The scan handed over the two matching rows of three, with no filter of Spark's.
    assert(bloomFiltered(byString).isEmpty && targetScan(byString).metrics("numOutputRows").value == 2, byString)
    // 'pear' matched 2.5's row, and 'fig' the row the first MERGE inserted.
    assert(sql(s"SELECT v FROM $t ORDER BY v").collect().map(_.getInt(0)).toSeq == Seq(11, 12, 180))
  }

  // ---- target scans skipping by the source's keys ----

  /** The scan of the row-level target, which alone receives a dynamic pruning filter. */
  private def targetScan(plan: org.apache.spark.sql.execution.SparkPlan): BatchScanExec =
    collectWithSubqueries(plan) { case s: BatchScanExec if s.runtimeFilters.nonEmpty => s } match {
      case Seq(scan) => scan
      case scans => fail(s"${scans.size} runtime-filtered scans in\n$plan")
    }

  /** `numbered(n)` with a zone map of `pk` in zones of 100 rows. */
  private def zoned(n: Int): String = {
    val t = numbered(n)
    sql(s"CALL lance.system.create_index(table => '${t.stripPrefix("lance.")}', column => 'pk', rows_per_zone => 100)")
    t
  }

  test("a MERGE's target scan reads only the zones of an indexed key that may hold the source's keys") {
    val t = zoned(5000)
    source((10, Some(-1), "upd"), (2550, Some(-1), "upd"), (7000, Some(7), "new"), (-3, None, "new"))
    val plan = executed(s"MERGE INTO $t t USING src s ON t.pk = s.pk $upsert")
    // Keys 10 and 2550 lie in two zones of 100 rows, in two of the five fragments: 200 of the
    // 5,000 rows are read, and the scan hands over the two that match.
    assert(targetScan(plan).metrics("splitsRead").value == 2, plan)
    assert(targetScan(plan).metrics("numOutputRows").value == 2, plan)
    // The key filter stands in for Spark's runtime group filter, whose subquery reads every key.
    assert(targetScan(plan).runtimeFilters.size == 1, plan)
    val expected = (0 until 5000).map(i => if (i == 10 || i == 2550) Row(i, -1, "upd") else Row(i, i, "old")) ++
      Seq(Row(7000, 7, "new"))
    assert(rows(t) == Row(-3, null, "new") +: expected)
  }

  test("the target scans of a matched-only MERGE and of a DELETE by a subquery skip zones too") {
    val t = zoned(3000)
    source((150, Some(-1), "upd"), (151, Some(-2), "upd"), (9999, Some(0), "none"))
    val merge = executed(s"MERGE INTO $t t USING src s ON t.pk = s.pk WHEN MATCHED THEN UPDATE SET salary = s.salary")
    // One zone of 100 rows read, the two matching rows handed over.
    assert(targetScan(merge).metrics("splitsRead").value == 1, merge)
    assert(targetScan(merge).metrics("numOutputRows").value == 2, merge)
    val delete = executed(s"DELETE FROM $t WHERE pk IN (SELECT pk - 100 FROM src)")
    // Keys 50 and 51 share one zone; the fragment of the two rows the MERGE rewrote has no zones
    // and is read whole (a split of its own). Of the 102 rows read, two are deleted.
    assert(targetScan(delete).metrics("splitsRead").value == 2, delete)
    assert(targetScan(delete).metrics("numOutputRows").value == 2, delete)
    val expected = (0 until 3000).filterNot(Set(50, 51)).map {
      case 150 => Row(150, -1, "old")
      case 151 => Row(151, -2, "old")
      case i => Row(i, i, "old")
    }
    assert(rows(t) == expected)
  }

  test("no dynamic pruning of a target without an index on the key, or with dynamic pruning off") {
    def runtimeFiltered(plan: org.apache.spark.sql.execution.SparkPlan) =
      collectWithSubqueries(plan) { case s: BatchScanExec if s.runtimeFilters.nonEmpty => s }
    source((10, Some(-1), "upd"))
    counter += 1
    val plain = s"lance.dml.doubles$counter"
    sql(s"CREATE TABLE $plain (d DOUBLE, v INT) TBLPROPERTIES ('zonemap_columns' = '')")
    sql(s"INSERT INTO $plain VALUES (1.5, 1), (10.0, 2)")
    val ints = numbered(1000)
    assert(runtimeFiltered(executed(s"MERGE INTO $ints t USING src s ON t.pk = s.pk $upsert")).isEmpty)
    val byDouble = executed(s"MERGE INTO $plain t USING (SELECT CAST(pk AS DOUBLE) AS d, salary AS v FROM src) s " +
      s"ON t.d = s.d $upsert")
    assert(runtimeFiltered(byDouble).isEmpty, byDouble)
    assert(sql(s"SELECT v FROM $plain ORDER BY d").collect().map(_.getInt(0)).toSeq == Seq(1, -1))
    val t = zoned(1000)
    withSQLConf("spark.sql.optimizer.dynamicPartitionPruning.enabled" -> "false") {
      val plan = executed(s"MERGE INTO $t t USING src s ON t.pk = s.pk $upsert")
      assert(runtimeFiltered(plan).isEmpty, plan)
    }
    assert(sql(s"SELECT salary FROM $t WHERE pk = 10").head().getInt(0) == -1)
  }

  /** The reads of the MERGE's source (a local relation, or its cached copy) in `plan` and its subqueries. */
  private def sourceReads(plan: org.apache.spark.sql.execution.SparkPlan): Int = collectWithSubqueries(plan) {
    case s: LocalTableScanExec => s
    case s: InMemoryTableScanExec => s
  }.size

  private def aggregates(plan: org.apache.spark.sql.execution.SparkPlan) =
    collectWithSubqueries(plan) { case a: org.apache.spark.sql.execution.aggregate.BaseAggregateExec => a }

  test("an upsert MERGE collects its source's keys for the target's scan as they are: no aggregate, and no job for local rows") {
    val t = zoned(5000)
    // Key 7000 comes twice: both rows are inserted.
    source((10, Some(-1), "upd"), (2550, Some(-1), "upd"), (7000, Some(7), "new"), (7000, Some(8), "new"))
    val merge = s"MERGE INTO $t t USING src s ON t.pk = s.pk $upsert"
    val (plan, jobs) = jobsOf(executed(merge))
    val keys = targetScan(plan).runtimeFilters.collect { case DynamicPruningExpression(in: InSubqueryExec) => in }
    assert(keys.size == 1 && keys.head.values().exists(_.toSeq.map(_.asInstanceOf[Int]).sorted == Seq(10, 2550, 7000, 7000)), plan)
    // Spark's own plan gathers the distinct keys with an aggregate: a shuffle, two jobs more.
    // Here the source's shuffle, the target's scan, the join and write; the keys are the local rows'.
    assert(aggregates(plan).isEmpty && jobs == 3, s"$jobs jobs: $plan")
    assert(targetScan(plan).metrics("numOutputRows").value == 2, plan)
    val expected = (0 until 5000).map(i => if (Set(10, 2550)(i)) Row(i, -1, "upd") else Row(i, i, "old"))
    assert(rows(t) == expected ++ Seq(Row(7000, 7, "new"), Row(7000, 8, "new")))
    source((2550, Some(-2), "upd"), (7001, Some(9), "new"))
    spark.table("src").cache()
    try {
      val cached = executed(merge)
      assert(aggregates(cached).isEmpty && targetScan(cached).metrics("numOutputRows").value == 1, cached)
    } finally spark.catalog.uncacheTable("src")
    // Without adaptive execution Spark's plan stays as it is.
    withSQLConf("spark.sql.adaptive.enabled" -> "false") {
      source((10, Some(-3), "upd"))
      assert(targetScan(executed(merge)).metrics("numOutputRows").value == 1)
    }
    assert(rows(t) == expected.map { case Row(10, _, _) => Row(10, -3, "upd"); case Row(2550, _, _) => Row(2550, -2, "upd"); case r => r } ++
      Seq(Row(7000, 7, "new"), Row(7000, 8, "new"), Row(7001, 9, "new")))
  }

  test("an upsert MERGE on an indexed integer key reads its source twice: the join, and the keys the target's scan keeps exactly") {
    val t = zoned(5000)
    source((10, Some(-1), "upd"), (2550, Some(-1), "upd"), (4999, Some(-1), "upd"), (7000, Some(7), "new"), (-3, None, "new"))
    val merge = s"MERGE INTO $t t USING src s ON t.pk = s.pk $upsert"
    def check(plan: org.apache.spark.sql.execution.SparkPlan, matches: Long): Unit = {
      // No third read for a key filter of Spark's (a collect_set or Bloom filter subquery).
      assert(sourceReads(plan) == 2 && keySetFiltered(plan).isEmpty && bloomFiltered(plan).isEmpty, plan)
      val scan = targetScan(plan)
      // Spark ran the dynamic pruning subquery: one it gives up is TRUE, and the whole target
      // would be shuffled (the result the same).
      assert(scan.runtimeFilters.nonEmpty && scan.runtimeFilters.forall {
        case DynamicPruningExpression(_: InSubqueryExec) => true
        case _ => false
      }, plan)
      assert(scan.metrics("numOutputRows").value == matches, plan)
    }
    check(executed(merge), 3)
    // The second time, the rows the first inserted match too.
    withSQLConf("spark.sql.adaptive.enabled" -> "false")(check(executed(merge), 5))
    spark.table("src").cache()
    try check(executed(merge), 5) finally spark.catalog.uncacheTable("src")
    val expected = (0 until 5000).map(i => if (Set(10, 2550, 4999)(i)) Row(i, -1, "upd") else Row(i, i, "old")) ++
      Seq(Row(7000, 7, "new"))
    assert(rows(t) == Row(-3, null, "new") +: expected)
    // WHEN NOT MATCHED BY SOURCE needs every target row: no filter on the target's scan.
    val all = executed(s"MERGE INTO $t t USING src s ON t.pk = s.pk $upsert WHEN NOT MATCHED BY SOURCE THEN UPDATE SET salary = 0")
    assert(collectWithSubqueries(all) { case s: BatchScanExec if s.runtimeFilters.nonEmpty => s }.isEmpty, all)
    assert(sql(s"SELECT count(*), sum(salary) FROM $t").head() == Row(5002L, 4L))
  }
}
