package sparklance.spark

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{call_function, col}
import org.scalatest.funsuite.AnyFunSuite
import sparklance.spark.search.NearestJoinRule

/**
 * Nearest joins of a query table with a Lance table (search.NearestJoinRule): APPROX with an index
 * probes it per query-side task, answering as `vector_search` for each query; EXACT, or APPROX
 * without an index, searches exactly and answers as Spark's brute-force plan.
 */
class NearestJoinSuite extends AnyFunSuite with LocalSpark {
  private val dim = 4
  private val random = new scala.util.Random(7)
  // Clustered rows: 6 centres, 50 rows each.
  private val centres = Array.fill(6)(Array.fill(dim)(random.nextGaussian().toFloat * 4))
  private val rows = (0 until 300).map(i => i.toLong -> centres(i % 6).map(c => c + random.nextGaussian().toFloat * 0.5f))
  private val queries = (0 until 24).map(i => i.toLong -> centres(i % 6).map(c => c + random.nextGaussian().toFloat))

  private def literal(v: Array[Float]) = s"array(${v.map(x => s"CAST($x AS FLOAT)").mkString(", ")})"

  private def table(name: String): String = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.nj")
    sql(s"CREATE TABLE lance.nj.$name (id BIGINT, emb ARRAY<FLOAT>) TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '$dim', " +
      "'max_rows_per_file' = '100')")
    sql(s"INSERT INTO lance.nj.$name VALUES " + rows.map { case (i, v) => s"($i, ${literal(v)})" }.mkString(", "))
    s"lance.nj.$name"
  }

  private lazy val queryView = {
    sql("CREATE OR REPLACE TEMPORARY VIEW q AS SELECT * FROM VALUES " +
      queries.map { case (i, v) => s"(${i}L, ${literal(v)})" }.mkString(", ") + " AS q(qid, v)")
    "q"
  }

  private def matches(df: DataFrame): Map[Long, Set[Long]] =
    df.collect().groupBy(_.getLong(0)).map { case (q, rs) => q -> rs.map(_.getLong(1)).toSet }

  private def physical(df: DataFrame): String = { df.collect(); df.queryExecution.executedPlan.toString }

  private def crossJoined(plan: String) = plan.contains("BroadcastNestedLoopJoin") || plan.contains("CartesianProduct")

  /** For each query, the ids `vector_search` returns. */
  private def searched(t: String, metric: String, k: Int): Map[Long, Set[Long]] = queries.map { case (q, v) =>
    q -> sql(s"SELECT id FROM vector_search(table => '$t', vector_column => 'emb', query_vector => ${literal(v)}, " +
      s"k => $k, distance_type => '$metric', nprobes => 6)").collect().map(_.getLong(0)).toSet
  }.toMap

  private def exact(distance: (Array[Float], Array[Float]) => Double, k: Int, live: Long => Boolean = _ => true): Map[Long, Set[Long]] =
    queries.map { case (q, v) => q -> rows.filter(r => live(r._1)).sortBy { case (i, x) => (distance(v, x), i) }.take(k).map(_._1).toSet }.toMap

  private val l2 = (a: Array[Float], b: Array[Float]) => a.zip(b).map { case (x, y) => (x.toDouble - y) * (x - y) }.sum
  private def dot(a: Array[Float], b: Array[Float]) = a.zip(b).map { case (x, y) => x.toDouble * y }.sum
  private val cosine = (a: Array[Float], b: Array[Float]) => 1 - dot(a, b) / math.sqrt(dot(a, a) * dot(b, b))

  test("without an index, APPROX NEAREST searches exactly (no cross join); with the exact search off, Spark's plan runs") {
    val t = table("plain")
    val query = s"SELECT q.qid, t.id FROM $queryView q JOIN $t t APPROX NEAREST 5 BY DISTANCE vector_l2_distance(q.v, t.emb)"
    val df = sql(query)
    val plan = physical(df)
    assert(!crossJoined(plan) && plan.contains("ExactNearest"), plan)
    assert(matches(df) == exact(l2, 5))
    withSQLConf(NearestJoinRule.ExactJoinConf -> "false") {
      val brute = sql(query)
      assert(crossJoined(physical(brute)))
      assert(matches(brute) == exact(l2, 5))
    }
  }

  // Small whole numbers: many rows at equal distances.
  private val tieDim = 12
  private def tied(n: Int, seed: Int) = { val r = new scala.util.Random(seed); Array.fill(n)(Array.fill(tieDim)((r.nextInt(5) - 2).toFloat)) }

  /** Per query, the ids and Spark's values of its matches (None: LEFT OUTER's row without a match). */
  private def ranked(df: DataFrame): Map[Long, Seq[(Option[Long], Option[Float])]] =
    df.collect().groupBy(_.getLong(0)).map { case (q, rs) =>
      q -> rs.toSeq.map(r => (Option.when(!r.isNullAt(1))(r.getLong(1)), Option.when(!r.isNullAt(2))(r.getFloat(2))))
    }

  /**
   * The exact search's answer is Spark's plan's: per query the same values, and the same rows but
   * for which of those at the k-th value (equal values) each keeps.
   */
  private def assertSameAnswer(query: String, similarity: Boolean): Unit = {
    val ours = sql(query)
    val plan = physical(ours)
    assert(plan.contains("ExactNearest") && !crossJoined(plan), plan)
    val brute = withSQLConf(NearestJoinRule.ExactJoinConf -> "false") {
      val df = sql(query)
      assert(crossJoined(physical(df)))
      ranked(df)
    }
    val got = ranked(ours)
    assert(got.keySet == brute.keySet, query)
    for ((q, theirs) <- brute) {
      def values(rs: Seq[(Option[Long], Option[Float])]) = rs.map(_._2).sortBy(_.map(v => if (similarity) -v else v))
      assert(values(got(q)) == values(theirs), (query, q))
      val bar = values(theirs).last
      def better(rs: Seq[(Option[Long], Option[Float])]) = rs.filter(_._2 != bar).map(_._1).toSet
      assert(better(got(q)) == better(theirs), (query, q))
    }
  }

  test("EXACT NEAREST searches blocks of queries and answers as Spark's brute-force plan: ties, deletes, NULLs, filters, LEFT OUTER") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.nj")
    // Two fragments; a NULL vector and a zero vector (no cosine similarity); duplicates; deleted rows.
    sql(s"CREATE TABLE lance.nj.ties (id BIGINT, emb ARRAY<FLOAT>) TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '$tieDim', " +
      "'max_rows_per_file' = '120')")
    val vectors = tied(200, 3)
    sql("INSERT INTO lance.nj.ties VALUES " + (vectors.indices.map(i => s"($i, ${literal(vectors(i))})") ++
      Seq(s"(200, CAST(NULL AS ARRAY<FLOAT>))", s"(201, ${literal(Array.fill(tieDim)(0f))})", s"(202, ${literal(vectors(5))})")).mkString(", "))
    sql("DELETE FROM lance.nj.ties WHERE id % 7 = 3")
    val qs = tied(16, 4) :+ vectors(5) :+ Array.fill(tieDim)(0f)
    sql("CREATE OR REPLACE TEMPORARY VIEW tq AS SELECT * FROM VALUES " + (qs.indices.map(i => s"(${i}L, ${literal(qs(i))})") :+
      "(99L, CAST(NULL AS ARRAY<FLOAT>))").mkString(", ") + " AS tq(qid, v)")
    // Two queries per block: blocks, and a last block short.
    withSQLConf(NearestJoinRule.ExactBlockConf -> "2") {
      for ((direction, function) <- Seq(("DISTANCE", "vector_l2_distance"), ("SIMILARITY", "vector_cosine_similarity"),
          ("SIMILARITY", "vector_inner_product"))) {
        val similarity = direction == "SIMILARITY"
        assertSameAnswer(s"SELECT q.qid, t.id, $function(q.v, t.emb) FROM tq q JOIN lance.nj.ties t " +
          s"EXACT NEAREST 5 BY $direction $function(q.v, t.emb)", similarity)
        assertSameAnswer(s"SELECT q.qid, t.id, $function(t.emb, q.v) FROM tq q LEFT OUTER JOIN (SELECT * FROM lance.nj.ties WHERE id % 2 = 0) t " +
          s"EXACT NEAREST 7 BY $direction $function(t.emb, q.v)", similarity)
      }
      // More neighbours asked for than rows: every live row with a vector.
      assertSameAnswer("SELECT q.qid, t.id, vector_l2_distance(q.v, t.emb) FROM tq q JOIN lance.nj.ties t " +
        "EXACT NEAREST 400 BY DISTANCE vector_l2_distance(q.v, t.emb)", similarity = false)
    }
    // The DataFrame form.
    val frame = spark.table("tq").as("q").nearestByJoin(spark.table("lance.nj.ties").as("t"),
      call_function("vector_inner_product", col("q.v"), col("t.emb")), 3, "exact", "similarity")
    assert(physical(frame).contains("ExactNearest"))
    assert(frame.count() == 3 * (qs.size))
    // A query vector of another dimension: Spark's own error, as its plan raises it.
    val wrong = intercept[Exception](sql("SELECT * FROM (SELECT 1L AS qid, array(CAST(1 AS FLOAT)) AS v) q JOIN lance.nj.ties t " +
      "EXACT NEAREST 2 BY DISTANCE vector_l2_distance(q.v, t.emb)").collect())
    assert(wrong.getMessage.contains("VECTOR_DIMENSION_MISMATCH"), wrong.getMessage)
  }

  test("with an l2 index, APPROX NEAREST BY DISTANCE probes the index per query row and answers as vector_search") {
    val t = table("l2")
    sql("CALL lance.system.create_index(table => 'nj.l2', column => 'emb', index_type => 'IVF_FLAT', num_partitions => 6)")
    withSQLConf("spark.sparklance.vector_search.nprobes" -> "6") {
      val df = sql(s"SELECT q.qid, t.id FROM $queryView q JOIN $t t APPROX NEAREST 5 BY DISTANCE vector_l2_distance(q.v, t.emb)")
      val plan = physical(df)
      assert(!crossJoined(plan) && plan.contains("lance_index_probe"), plan)
      // IVF_FLAT with every partition probed is exact.
      assert(matches(df) == searched(t, "l2", 5))
      assert(matches(df) == exact(l2, 5))
      // The DataFrame form, and the table's other columns as they are.
      val frame = spark.table(queryView).as("q").nearestByJoin(spark.table(t).as("t"),
        call_function("vector_l2_distance", col("q.v"), col("t.emb")), 3, "approx", "distance")
      assert(!crossJoined(physical(frame)))
      val got = frame.select("qid", "id", "emb").collect()
      assert(got.groupBy(_.getLong(0)).map { case (q, rs) => q -> rs.map(_.getLong(1)).toSet } == exact(l2, 3))
      val embs = rows.toMap
      got.foreach(r => assert(r.getSeq[Float](2) == embs(r.getLong(1)).toSeq))
      // Filters of the table side are a prefilter: each query gets the 5 nearest rows that pass.
      val filtered = sql(s"SELECT q.qid, t.id FROM $queryView q JOIN (SELECT id, emb FROM $t WHERE id % 2 = 1) t " +
        "APPROX NEAREST 5 BY DISTANCE vector_l2_distance(q.v, t.emb)")
      assert(!crossJoined(physical(filtered)))
      assert(matches(filtered) == exact(l2, 5, _ % 2 == 1))
      // EXACT searches exactly, without the index.
      val exactPlan = physical(sql(s"SELECT q.qid, t.id FROM $queryView q JOIN $t t EXACT NEAREST 5 BY DISTANCE vector_l2_distance(q.v, t.emb)"))
      assert(exactPlan.contains("ExactNearest") && !exactPlan.contains("lance_index_probe"), exactPlan)
      // Deleted rows never come back; appended rows (which the index does not cover) are searched exactly.
      sql(s"DELETE FROM $t WHERE id % 3 = 0")
      sql(s"INSERT INTO $t VALUES " + queries.take(6).map { case (i, v) => s"(${1000 + i}, ${literal(v)})" }.mkString(", "))
      val after = sql(s"SELECT q.qid, t.id FROM $queryView q JOIN $t t APPROX NEAREST 5 BY DISTANCE vector_l2_distance(t.emb, q.v)")
      assert(!crossJoined(physical(after)))
      val afterMatches = matches(after)
      assert(afterMatches == searched(t, "l2", 5))
      assert(afterMatches.values.flatten.forall(id => id >= 1000 || id % 3 != 0))
      assert((0 until 6).forall(q => afterMatches(q.toLong).contains(1000L + q)))
    }
  }

  test("BY SIMILARITY with cosine and dot indices, and LEFT OUTER keeping queries without a vector") {
    val t = table("sim")
    sql("CALL lance.system.create_index(table => 'nj.sim', column => 'emb', name => 'emb_cos', index_type => 'IVF_FLAT', num_partitions => 6, metric => 'cosine')")
    sql("CALL lance.system.create_index(table => 'nj.sim', column => 'emb', name => 'emb_dot', index_type => 'IVF_FLAT', num_partitions => 6, metric => 'dot')")
    withSQLConf("spark.sparklance.vector_search.nprobes" -> "6") {
      for ((function, metric, distance) <- Seq(("vector_cosine_similarity", "cosine", cosine),
          ("vector_inner_product", "dot", (a: Array[Float], b: Array[Float]) => 1 - dot(a, b)))) {
        val df = sql(s"SELECT q.qid, t.id FROM $queryView q JOIN $t t APPROX NEAREST 4 BY SIMILARITY $function(q.v, t.emb)")
        assert(!crossJoined(physical(df)), metric)
        assert(matches(df) == searched(t, metric, 4), metric)
        assert(matches(df) == exact(distance, 4), metric)
      }
      // An l2 join on this table has no l2 index: an exact search.
      assert(physical(sql(s"SELECT q.qid, t.id FROM $queryView q JOIN $t t APPROX NEAREST 4 BY DISTANCE vector_l2_distance(q.v, t.emb)")).contains("ExactNearest"))
      val outer = sql(s"SELECT q.qid, t.id FROM (SELECT * FROM $queryView UNION ALL SELECT 99L, CAST(NULL AS ARRAY<FLOAT>)) q " +
        s"LEFT OUTER JOIN $t t APPROX NEAREST 2 BY SIMILARITY vector_cosine_similarity(q.v, t.emb)")
      assert(!crossJoined(physical(outer)))
      val got = outer.collect()
      assert(got.filter(_.getLong(0) == 99).map(r => r.isNullAt(1)).toSeq == Seq(true))
      assert(got.count(_.getLong(0) != 99) == 2 * queries.size)
    }
  }
}
