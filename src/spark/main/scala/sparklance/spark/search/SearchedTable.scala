package sparklance.spark.search

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.analysis.AsOfVersion
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.connector.catalog.TableCatalog
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.spark.{CatalogNames, LanceTable}

/**
 * The Lance table a search table function (`function`) names: `name` as Spark names tables
 * (`lance.db.t`, ``lance.`/path/t.lance` ``), loaded from its catalog at `version` (a number or a
 * tag; None: the latest). No query is analyzed: the name is all there is to resolve. A temporary
 * view is not a table. Bad names and columns are IllegalArgumentExceptions naming the function.
 */
final case class SearchedTable(spark: SparkSession, function: String, name: String, version: Option[String]) {
  lazy val relation: DataSourceV2Relation = {
    val parts = nameParts(name)
    if (spark.sessionState.catalog.isTempView(parts)) notLance("a temporary view, not a Lance table")
    val (catalog, ident) = CatalogNames.resolve(spark, parts)
    val tables = catalog match {
      case t: TableCatalog => t
      case _ => notLance(s"in catalog ${catalog.name()}, which holds no tables")
    }
    version.fold(tables.loadTable(ident))(tables.loadTable(ident, _)) match {
      case t: LanceTable => DataSourceV2Relation.create(t, Some(catalog), Some(ident), CaseInsensitiveStringMap.empty(),
        version.map(AsOfVersion(_)))
      case _ => notLance("not a Lance table")
    }
  }

  /** The Lance table (at the version searched). */
  lazy val table: LanceTable = relation.table.asInstanceOf[LanceTable]

  lazy val schema: StructType = relation.schema

  /** The table's rows, as a DataFrame (for filters, and answers a Spark job reads). */
  lazy val rows: DataFrame = VectorSearchPlan.dataFrame(spark, relation)

  /** The column `column` names (case-insensitively). */
  def field(column: String): StructField = schema.find(_.name.equalsIgnoreCase(column)).getOrElse(throw new IllegalArgumentException(
    s"$function: $name has no column '$column'; its columns are ${schema.fieldNames.mkString(", ")}"))

  /** The columns `names` name, in that order; each at most once. */
  def fields(names: Seq[String]): StructType = {
    names.groupBy(_.toLowerCase(java.util.Locale.ROOT)).collectFirst { case (_, same) if same.size > 1 =>
      throw new IllegalArgumentException(s"$function: column '${same.head}' is selected twice")
    }
    StructType(names.map(field))
  }

  /** The parts of a table name as Spark's parser splits it; plain names (`lance.db.t`) without running the parser. */
  private def nameParts(name: String): Seq[String] = {
    val plain = name.split("\\.", -1).toSeq
    def simple(part: String) = part.nonEmpty && (part.head.isLetter || part.head == '_') &&
      part.forall(c => c < 128 && (c.isLetterOrDigit || c == '_'))
    if (plain.forall(simple)) plain else spark.sessionState.sqlParser.parseMultipartIdentifier(name)
  }

  private def notLance(why: String): Nothing = throw new IllegalArgumentException(s"$function: $name is $why")
}
