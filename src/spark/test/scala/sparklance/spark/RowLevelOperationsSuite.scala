package sparklance.spark

import java.nio.file.{Files, Path}
import org.apache.spark.sql.{AnalysisException, Row}
import org.apache.spark.sql.catalyst.expressions.BloomFilterMightContain
import org.apache.spark.sql.execution.{CommandResultExec, FilterExec}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.datasources.v2.{BatchScanExec, WriteDeltaExec}
import org.apache.spark.sql.functions.col
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.io.{LocalStorage, Storage}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.Dataset

/**
 * DELETE / UPDATE / MERGE scenarios in the spirit of Spark's DeleteFromTableSuiteBase,
 * UpdateTableSuiteBase and MergeIntoTableSuiteBase, checked against expected rows.
 */
class RowLevelOperationsSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  private var counter = 0

  /** A fresh table `lance.dml.tN` holding (pk, salary, dep) rows, spread over several fragments. */
  private def table(rows: Seq[(Int, Option[Int], String)], rowsPerFile: Int = 3): String = {
    counter += 1
    val name = s"lance.dml.t$counter"
    sql("CREATE NAMESPACE IF NOT EXISTS lance.dml")
    sql(s"CREATE TABLE $name (pk INT NOT NULL, salary INT, dep STRING) TBLPROPERTIES ('max_rows_per_file' = '$rowsPerFile', 'optimize_write' = 'false')")
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

  test("UPDATE reads only the fragments that hold matching rows, and reports its metrics") {
    val t = table(people) // fragments [1,2,3] [4,5,6] [7]
    val plan = executed(s"UPDATE $t SET salary = 0 WHERE pk = 5")
    val scans = collectWithSubqueries(plan) { case s: BatchScanExec => s }
    val rowLevelScan = scans.find(_.runtimeFilters.nonEmpty).getOrElse(fail(s"no runtime-filtered scan in\n$plan"))
    // The group filter let the rewrite read fragment 1 only (3 rows), not all 7 rows.
    assert(rowLevelScan.metrics("numOutputRows").value == 3)
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

  test("a MERGE with NOT MATCHED filters the target by the source keys' Bloom filter before the join") {
    val t = numbered(5000)
    source((10, Some(-1), "upd"), (2500, Some(-1), "upd"), (4999, Some(-1), "upd"), (7000, Some(7), "new"), (-3, None, "new"))
    val merge = s"MERGE INTO $t t USING src s ON t.pk = s.pk WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    val plan = executed(merge)
    val filters = bloomFiltered(plan)
    assert(filters.size == 1, plan)
    // Of 5,000 target rows, the 3 that match (and a few false positives at most) reach the join.
    assert(filters.head.metrics("numOutputRows").value < 50, filters.head.metrics("numOutputRows").value)
    // The scan reads only the key, so it asked for no runtime group filter.
    assert(collectWithSubqueries(plan) { case s: BatchScanExec => s }.forall(_.runtimeFilters.isEmpty), plan)
    val expected = (0 until 5000).map(i => if (Set(10, 2500, 4999)(i)) Row(i, -1, "upd") else Row(i, i, "old")) ++
      Seq(Row(7000, 7, "new"))
    assert(rows(t) == Row(-3, null, "new") +: expected)
  }

  test("MERGE plans without the Bloom filter when Spark's runtime Bloom filters are off or the source is large") {
    val t = numbered(3000)
    source((5, Some(-1), "upd"), (9000, Some(9), "new"))
    val merge = s"MERGE INTO $t t USING src s ON t.pk = s.pk WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    withSQLConf("spark.sql.optimizer.runtime.bloomFilter.enabled" -> "false") {
      assert(bloomFiltered(executed(merge)).isEmpty)
    }
    withSQLConf("spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold" -> "1") {
      source((6, Some(-1), "upd"))
      assert(bloomFiltered(executed(merge)).isEmpty)
    }
    assert(rows(t).filter(_.getInt(1) == -1).map(_.getInt(0)) == Seq(5, 6))
    assert(pks(t).size == 3001)
  }

  test("MERGE on floating-point keys is not Bloom-filtered (0.0 = -0.0 hash apart); on string keys it is") {
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
    assert(bloomFiltered(merge("s")).size == 1)
    // 'pear' matched 2.5's row, and 'fig' the row the first MERGE inserted.
    assert(sql(s"SELECT v FROM $t ORDER BY v").collect().map(_.getInt(0)).toSeq == Seq(11, 12, 180))
  }
}
