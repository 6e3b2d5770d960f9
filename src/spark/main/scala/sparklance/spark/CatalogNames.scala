package sparklance.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{CatalogPlugin, Identifier}

/** Which catalog and identifier a multi-part table name means, as Spark's analyzer resolves it. */
object CatalogNames {
  /** The first part names a catalog if one is registered under it; otherwise the name is in the current catalog. */
  def resolve(spark: SparkSession, parts: Seq[String]): (CatalogPlugin, Identifier) = {
    val manager = spark.sessionState.catalogManager
    parts match {
      case Seq(name) => manager.currentCatalog -> Identifier.of(manager.currentNamespace, name)
      case first +: rest if manager.isCatalogRegistered(first) || first.equalsIgnoreCase("spark_catalog") =>
        manager.catalog(first) -> Identifier.of(rest.init.toArray, rest.last)
      case _ => manager.currentCatalog -> Identifier.of(parts.init.toArray, parts.last)
    }
  }
}
