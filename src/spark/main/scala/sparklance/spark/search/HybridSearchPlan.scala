package sparklance.spark.search

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.types.{FloatType, StructField}

/**
 * How `hybrid_search` finds its rows, as LanceDB's hybrid query with its default reranker: the
 * k nearest rows of the vector search ([[VectorSearchPlan.hits]]: the index's, else the exact
 * search's) and the k best BM25 matches ([[TextSearchPlan.hits]]) of the same table version,
 * fused by reciprocal rank fusion ([[ReciprocalRankFusion]]), the k most relevant read by row id
 * ([[HitRows.plan]]). A `filter` is a prefilter of both sides: each finds its k best among the
 * rows that pass it.
 */
final case class HybridSearchPlan(spark: SparkSession, args: HybridSearchArguments) {
  import HybridSearchPlan._

  def logicalPlan: LogicalPlan = {
    // One table, loaded once: both sides search the same version even while writers commit.
    val searched = SearchedTable(spark, HybridSearchFunction.name, args.vector.table, args.vector.version)
    // A bad filter is named as this function's argument before either side runs it.
    args.text.filter.foreach(SearchFilter.check(searched, _))
    val vector = VectorSearchPlan(searched, args.vector).hits
    val text = TextSearchPlan(searched, args.text).hits
    val fused = ReciprocalRankFusion.fuse(Seq(vector, text), args.rrfK, args.vector.k)
    val rows = fused.map { f =>
      HitRows.Scored(f.rowId, f.address, (if (args.allScores) f.values else Nil) :+ Float.box(f.score))
    }
    val sides = if (args.allScores) Seq(VectorSearchPlan.DistanceColumn, TextSearchPlan.ScoreColumn) else Nil
    HitRows.plan(searched, searched.schema, rows,
      sides.map(StructField(_, FloatType, nullable = true)) :+ StructField(RelevanceColumn, FloatType, nullable = false))
  }
}

object HybridSearchPlan {
  /** The fused score of the answer, as LanceDB names it. */
  val RelevanceColumn = "_relevance_score"
}
