package sparklance.spark

import java.util
import org.apache.spark.sql.{AnalysisException, DataFrame, SQLContext, SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.connector.catalog.{Identifier, Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.sources.{BaseRelation, CreatableRelationProvider, DataSourceRegister, RelationProvider}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._
import sparklance.spark.errors.{LanceErrorCondition, LanceErrors}

/**
 * `format("lance")`: tables by location, as Delta and Iceberg give them.
 *
 *  - `spark.read.format("lance").load(path)`, with the options `versionAsOf` (a version or a tag),
 *    `timestampAsOf` or `tag` for an older version, and any read option of the table.
 *  - `df.write.format("lance").mode(m).save(path)`: `append` (creating the table if there is none),
 *    `overwrite` (replacing the rows; with `overwriteSchema = true` also the schema and
 *    properties), `errorifexists`, `ignore`. The other options become the properties of a table
 *    the write creates, and are the write's options otherwise.
 *
 * Both go through a Lance catalog of the session (see [[LanceDataSource.catalogName]]), so a path
 * is read and written with that catalog's storage settings, as ``<catalog>.`path` `` is in SQL.
 */
class LanceDataSource extends TableProvider with DataSourceRegister with RelationProvider with CreatableRelationProvider {
  import LanceDataSource._

  override def shortName(): String = ShortName

  // Spark asks for the schema and then for the table, on one instance: the table is loaded once.
  private var loaded: Option[(Map[String, String], PathReadTable)] = None

  override def inferSchema(options: CaseInsensitiveStringMap): StructType =
    Columns.toStruct(table(options).columns())

  override def getTable(schema: StructType, partitioning: Array[Transform], properties: util.Map[String, String]): Table =
    table(new CaseInsensitiveStringMap(properties))

  private def table(options: CaseInsensitiveStringMap): PathReadTable = LanceErrors.convertingArguments(LanceErrorCondition.InvalidOption) {
    val key = options.asCaseSensitiveMap().asScala.toMap
    loaded.collect { case (k, t) if k == key => t }.getOrElse {
      val t = readTable(SparkSession.active, options)
      loaded = Some(key -> t)
      t
    }
  }

  /** Reached for reads only when there is no table at the path (see [[PathReadTable]]). */
  override def createRelation(sqlContext: SQLContext, parameters: Map[String, String]): BaseRelation =
    throw new AnalysisException("PATH_NOT_FOUND", Map("path" -> location(parameters)))

  /** Every `save` (see [[PathReadTable]] for why Spark comes here). */
  override def createRelation(sqlContext: SQLContext, mode: SaveMode, parameters: Map[String, String],
      data: DataFrame): BaseRelation = LanceErrors.convertingArguments(LanceErrorCondition.InvalidOption) {
    save(sqlContext.sparkSession, mode, parameters, data)
    val (context, written) = (sqlContext, data.schema)
    new BaseRelation {
      override def sqlContext: SQLContext = context
      override def schema: StructType = written
    }
  }
}

object LanceDataSource {
  val ShortName = "lance"
  /** The catalog a path is read and written with (any Lance catalog of the session). */
  val CatalogOption = "catalog"
  /** The name of the Lance catalog without warehouse used when the session has none. */
  val PathsCatalog = "lance_paths"
  val VersionAsOf = "versionAsOf"
  val TimestampAsOf = "timestampAsOf"
  val Tag = "tag"
  val OverwriteSchema = "overwriteSchema"
  private val CatalogPrefix = "spark.sql.catalog."
  private val NotTableProperties = Set("path", "paths", CatalogOption, VersionAsOf, TimestampAsOf, Tag, OverwriteSchema,
    "mergeSchema").map(_.toLowerCase)

  private def location(options: collection.Map[String, String]): String = {
    val path = options.collectFirst { case (k, v) if k.equalsIgnoreCase("path") => v }
    TablePath.fromOption(path.filter(_.nonEmpty).getOrElse(throw new IllegalArgumentException(
      "format(\"lance\") needs the table's location: load(path) or save(path)")))
  }

  /**
   * The catalog of the session that paths go through: the `catalog` option, else the session's
   * Lance catalog named `lance`, else its only (or first by name) Lance catalog, else
   * [[PathsCatalog]], a Lance catalog without warehouse that the session gets on first use.
   */
  def catalogName(session: SparkSession, options: collection.Map[String, String], register: Boolean): String = {
    val lanceCatalogs = session.conf.getAll.collect {
      case (k, v) if k.startsWith(CatalogPrefix) && !k.stripPrefix(CatalogPrefix).contains('.') &&
          v == classOf[LanceCatalog].getName => k.stripPrefix(CatalogPrefix)
    }.toSeq.sorted
    options.collectFirst { case (k, v) if k.equalsIgnoreCase(CatalogOption) => v }.map { name =>
      if (!lanceCatalogs.contains(name)) throw new IllegalArgumentException(
        s"Option $CatalogOption: '$name' is not a Lance catalog of this session (Lance catalogs: ${lanceCatalogs.mkString(", ")})")
      name
    }.orElse(lanceCatalogs.find(_ == ShortName)).orElse(lanceCatalogs.headOption).getOrElse {
      if (register) session.conf.set(CatalogPrefix + PathsCatalog, classOf[LanceCatalog].getName)
      PathsCatalog
    }
  }

  /** A catalog instance configured as the session's catalog `name` is (for reads, which need no registered one). */
  private def catalog(session: SparkSession, name: String): LanceCatalog = {
    val prefix = s"$CatalogPrefix$name."
    val options = session.conf.getAll.collect { case (k, v) if k.startsWith(prefix) => k.stripPrefix(prefix) -> v }
    val c = new LanceCatalog
    c.initialize(name, new CaseInsensitiveStringMap(options.asJava))
    c
  }

  private def readTable(session: SparkSession, options: CaseInsensitiveStringMap): PathReadTable = {
    val opts = options.asCaseSensitiveMap().asScala
    val path = location(opts)
    val lance = catalog(session, catalogName(session, opts, register = false))
    val ident = Identifier.of(Array.empty, path)
    def option(key: String) = Option(options.get(key)).filter(_.nonEmpty)
    val asOf = Seq(VersionAsOf, TimestampAsOf, Tag).filter(k => option(k).isDefined)
    if (asOf.size > 1) throw new IllegalArgumentException(s"Options ${asOf.mkString(" and ")}: give one version only")
    if (!lance.tableExists(ident)) return new PathReadTable(path, None)
    val table = (option(VersionAsOf).orElse(option(Tag)), option(TimestampAsOf)) match {
      case (Some(version), _) => lance.loadTable(ident, version)
      case (_, Some(time)) => lance.loadTable(ident, micros(session, TimestampAsOf, time))
      case _ => lance.loadTable(ident)
    }
    new PathReadTable(path, Some(table.asInstanceOf[LanceTable]))
  }

  /**
   * The value of timestamp option `option` (`timestampAsOf`, a stream's `startingTimestamp`) as Spark
   * reads `TIMESTAMP AS OF` text: in the session's time zone unless it names one.
   */
  def micros(session: SparkSession, option: String, text: String): Long = {
    val zone = java.time.ZoneId.of(session.conf.get("spark.sql.session.timeZone"))
    DateTimeUtils.stringToTimestamp(UTF8String.fromString(text.trim), zone).getOrElse(throw new IllegalArgumentException(
        s"Option $option: '$text' is not a timestamp (e.g. '2026-01-31 12:00:00')"))
  }

  private def save(session: SparkSession, mode: SaveMode, options: Map[String, String], data: DataFrame): Unit = {
    val path = location(options)
    val name = catalogName(session, options, register = true)
    val target = s"$name.${TablePath.quoted(path)}"
    val (properties, writeOptions) = options.partition { case (k, _) => !NotTableProperties.contains(k.toLowerCase) }
    val overwriteSchema = options.exists { case (k, v) => k.equalsIgnoreCase(OverwriteSchema) && v.equalsIgnoreCase("true") }
    def create(orReplace: Boolean): Unit = {
      val w = properties.foldLeft(data.writeTo(target)) { case (w, (k, v)) => w.tableProperty(k, v) }
      if (orReplace) w.createOrReplace() else w.create()
    }
    lazy val exists = catalog(session, name).tableExists(Identifier.of(Array.empty, path))
    mode match {
      case SaveMode.Append if exists => data.writeTo(target).options(writeOptions).append()
      case SaveMode.Append =>
        // A writer racing this one may have created the table since: then this one appends.
        try create(orReplace = false) catch {
          case _: TableAlreadyExistsException => data.writeTo(target).options(writeOptions).append()
        }
      case SaveMode.Overwrite if overwriteSchema => create(orReplace = true)
      case SaveMode.Overwrite if exists =>
        data.writeTo(target).options(writeOptions).overwrite(org.apache.spark.sql.functions.lit(true))
      case SaveMode.Overwrite =>
        try create(orReplace = false) catch {
          case _: TableAlreadyExistsException =>
            data.writeTo(target).options(writeOptions).overwrite(org.apache.spark.sql.functions.lit(true))
        }
      case SaveMode.ErrorIfExists if exists => throw new AnalysisException("PATH_ALREADY_EXISTS", Map("outputPath" -> path))
      case SaveMode.ErrorIfExists => create(orReplace = false)
      case SaveMode.Ignore if exists => ()
      case SaveMode.Ignore =>
        try create(orReplace = false) catch { case _: TableAlreadyExistsException => () }
    }
  }
}
