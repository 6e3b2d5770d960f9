package sparklance.spark

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{call_function, col}
import org.scalatest.funsuite.AnyFunSuite

/**
 * `APPROX NEAREST` joins of a query table with a Lance table: Spark's brute-force plan without an
 * index, index probes per query-side task with one (search.NearestJoinRule), whose answers equal
 * `vector_search` for each query.
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

  test("without an index, Spark's APPROX NEAREST plan (a cross join) runs on a Lance table") {
    val t = table("plain")
    val df = sql(s"SELECT q.qid, t.id FROM $queryView q JOIN $t t APPROX NEAREST 5 BY DISTANCE vector_l2_distance(q.v, t.emb)")
    assert(crossJoined(physical(df)))
    assert(matches(df) == exact(l2, 5))
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
      // EXACT keeps Spark's plan.
      assert(crossJoined(physical(sql(s"SELECT q.qid, t.id FROM $queryView q JOIN $t t EXACT NEAREST 5 BY DISTANCE vector_l2_distance(q.v, t.emb)"))))
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
      // An l2 join on this table has no l2 index: Spark's plan.
      assert(crossJoined(physical(sql(s"SELECT q.qid, t.id FROM $queryView q JOIN $t t APPROX NEAREST 4 BY DISTANCE vector_l2_distance(q.v, t.emb)"))))
      val outer = sql(s"SELECT q.qid, t.id FROM (SELECT * FROM $queryView UNION ALL SELECT 99L, CAST(NULL AS ARRAY<FLOAT>)) q " +
        s"LEFT OUTER JOIN $t t APPROX NEAREST 2 BY SIMILARITY vector_cosine_similarity(q.v, t.emb)")
      assert(!crossJoined(physical(outer)))
      val got = outer.collect()
      assert(got.filter(_.getLong(0) == 99).map(r => r.isNullAt(1)).toSeq == Seq(true))
      assert(got.count(_.getLong(0) != 99) == 2 * queries.size)
    }
  }
}
