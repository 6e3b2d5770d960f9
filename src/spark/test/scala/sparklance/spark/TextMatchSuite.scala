package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.Pylance
import sparklance.format.table.Dataset
import sparklance.spark.errors.LanceThrowable

/** `lance_match`: its evaluation, its errors, its binding to a column's INVERTED index and the scans that use it. */
class TextMatchSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  private def path(table: String): String = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("tm"), table))).path
  }

  /** Builds an INVERTED index on `body` with pylance, `options` its Python keyword arguments. */
  private def index(table: String, options: String = ""): Unit = {
    val script = Files.createTempFile("text-match", ".py")
    Files.writeString(script, "import sys, lance\nds = lance.dataset(sys.argv[1])\n" +
      s"ds.create_scalar_index('body', 'INVERTED'$options)\nprint('ok')\n")
    assert(Pylance.run(script, path(table)).trim.linesIterator.toSeq.last == "ok")
  }

  /** Rows the Lance scans produced while running `df` (before Spark's own filters), and its ids. */
  private def run(df: DataFrame): (Long, Seq[Long]) = {
    val ids = df.collect().map(_.getLong(0)).toSeq.sorted
    (collect(df.queryExecution.executedPlan) { case s: BatchScanExec => s.metrics("numOutputRows").value }.sum, ids)
  }

  private val bodies = Seq(
    "Running shoes for long runs", "A red jacket", "The zebra crossing", "Café au lait", null, "",
    "the and of", "RUNNER'S guide", "Shoes, shoes, SHOES!", "red-hot chili", "A wide hat", "zebras at the zoo")

  private def newTable(name: String): String = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.tm")
    sql(s"CREATE TABLE lance.tm.$name (id BIGINT, body STRING) TBLPROPERTIES ('max_rows_per_file' = '3', 'optimize_write' = 'false')")
    val values = bodies.zipWithIndex.map { case (b, i) => s"($i, ${Option(b).fold("NULL")(s => "'" + s.replace("'", "''") + "'")})" }
    sql(s"INSERT INTO lance.tm.$name SELECT /*+ COALESCE(1) */ * FROM VALUES ${values.mkString(", ")} AS v(id, body)")
    s"lance.tm.$name"
  }

  test("lance_match tokenizes both sides with pylance's defaults where no index is bound") {
    val rows = sql("""SELECT lance_match('Running shoes', 'run'), lance_match('The zebra', 'the'),
      lance_match(CAST(NULL AS STRING), 'run'), lance_match('Café', 'CAFE'), lance_match('red-hot', 'hot dog'),
      lance_match('anything', 'the of'), lance_match('', 'run')""").collect().head
    assert(rows == Row(true, false, null, true, true, false, false))
    val df = spark.createDataFrame(Seq((1L, "Zebras running"), (2L, "a horse"))).toDF("id", "body")
    assert(df.where("lance_match(body, 'zebra run')").collect().map(_.getLong(0)).toSeq == Seq(1L))
  }

  test("a query that is not a constant string, a column that is not a string or another arity is LANCE_INVALID_ARGUMENT") {
    val t = newTable("errors")
    Seq(s"SELECT * FROM $t WHERE lance_match(body, body)" -> "constant string",
      s"SELECT * FROM $t WHERE lance_match(id, 'x')" -> "string column",
      s"SELECT * FROM $t WHERE lance_match(body)" -> "takes 2 arguments",
      s"SELECT * FROM $t WHERE lance_match(body, NULL)" -> "NULL").foreach { case (q, words) =>
      val e = intercept[Exception](sql(q).collect())
      val lance = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).collectFirst { case l: LanceThrowable => l }
      assert(lance.exists(_.condition.name == "LANCE_INVALID_ARGUMENT"), s"$q: $e")
      assert(e.getMessage.contains(words), e.getMessage)
    }
  }

  test("with an INVERTED index the scan reads only the rows it names, and the call tokenizes as the index does") {
    val t = newTable("indexed")
    index("indexed", ", stem=False")
    val exact = s"SELECT id FROM $t WITH ('data_skipping' = 'false') WHERE lance_match(body, 'shoes zebra')"
    val pushed = s"SELECT id FROM $t WHERE lance_match(body, 'shoes zebra')"
    val (all, expected) = run(sql(exact))
    val (read, got) = run(sql(pushed))
    assert(expected == Seq(0L, 2L, 8L)) // not 11 (zebras): the index does not stem
    assert(got == expected)
    assert(all == bodies.size && read == 3, s"read $read of $all rows")
    assert(sql(pushed).queryExecution.executedPlan.toString.contains("lance_match(body, 'shoes zebra') by INVERTED index body_idx"))
    // A plain DataFrame of the same rows stems: zebras matches zebra.
    assert(sql(s"SELECT id FROM (SELECT id, concat(body, '') AS body FROM $t) WHERE lance_match(body, 'zebra')")
      .collect().map(_.getLong(0)).sorted.toSeq == Seq(2L, 11L))
    // OR keeps the rows of either side; NOT is evaluated on every row.
    assert(run(sql(s"SELECT id FROM $t WHERE lance_match(body, 'zebra') OR id = 5"))._2 == Seq(2L, 5L))
    assert(run(sql(s"SELECT id FROM $t WHERE NOT lance_match(body, 'red')"))._2 ==
      Seq(0L, 2L, 3L, 5L, 6L, 7L, 8L, 10L, 11L))
  }

  test("rows appended, updated and deleted after the index is built are found as exact evaluation finds them") {
    val t = newTable("changed")
    index("changed")
    sql(s"INSERT INTO $t VALUES (100, 'zebra stripes'), (101, 'nothing here')")
    sql(s"UPDATE $t SET body = 'a running zebra' WHERE id = 1")
    sql(s"DELETE FROM $t WHERE id = 2")
    Seq("zebra", "run", "shoes hat", "the", "café").foreach { q =>
      val exact = run(sql(s"SELECT id FROM $t WITH ('data_skipping' = 'false') WHERE lance_match(body, '$q')"))
      val pushed = run(sql(s"SELECT id FROM $t WHERE lance_match(body, '$q')"))
      assert(pushed._2 == exact._2, q)
      assert(pushed._1 <= exact._1, q)
    }
    assert(run(sql(s"SELECT id FROM $t WHERE lance_match(body, 'zebra')"))._2 == Seq(1L, 11L, 100L))
  }

  test("projections and the conditions of UPDATE and DELETE tokenize as the index does") {
    val t = newTable("dml")
    index("dml", ", stem=False")
    def ids(q: String) = sql(q).collect().map(_.getLong(0)).toSeq.sorted
    assert(ids(s"SELECT id FROM (SELECT id, lance_match(body, 'zebra') AS m FROM $t) WHERE m") == Seq(2L))
    sql(s"UPDATE $t SET body = 'zebras moved' WHERE lance_match(body, 'zebra crossing')")
    // The moved row is in a fragment the index does not cover, tokenized with the index's settings: no stemming.
    assert(ids(s"SELECT id FROM $t WHERE lance_match(body, 'zebra')").isEmpty)
    assert(ids(s"SELECT id FROM $t WHERE lance_match(body, 'zebras')") == Seq(2L, 11L))
    sql(s"DELETE FROM $t WHERE lance_match(body, 'shoes')")
    assert(ids(s"SELECT id FROM $t") == Seq(1L, 2L, 3L, 4L, 5L, 6L, 7L, 9L, 10L, 11L))
  }

  test("an INVERTED index sparklance builds serves lance_match as pylance's does") {
    val t = newTable("built")
    sql(s"CREATE INDEX body_fts ON $t USING inverted (body) OPTIONS (stem = false)")
    val (read, got) = run(sql(s"SELECT id FROM $t WHERE lance_match(body, 'shoes zebra')"))
    assert(got == Seq(0L, 2L, 8L) && read == 3, s"read $read rows")
    assert(sql(s"SELECT id FROM $t WHERE lance_match(body, 'zebra')").queryExecution.executedPlan.toString
      .contains("by INVERTED index body_fts"))
  }
}
