package sparklance.spark.search

import java.nio.{ByteBuffer, ByteOrder}
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import scala.jdk.CollectionConverters._
import sparklance.spark.errors.LanceErrors

/**
 * `vector_search` as a call with the query vector as a value rather than SQL text, so that nothing
 * parses it (Python's `sparklance.vector_search`): the same arguments, checks, search and answer as
 * the table function ([[VectorSearchArguments]], [[VectorSearchPlan]]). An answer read on the
 * driver is a DataFrame over a LocalRelation, whose `collect()` runs no Spark job.
 */
object VectorSearches {
  /** The arguments a call gives apart from `options`. */
  private val Given = Set("table", "vector_column", "query_vector", "k")

  /**
   * The `k` rows of `table` (`lance.db.t`) nearest `query` by the vector column `column`, with
   * their `_distance`, nearest first. `options`: the table function's other arguments by name
   * (distance_type, filter, nprobes, refine_factor, version; numbers as numbers). `columns`: the
   * table's columns the answer holds, before `_distance` (null: all).
   */
  def search(session: SparkSession, table: String, column: String, query: Array[Float], k: Int,
      options: java.util.Map[String, Any], columns: java.util.List[String]): DataFrame = LanceErrors.convertingArguments() {
    val named = Option(options).fold(Map.empty[String, Any])(_.asScala.toMap)
    named.keys.foreach { name =>
      if (Given.contains(name)) VectorSearchArguments.twice(name)
      if (!VectorSearchArguments.Names.contains(name)) VectorSearchArguments.unknown(name)
    }
    val args = VectorSearchArguments.of(named ++ Map("table" -> table, "vector_column" -> column, "query_vector" -> query, "k" -> k),
      Option(columns).map(_.asScala.toSeq))
    val classic = session match {
      case c: ClassicSession => c
      case other => throw new IllegalArgumentException(s"vector_search needs a classic Spark session, got ${other.getClass.getName}")
    }
    VectorSearchPlan.dataFrame(classic, VectorSearchPlan(classic, args).logicalPlan)
  }

  /** [[search]] with the query as float32 values, little-endian (as Python's `array('f').tobytes()` on x86 and ARM). */
  def searchFloat32(session: SparkSession, table: String, column: String, query: Array[Byte], k: Int,
      options: java.util.Map[String, Any], columns: java.util.List[String]): DataFrame = {
    if (query == null || query.length % 4 != 0) LanceErrors.convertingArguments()(VectorSearchArguments.bad(
      s"argument 'query_vector' must be float32 values, 4 bytes each, got ${Option(query).fold("NULL")(q => s"${q.length} bytes")}"))
    val floats = new Array[Float](query.length / 4)
    ByteBuffer.wrap(query).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(floats)
    search(session, table, column, floats, k, options, columns)
  }
}
