package sparklance.spark.search

import com.fasterxml.jackson.databind.ObjectMapper
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
  /** The option naming the table's columns the answer holds, which the table function does not take. */
  val ColumnsOption = "columns"
  /** The arguments a call gives apart from its options. */
  private val Given = Set("table", "vector_column", "query_vector", "k")

  /**
   * The `k` rows of `table` (`lance.db.t`) nearest `query` by the vector column `column`, with
   * their `_distance`, nearest first. `options`: the table function's other arguments by name
   * (distance_type, filter, nprobes, refine_factor, version; numbers as numbers), and `columns`,
   * the table's columns the answer holds before `_distance` (a java.util.List or a Seq of names;
   * default all).
   */
  def search(session: SparkSession, table: String, column: String, query: Array[Float], k: Int,
      options: java.util.Map[String, Any]): DataFrame = LanceErrors.convertingArguments() {
    val named = Option(options).fold(Map.empty[String, Any])(_.asScala.toMap)
    val columns = named.get(ColumnsOption).filter(_ != null).map {
      case names: java.util.List[_] => names.asScala.toSeq.map(String.valueOf)
      case names: Seq[_] => names.map(String.valueOf)
      case other => VectorSearchArguments.bad(s"option '$ColumnsOption' must be a list of column names, got $other")
    }
    val arguments = named - ColumnsOption
    arguments.keys.foreach { name =>
      if (Given.contains(name)) VectorSearchArguments.twice(name)
      if (!VectorSearchArguments.Names.contains(name)) VectorSearchArguments.unknown(name)
    }
    val args = VectorSearchArguments.of(arguments ++ Map("table" -> table, "vector_column" -> column, "query_vector" -> query, "k" -> k),
      columns)
    val classic = session match {
      case c: ClassicSession => c
      case other => throw new IllegalArgumentException(s"vector_search needs a classic Spark session, got ${other.getClass.getName}")
    }
    VectorSearchPlan.dataFrame(classic, VectorSearchPlan(classic, args).logicalPlan)
  }

  private lazy val json = new ObjectMapper()

  /**
   * [[search]] as Python calls it, in one py4j call: the query as float32 values, little-endian
   * (numpy's `<f4`), the options as a JSON object (py4j would build a Java map or list with a call
   * per entry, each a round trip to Python and back).
   */
  def searchFloat32(session: SparkSession, table: String, column: String, query: Array[Byte], k: Int, options: String): DataFrame = {
    val parsed = LanceErrors.convertingArguments() {
      if (query == null || query.length % 4 != 0) VectorSearchArguments.bad(
        s"argument 'query_vector' must be float32 values, 4 bytes each, got ${Option(query).fold("NULL")(q => s"${q.length} bytes")}")
      Option(options).fold(new java.util.HashMap[String, Any]())(json.readValue(_, classOf[java.util.HashMap[String, Any]]))
    }
    val floats = new Array[Float](query.length / 4)
    ByteBuffer.wrap(query).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(floats)
    search(session, table, column, floats, k, parsed)
  }
}
