package sparklance.spark.search

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeArrayData}
import org.apache.spark.sql.catalyst.util.{ArrayData, SQLOrderingUtil}
import org.apache.spark.sql.types.{ArrayType, FloatType}
import sparklance.format.index.vector.{TopHits, VectorHit, VectorMetric}

/**
 * The ranking of an exact nearest join: Spark's own vector function (`vectorL2Distance`,
 * `vectorCosineSimilarity` or `vectorInnerProduct` of VectorFunctionImplUtils) with its query
 * argument bound to ordinal 0 and its table argument to ordinal 1, the metric it computes, and
 * whether larger is nearer (BY SIMILARITY).
 */
final case class NearestRanking(function: Expression, metric: VectorMetric, similarity: Boolean) {
  /** Spark's value for a query and a table vector (null: the pair never matches), as Spark's plan computes it. */
  def value(query: ArrayData, row: ArrayData): java.lang.Float =
    function.eval(InternalRow(query, row)).asInstanceOf[java.lang.Float]

  /** Best first, as Spark's plan ranks (its float order: NaN above every number, -0.0 = 0.0); ties by row id. */
  val ordering: Ordering[VectorHit] = (a, b) => {
    val c = if (similarity) SQLOrderingUtil.compareFloats(b.distance, a.distance) else SQLOrderingUtil.compareFloats(a.distance, b.distance)
    if (c != 0) c else java.lang.Long.compare(a.rowId, b.rowId)
  }
}

object NearestRanking {
  /** The two vector arguments of `call` (a StaticInvoke of Spark's vector function) replaced by ordinals 0 (query) and 1 (table). */
  def bind(call: Expression, queryFirst: Boolean): Expression = {
    val query = BoundReference(0, ArrayType(FloatType), nullable = true)
    val table = BoundReference(1, ArrayType(FloatType), nullable = true)
    call.withNewChildren((if (queryFirst) Seq(query, table) else Seq(table, query)) ++ call.children.drop(2))
  }
}

/**
 * One block of query vectors of an exact nearest join, answered by one pass over the table's
 * vectors ([[offer]] for each live row): each query keeps the k best rows by Spark's own value of
 * the ranking function ([[NearestRanking]]), ties by row id, so the answer is the one Spark's
 * brute-force plan gives up to the order of equal values.
 *
 * Spark's value is computed for few pairs: a float kernel scores each table vector against every
 * query of the block at once (the block's queries stored dimension-major, so that the loop over
 * queries is a vector loop the JIT compiles to SIMD), and a pair whose score, widened by a bound on
 * its rounding error, cannot beat the query's k-th best value so far is skipped. Spark's function
 * decides every other pair (and every pair the bound does not cover: huge, tiny, NaN or infinite
 * vectors, a query of another dimension, which Spark's function then refuses). Spark 4.2 sums in
 * float and 4.3 in double, in another order than the kernel: the bound covers both and any sum of
 * `dim` rounded terms.
 *
 * Memory: the queries (`dim` floats each, twice), k hits per query, `dim` floats of scratch.
 */
final class ExactNearestBlock(ranking: NearestRanking, dim: Int, k: Int, queries: IndexedSeq[ArrayData]) {
  import ExactNearestBlock._

  private val n = queries.size
  private val metric = ranking.metric
  private val similarity = ranking.similarity
  private val tops = Array.fill(n)(new TopHits(k, ranking.ordering))
  // The value a row must reach to be kept (the k-th best so far), or ±Inf before k rows are kept.
  private val bar = Array.fill(n)(if (similarity) Float.NegativeInfinity else Float.PositiveInfinity)
  private val state = new Array[Byte](n)
  private val lengths = new Array[Double](n) // norms of the queries
  private val queryT = new Array[Float](dim * n) // dimension-major: queryT(i * n + j) is item i of query j
  private val sums = new Array[Float](n)
  private var fast = 0

  queries.indices.foreach { j =>
    val q = queries(j)
    state(j) =
      if (q == null) Skip
      else if (q.numElements() != dim) Exact // Spark's function refuses the pair: let it say so
      else if ((0 until dim).exists(q.isNullAt)) Skip // Spark's value is NULL for every row
      else {
        var s = 0.0
        var i = 0
        while (i < dim) { val v = q.getFloat(i); queryT(i * n + j) = v; s += v.toDouble * v; i += 1 }
        lengths(j) = math.sqrt(s)
        if (covered(s)) { fast += 1; Fast } else Exact
      }
  }

  // Squared norms the error bound covers: far from float overflow (Spark 4.2 sums in float), and,
  // for cosine, from the underflow below which Spark's value is NULL.
  private def covered(squaredNorm: Double): Boolean =
    squaredNorm <= MaxSquaredNorm && (metric != VectorMetric.Cosine || squaredNorm >= MinSquaredNorm)

  private val tolerance = 4.0 * (dim + 8) * Unit
  private val cosineError = (2 * tolerance + Absolute).toFloat

  /** A live row of the table that passes the join's filters: its id, address and vector (`dim` floats of `x` from `at`). */
  def offer(rowId: Long, address: Long, x: Array[Float], at: Int): Unit = {
    var rowNorm = 0.0
    var i = 0
    while (i < dim) { val v = x(at + i); rowNorm += v.toDouble * v; i += 1 }
    val scored = fast > 0 && covered(rowNorm)
    if (scored) score(x, at)
    val length = math.sqrt(rowNorm)
    var row: ArrayData = null
    var j = 0
    while (j < n) {
      val s = state(j)
      if (s != Skip && !(s == Fast && scored && beyond(j, length))) {
        if (row == null) row = UnsafeArrayData.fromPrimitiveArray(java.util.Arrays.copyOfRange(x, at, at + dim))
        val v = ranking.value(queries(j), row)
        if (v != null) {
          val top = tops(j)
          top.offer(rowId, address, v)
          top.bar.foreach(h => bar(j) = h.distance)
        }
      }
      j += 1
    }
  }

  /** Whether the kernel's value for query `j` and the row scored (of norm `length`), give or take its error, is worse than the query's bar. */
  private def beyond(j: Int, length: Double): Boolean = {
    var value = 0f
    var error = 0f
    if (metric == VectorMetric.L2) {
      value = math.sqrt(sums(j)).toFloat
      error = (tolerance * value + Absolute).toFloat
    } else if (metric == VectorMetric.Dot) {
      value = sums(j)
      error = (tolerance * lengths(j) * length + Absolute).toFloat
    } else {
      value = (sums(j) / (lengths(j) * length)).toFloat
      error = cosineError
    }
    if (similarity) value + error < bar(j) else value - error > bar(j)
  }

  /** The kernel's values of row `x` for every query: sums of squared differences (l2) or dot products. */
  private def score(x: Array[Float], at: Int): Unit = {
    java.util.Arrays.fill(sums, 0f)
    val l2 = metric == VectorMetric.L2
    var i = 0
    while (i < dim) {
      val v = x(at + i)
      val base = i * n
      var j = 0
      if (l2) while (j < n) { val d = queryT(base + j) - v; sums(j) += d * d; j += 1 }
      else while (j < n) { sums(j) += queryT(base + j) * v; j += 1 }
      i += 1
    }
  }

  /** Each query's hits, best first (Spark's value in `distance`). */
  def result: IndexedSeq[IndexedSeq[VectorHit]] = tops.toIndexedSeq.map(_.result)
}

object ExactNearestBlock {
  private val Skip: Byte = 0
  private val Fast: Byte = 1
  private val Exact: Byte = 2
  private val Unit = math.pow(2, -24) // float's unit roundoff
  private val Absolute = 1e-20 // covers products that underflow in float but not in double
  private val MaxSquaredNorm = 1e15
  private val MinSquaredNorm = 1e-15
}
