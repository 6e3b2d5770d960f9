package sparklance.spark.procedures

import java.util.Collections
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.connector.catalog.procedures.{BoundProcedure, ProcedureParameter, UnboundProcedure}
import org.apache.spark.sql.connector.read.Scan
import org.apache.spark.sql.types.{DataType, StructType}
import sparklance.format.table.Dataset
import sparklance.spark.{LanceCatalog, TablePath}
import sparklance.spark.errors.LanceErrors

/**
 * A procedure of a [[LanceCatalog]], called as `CALL <catalog>.system.<name>(table => 'db.t', ...)`:
 * the table is named inside the catalog (the catalog's own name may lead). Spark matches named and
 * positional arguments to `parameters`, applies defaults (NULL: not given) and casts; `run` gets
 * them in that order and returns the one result row, described by `resultSchema`.
 */
abstract class LanceProcedure(catalog: LanceCatalog) extends UnboundProcedure with BoundProcedure {
  def parameters(): Array[ProcedureParameter]
  def resultSchema: StructType
  protected def run(args: InternalRow): InternalRow

  override def bind(inputType: StructType): BoundProcedure = this
  // Maintenance changes the table: running it twice is not running it once.
  override def isDeterministic: Boolean = false

  override def call(args: InternalRow): java.util.Iterator[Scan] = LanceErrors.convertingArguments() {
    Collections.singletonList[Scan](new ProcedureResult(resultSchema, Array(run(args)))).iterator()
  }

  protected def spark: SparkSession = SparkSession.active

  /**
   * The table the `table` argument (at `position`) names, with its identifier and display name;
   * with `dropped`, a table dropped with its files kept (see [[LanceCatalog.dropTable]]) instead.
   */
  protected def table(args: InternalRow, position: Int, dropped: Boolean = false): LanceProcedure.Target = {
    val (ident, quotedName) = identifier(args, position)
    val dataset = catalog.datasetOf(ident)
    if (dropped && !dataset.isDropped) throw new IllegalArgumentException(
      s"Procedure ${this.name()}: $quotedName is not a table dropped with its files kept" +
        (if (dataset.exists) " (it exists)" else ""))
    if (!dropped && !dataset.exists) throw new NoSuchTableException(ident)
    LanceProcedure.Target(ident, quotedName, dataset)
  }

  /** The identifier in this catalog the `table` argument (at `position`) gives, and its display name. */
  protected def identifier(args: InternalRow, position: Int): (Identifier, String) = {
    val name = args.getUTF8String(position).toString
    val parts = spark.sessionState.sqlParser.parseMultipartIdentifier(name)
    def byLocation(part: String) = TablePath.absolute(part).isDefined
    val inCatalog = if ((parts.size > 2 || parts.size == 2 && byLocation(parts.last)) && parts.head.equalsIgnoreCase(catalog.name())) parts.tail
      else parts
    if (inCatalog.size < 2 && !inCatalog.headOption.exists(byLocation)) throw new IllegalArgumentException(
      s"Procedure ${this.name()}: table '$name' must name a namespace and a table of catalog ${catalog.name()}, as in 'db.t', " +
        "or a table's location, as in '`/data/t.lance`'")
    Identifier.of(inCatalog.init.toArray, inCatalog.last) -> (catalog.name() +: inCatalog).mkString(".")
  }

  protected def optional[T](args: InternalRow, position: Int)(get: Int => T): Option[T] =
    if (args.isNullAt(position)) None else Some(get(position))

  protected def param(name: String, dataType: DataType, required: Boolean = false): ProcedureParameter = {
    val b = ProcedureParameter.in(name, dataType)
    (if (required) b else b.defaultValue("NULL")).build()
  }
}

object LanceProcedure {
  final case class Target(ident: Identifier, quotedName: String, dataset: Dataset)
}
