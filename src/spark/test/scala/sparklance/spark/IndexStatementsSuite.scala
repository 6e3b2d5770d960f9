package sparklance.spark

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.connector.catalog.index.SupportsIndex
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * CREATE INDEX and DROP INDEX, Spark's own statements for DSv2 tables that support indices, build
 * and drop what the create_index / drop_index procedures do. Spark plans these statements itself,
 * so the suite runs on every Spark we support.
 */
class IndexStatementsSuite extends AnyFunSuite with LocalSpark {
  private val vectors = {
    val random = new Random(5)
    (0 until 300).map(i => i.toLong -> Array.fill(4)(random.nextGaussian().toFloat))
  }

  private lazy val table = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.ix")
    sql("CREATE TABLE lance.ix.t (id BIGINT, s STRING, emb ARRAY<FLOAT>) TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '4', " +
      "'max_rows_per_file' = '100', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    val session = spark
    import session.implicits._
    vectors.map { case (i, v) => (i, s"s${i % 7}", v) }.toDF("id", "s", "emb").coalesce(1).writeTo("lance.ix.t").append()
    "lance.ix.t"
  }

  private def indices: Seq[(String, String, Seq[String])] =
    spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog].loadTable(Identifier.of(Array("ix"), "t"))
      .asInstanceOf[SupportsIndex].listIndexes().toSeq.map(i => (i.indexName(), i.indexType(), i.columns().toSeq.map(_.fieldNames().mkString("."))))

  private def version: Long = sql(s"SELECT max(version) FROM $table.history").head().getLong(0)

  private def failure(statement: String): Throwable = intercept[Exception](sql(statement).collect())

  test("CREATE INDEX ... USING builds a vector index the search uses; a zone map without USING") {
    sql(s"CREATE INDEX emb_idx ON $table USING ivf_flat (emb) OPTIONS (num_partitions = 2, metric = 'l2')")
    sql(s"CREATE INDEX s_idx ON TABLE $table (s) OPTIONS (rows_per_zone = 50)")
    assert(indices == Seq(("emb_idx", "IVF_FLAT", Seq("emb")), ("s_idx", "ZONEMAP", Seq("s"))))
    // Every partition probed: the index's answer is the exact one.
    val query = Array(0.5f, -0.25f, 1f, 0f)
    val got = sql(s"SELECT id FROM vector_search(table => '$table', vector_column => 'emb', " +
      s"query_vector => array(${query.mkString(", ")}), k => 7, nprobes => 2)").collect().map(_.getLong(0)).toSeq
    def l2(v: Array[Float]) = v.zip(query).map { case (a, b) => (a - b).toDouble * (a - b) }.sum
    assert(got == vectors.sortBy { case (i, v) => (l2(v), i) }.take(7).map(_._1))
  }

  test("an index of that name is an error unless IF NOT EXISTS, which changes nothing") {
    val before = version
    val e = failure(s"CREATE INDEX emb_idx ON $table USING ivf_pq (emb) OPTIONS (num_partitions = 2, num_sub_vectors = 2)")
    assert(e.isInstanceOf[AnalysisException] && e.getMessage.contains("emb_idx"), e)
    sql(s"CREATE INDEX IF NOT EXISTS emb_idx ON $table USING ivf_pq (emb) OPTIONS (num_partitions = 2, num_sub_vectors = 2)")
    assert(version == before && indices.map(_._2).contains("IVF_FLAT"))
  }

  test("bad requests are refused by name, as the procedure refuses them, and write nothing") {
    val before = version
    val cases = Seq(
      s"CREATE INDEX b ON $table USING ngram (s)" -> "not 'ngram'",
      s"CREATE INDEX b ON $table USING inverted (s) OPTIONS (with_position = 'maybe')" -> "with_position must be true or false",
      s"CREATE INDEX b ON $table USING ivf_pq (emb) OPTIONS (num_partitions = 2)" -> "num_sub_vectors is required",
      s"CREATE INDEX b ON $table USING ivf_flat (emb) OPTIONS (num_partitions = 'two')" -> "num_partitions must be a whole number",
      s"CREATE INDEX b ON $table USING ivf_flat (emb) OPTIONS (nprobes = 2)" -> "unknown option nprobes",
      s"CREATE INDEX b ON $table (id) OPTIONS (metric = 'l2')" -> "metric apply to vector indices",
      s"CREATE INDEX b ON $table USING ivf_flat (emb) OPTIONS (metric = 'hamming')" -> "unknown metric 'hamming'",
      s"CREATE INDEX b ON $table (id, s)" -> "one top-level column",
      s"CREATE INDEX b ON $table USING ivf_flat (emb OPTIONS (num_partitions = 2)) OPTIONS (num_partitions = 3)" -> "given twice")
    for ((statement, words) <- cases) {
      val e = failure(statement)
      assert(e.getMessage.contains(words) && e.getMessage.contains("LANCE_"), s"$statement: $e")
    }
    // Spark resolves the columns itself.
    assert(failure(s"CREATE INDEX b ON $table (nosuch)").getMessage.contains("UNRESOLVED_COLUMN"))
    assert(version == before && indices.map(_._1) == Seq("emb_idx", "s_idx"))
  }

  test("DROP INDEX removes an index; a missing one is an error unless IF EXISTS") {
    val before = version
    sql(s"DROP INDEX s_idx ON $table")
    assert(indices.map(_._1) == Seq("emb_idx") && version == before + 1)
    val e = failure(s"DROP INDEX s_idx ON $table")
    assert(e.isInstanceOf[AnalysisException] && e.getMessage.contains("s_idx"), e)
    sql(s"DROP INDEX IF EXISTS s_idx ON $table")
    assert(version == before + 1)
  }
}
