package sparklance.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{Column, TableChange}
import org.apache.spark.sql.connector.catalog.TableChange._
import org.apache.spark.sql.types.StructField
import sparklance.format.{CommitConflictException, SchemaChangeException}
import sparklance.format.commit.{CommitRecord, Committer, Operation, Statement}
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.table.{Dataset, LanceSchema, PendingSchema, SchemaChange, SchemaEvolution, Snapshot, UncommittedFiles}
import sparklance.spark.evolution.{ColumnValues, ColumnWriteJob}
import sparklance.spark.indexing.ZoneMapMaintenance
import sparklance.spark.layout.Clustering

/**
 * ALTER TABLE on a sparklance table, each statement one commit, as pylance records it: column
 * changes through [[SchemaEvolution]] (a Merge for added columns and for type changes, whose
 * values a Spark job writes anew as column-only files, a Project for the rest),
 * SET / UNSET TBLPROPERTIES through an UpdateConfig (see [[TableProperties]]). A statement that
 * loses a race to a concurrent commit is planned again on the new version (a schema change means
 * the same whatever rows arrived), up to the catalog's commit retries.
 */
final class TableAlteration(table: String, dataset: Dataset, settings: CatalogSettings) {
  def apply(requested: Seq[TableChange]): Unit = {
    // ALTER TABLE ... CLUSTER BY (a, b) / CLUSTER BY NONE sets the clustering property.
    val changes = requested.map {
      case c: ClusterBy => TableChange.setProperty(Clustering.Property, c.clusteringColumns().map(Clustering.names).mkString(","))
      case c => c
    }
    val (properties, columns) = changes.partition {
      case _: SetProperty | _: RemoveProperty => true
      case _ => false
    }
    if (properties.nonEmpty && columns.nonEmpty)
      throw new UnsupportedOperationException(s"ALTER TABLE $table: change properties and columns in separate statements")
    val set = properties.collect { case p: SetProperty => p.property() -> p.value() }.toMap
    val unset = properties.collect { case p: RemoveProperty => p.property() }.toSet
    val vectors = set.filter { case (k, _) => k.endsWith(ColumnProperties.VectorSuffix) && ColumnProperties.isColumnKey(k) }
    if (vectors.nonEmpty && vectors.size == set.size && unset.isEmpty) return makeVectors(vectors)
    retrying(TableAlteration.statement(changes)) { snapshot =>
      if (properties.nonEmpty) {
        val change = TableProperties.change(table, snapshot, set, unset)
        TableProperties.checkAgainst(table, snapshot.schema, change.config)
        (change, Nil)
      }
      else {
        val (evolved, files) = planColumns(snapshot, columns)
        (evolved.withFiles(files), files.values.map(f => DataFragment.newBuilder().addFiles(f).build()).toSeq)
      }
    }
    if (columns.nonEmpty) followListedColumns(columns)
  }

  /**
   * `ALTER TABLE t SET TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '384')` on a list column:
   * the column becomes a vector of that many items of its item type, written anew under a new
   * field id (as ALTER COLUMN ... TYPE does), in one commit, once the version it builds on is
   * checked to hold only arrays of that length (and no NULL where the column is NOT NULL). A
   * column that is a vector of that dimension already is left as it is, so that a replayed
   * statement changes nothing.
   */
  private def makeVectors(declared: Map[String, String]): Unit = {
    def changes(snapshot: Snapshot): Seq[SchemaChange] = {
      val schema = SparkTypes.toSpark(snapshot.schema, table)
      declared.toSeq.sortBy(_._1).flatMap { case (key, value) =>
        val (column, dim) = ColumnProperties.vectorColumn(table, schema, key, value)
        snapshot.schema.fields.find(_.name == column).get.arrowType match {
          case v: org.apache.arrow.vector.types.pojo.ArrowType.FixedSizeList if v.getListSize == dim => None
          case _ => Some(SchemaChange.MakeVector(Seq(column), dim))
        }
      }
    }
    if (changes(dataset.snapshot()).isEmpty) return
    retrying(Statement.SetTblProperties) { snapshot =>
      val planned = changes(snapshot)
      // Refusals of the schema change itself (an index on the column, items that are no primitive) come first.
      SchemaEvolution.plan(table, snapshot, planned)
      planned.collect { case SchemaChange.MakeVector(path, dim) =>
        requireLength(snapshot, path.head, dim, snapshot.schema.fields.find(_.name == path.head).get.nullable)
      }
      val (evolved, files) = planSchema(snapshot, planned)
      (evolved.withFiles(files), files.values.map(f => DataFragment.newBuilder().addFiles(f).build()).toSeq)
    }
  }

  /**
   * A list column made a vector of `dim` items must hold arrays of `dim` items only (and no NULL
   * where it is NOT NULL) in the version the commit builds on: refused naming the first offending
   * row by its address and its first key-like column, and how many there are.
   */
  private def requireLength(snapshot: Snapshot, column: String, dim: Int, nullable: Boolean): Unit = {
    val q = s"`${column.replace("`", "``")}`"
    val frame = SparkSession.active.read.option("versionAsOf", snapshot.version.toString).table(table)
    val key = frame.schema.fields.find(f => f.name != column && !LanceTable.MetadataNames.contains(f.name) &&
      (f.dataType match {
        case _: org.apache.spark.sql.types.NumericType | _: org.apache.spark.sql.types.StringType |
             org.apache.spark.sql.types.DateType => true
        case _ => false
      }))
    val keyExpr = key.fold("CAST(NULL AS STRING)")(k => s"CAST(`${k.name.replace("`", "``")}` AS STRING)")
    val bad = s"($q IS NOT NULL AND size($q) <> $dim)" + (if (nullable) "" else s" OR $q IS NULL")
    val found = frame.where(bad).selectExpr("count(*)",
      s"min_by(named_struct('addr', ${LanceTable.RowAddress}, 'len', coalesce(size($q), -1), 'key', $keyExpr), ${LanceTable.RowAddress})").head()
    val count = found.getLong(0)
    if (count > 0) {
      val first = found.getStruct(1)
      val (addr, len) = (first.getLong(0), first.getInt(1))
      val where = s"the row at ${LanceTable.RowAddress} $addr (fragment ${addr >>> 32}, offset ${addr & 0xFFFFFFFFL})" +
        key.fold("")(k => s", where ${k.name} = ${Option(first.getString(2)).getOrElse("NULL")}")
      val holds = if (len < 0) "NULL, and the column is NOT NULL" else s"an array of $len items"
      throw new SchemaChangeException(table, column, s"it cannot become a vector of $dim items: $count row(s) of version " +
        s"${snapshot.version} hold another value, the first $where holding $holds; update or delete them first")
    }
  }

  /**
   * `zonemap_columns` and `clustering_columns` follow a renamed or dropped top-level column: a
   * rename keeps the column listed under its new name, a drop takes it off the list (the default
   * zone map columns follow the schema by themselves). Lance commits a configuration change apart
   * from a schema change, so this is the version after the statement's.
   */
  private def followListedColumns(changes: Seq[TableChange]): Unit = {
    val config = dataset.snapshot().config
    def follow(names: Seq[String]) = changes.foldLeft(names) {
      case (names, c: RenameColumn) if c.fieldNames().length == 1 => names.map(n => if (n == c.fieldNames()(0)) c.newName() else n)
      case (names, c: DeleteColumn) if c.fieldNames().length == 1 => names.filterNot(_ == c.fieldNames()(0))
      case (names, _) => names
    }
    // A list emptied by drops becomes '' (none), not unset, which would mean the default columns.
    val followed = Seq(ZoneMapMaintenance.Property -> ZoneMapMaintenance.columns(config), Clustering.Property -> Clustering.columns(config))
      .collect { case (property, listed) if follow(listed) != listed => property -> follow(listed).mkString(",") }.toMap
    if (followed.nonEmpty) retrying(Statement.SetTblProperties) { snapshot =>
      (TableProperties.change(table, snapshot, followed, Set.empty), Nil)
    }
  }

  /**
   * Plans column changes Spark's automatic schema evolution asks for (added columns, widenings)
   * on the latest version without committing them: the statement's write commits them with its
   * data. Retyped columns' values are written now, as for ALTER COLUMN ... TYPE.
   */
  def stage(changes: Seq[TableChange]): PendingSchema = {
    val snapshot = dataset.snapshot(forWrite = true)
    val (evolved, files) = planColumns(snapshot, changes)
    if (evolved.tightened.nonEmpty || !evolved.operation.isInstanceOf[Operation.Merge])
      throw new UnsupportedOperationException(s"$table: a write adds columns or widens types, nothing else")
    PendingSchema(snapshot, evolved.schema, files, retypes = evolved.retyped.nonEmpty,
      preservesNullability = evolved.operation.asInstanceOf[Operation.Merge].preservesNullability)
  }

  /**
   * The planned change on `snapshot` and, for retyped columns, their values written anew, cast by
   * Spark (exactly: only widenings are planned): a column-only file per fragment, not committed.
   */
  private def planColumns(snapshot: Snapshot, columns: Seq[TableChange]): (SchemaEvolution.Evolved, Map[Long, DataFile]) =
    planSchema(snapshot, columns.flatMap(schemaChange(snapshot, _)))

  /**
   * The planned change and the values it writes, as column-only files (one per fragment, for all
   * its rows): retyped columns' values cast anew, and the value of a column added with a DEFAULT
   * (its `spark.default.exists` literal) in every existing row, so that pylance reads it too.
   */
  private def planSchema(snapshot: Snapshot, changes: Seq[SchemaChange]): (SchemaEvolution.Evolved, Map[Long, DataFile]) = {
    val planned = SchemaEvolution.plan(table, snapshot, changes)
    planned.tightened.foreach(requireNoNulls(snapshot, _))
    val casts = planned.retyped.map(r => r.to -> s"CAST(`${r.from.name.replace("`", "``")}` AS ${sqlType(r.to)})")
    val defaults = changes.collect { case SchemaChange.AddField(Seq(name), _, _, _) => planned.schema.fields.find(_.name == name).get }
      .flatMap(f => f.metadata.get(ColumnDefaults.ExistsKey).filterNot(_.trim.equalsIgnoreCase("NULL"))
        .map(value => f -> s"CAST($value AS ${sqlType(f)})"))
    // Rows a concurrent writer adds without the new column would read NULL, not its default: the
    // Merge says it may change nullability, so that they retry on the new schema (sparklance's
    // writers and pylance's alike, by Lance's nullability barrier) rather than land.
    val evolved = planned.operation match {
      case m: Operation.Merge if defaults.nonEmpty => planned.copy(operation = m.copy(preservesNullability = false))
      case _ => planned
    }
    val written = casts ++ defaults
    if (written.isEmpty || snapshot.fragments.isEmpty) (evolved, Map.empty)
    else {
      val frame = ColumnValues.fromExpressions(SparkSession.active, table, snapshot, written.map { case (f, e) => f.name -> e })
      (evolved, ColumnWriteJob.fromRows(SparkSession.active, table, dataset, snapshot, frame, LanceSchema(written.map(_._1)), settings))
    }
  }

  private def sqlType(f: sparklance.format.table.LanceField): String = SparkTypes.toSparkField(f, table).dataType.sql

  /** Whether `change` alone could be made to `snapshot` (planned, not committed). */
  def accepts(snapshot: Snapshot, change: TableChange): Boolean =
    try { schemaChange(snapshot, change).foreach(c => SchemaEvolution.plan(table, snapshot, Seq(c))); true }
    catch { case _: SchemaChangeException | _: UnsupportedOperationException | _: UnsupportedTypeException => false }

  /** Plans (returning the operation and the data it wrote) and commits, planning again after a lost race. */
  private def retrying(statement: Statement)(plan: Snapshot => (Operation, Seq[DataFragment])): Unit = {
    var attempt = 0
    while (true) {
      val snapshot = dataset.snapshot(forWrite = true)
      val (op, written) = plan(snapshot)
      try {
        new UncommittedFiles(dataset.storage, dataset.path).commit(written)(
          new Committer(dataset, settings.commitRetries).commit(Some(snapshot), op, record = Some(CommitRecord(statement))))
        return
      } catch { case e: CommitConflictException if e.retryable && attempt < settings.commitRetries.count => attempt += 1 }
    }
  }

  /** Spark's change as ours; none for a DROP COLUMN IF EXISTS of a column that is not there. */
  private def schemaChange(snapshot: Snapshot, change: TableChange): Seq[SchemaChange] = change match {
    case c: AddColumn =>
      if (c.defaultValue() != null) topLevelDefault(c.fieldNames(), "ADD COLUMN")
      // Spark's own conversion puts the default (analysed by Spark: constant, of the column's type) into the metadata.
      val field = Columns.toStruct(Array(Column.create(c.fieldNames().last, c.dataType(), c.isNullable, c.comment(),
        c.defaultValue(), null))).head
      // A non-NULL default is written into every existing row (see planSchema), so the column may be NOT NULL.
      val filled = c.fieldNames().length == 1 && ColumnDefaults.exists(field).exists(!_.trim.equalsIgnoreCase("NULL"))
      Seq(SchemaChange.AddField(c.fieldNames().toSeq, SparkTypes.toArrow(field, table), position(c.position()), filled))
    case c: DeleteColumn =>
      if (c.ifExists() && !exists(snapshot, c.fieldNames().toSeq)) Nil
      else { unconstrained(snapshot, c.fieldNames().toSeq, "dropped"); Seq(SchemaChange.DropField(c.fieldNames().toSeq)) }
    case c: RenameColumn =>
      unconstrained(snapshot, c.fieldNames().toSeq, "renamed")
      Seq(SchemaChange.RenameField(c.fieldNames().toSeq, c.newName()))
    case c: UpdateColumnNullability => Seq(SchemaChange.SetNullable(c.fieldNames().toSeq, c.nullable()))
    case c: UpdateColumnComment =>
      Seq(SchemaChange.SetMetadata(c.fieldNames().toSeq, SchemaChange.CommentKey, Option(c.newComment())))
    case c: UpdateColumnPosition => Seq(SchemaChange.MoveField(c.fieldNames().toSeq, position(c.position())))
    case c: UpdateColumnType =>
      val to = SparkTypes.toArrow(StructField(c.fieldNames().last, c.newDataType()), table).getType
      Seq(SchemaChange.ChangeType(c.fieldNames().toSeq, to))
    case c: UpdateColumnDefaultValue =>
      topLevelDefault(c.fieldNames(), "ALTER COLUMN")
      val path = c.fieldNames().toSeq
      val sql = Option(c.newCurrentDefault()).map(_.getSql).filter(_.trim.nonEmpty) // none: DROP DEFAULT
      // Rows already there keep their values: a column that had no default reads NULL where no
      // value was written, which its `exists` literal says; one added with a default keeps that literal.
      val hadExisting = snapshot.schema.fields.find(_.name == path.head).exists(_.metadata.contains(ColumnDefaults.ExistsKey))
      SchemaChange.SetMetadata(path, ColumnDefaults.CurrentKey, sql) +:
        (if (sql.isDefined && !hadExisting) Seq(SchemaChange.SetMetadata(path, ColumnDefaults.ExistsKey, Some("NULL"))) else Nil)
    case other => throw new UnsupportedOperationException(
      s"ALTER TABLE $table: ${other.getClass.getSimpleName} is not supported by sparklance")
  }

  /** A column a CHECK constraint names keeps its name: the constraint's predicate would name nothing. */
  private def unconstrained(snapshot: Snapshot, path: Seq[String], what: String): Unit = {
    val naming = CheckConstraints.naming(CheckConstraints.all(table, snapshot), path)
    if (naming.nonEmpty) throw new SchemaChangeException(table, path.mkString("."), s"CHECK constraint(s) " +
      s"${naming.map(c => s"${c.name()} (${c.predicateSql()})").mkString(", ")} name it, so it cannot be $what; drop them first")
  }

  /** DEFAULT values are kept on top-level columns only: Spark fills them in for whole columns. */
  private def topLevelDefault(path: Array[String], clause: String): Unit =
    if (path.length > 1) throw new UnsupportedOperationException(s"ALTER TABLE $table $clause ${path.mkString(".")}: " +
      "sparklance keeps DEFAULT values for top-level columns only, not for fields inside a struct")

  private def position(p: ColumnPosition): SchemaChange.Position = p match {
    case null => SchemaChange.Position.Last
    case _: First => SchemaChange.Position.First
    case a: After => SchemaChange.Position.After(a.column())
    case other => throw new UnsupportedOperationException(s"ALTER TABLE $table: column position $other")
  }

  private def exists(snapshot: Snapshot, path: Seq[String]): Boolean = {
    def find(fields: Seq[sparklance.format.table.LanceField], rest: Seq[String]): Boolean =
      fields.find(_.name == rest.head).exists(f => rest.size == 1 || find(f.children, rest.tail))
    find(snapshot.schema.fields, path)
  }

  /**
   * A column made NOT NULL must hold no NULL in the version the commit builds on (where its parent
   * struct is present: a missing parent is not the child's NULL). Concurrent writers of values
   * retry against the commit, which does not promise to preserve nullability.
   */
  private def requireNoNulls(snapshot: Snapshot, path: Seq[String]): Unit = {
    def quoted(p: Seq[String]) = p.map(n => s"`${n.replace("`", "``")}`").mkString(".")
    val condition = s"${quoted(path)} IS NULL" + (if (path.size > 1) s" AND ${quoted(path.init)} IS NOT NULL" else "")
    val nulls = SparkSession.active.read.option("versionAsOf", snapshot.version.toString).table(table).where(condition).count()
    if (nulls > 0) throw new SchemaChangeException(table, path.mkString("."),
      s"it holds $nulls NULL value(s) (version ${snapshot.version}), so it cannot be made NOT NULL; update or delete them first")
  }
}

object TableAlteration {
  /**
   * The statement an ALTER TABLE's changes make, as history names it. Spark hands one statement's
   * changes of one kind (ADD COLUMNS of several columns, SET TBLPROPERTIES of several keys), so
   * the first change names it; a nullability, comment or position change is an ALTER COLUMN.
   */
  def statement(changes: Seq[TableChange]): Statement = changes.headOption match {
    case Some(_: SetProperty) => Statement.SetTblProperties
    case Some(_: RemoveProperty) => Statement.UnsetTblProperties
    case Some(_: AddColumn) => Statement.AlterAddColumns
    case Some(_: DeleteColumn) => Statement.AlterDropColumns
    case Some(_: RenameColumn) => Statement.AlterRenameColumn
    case Some(_: UpdateColumnType) => Statement.AlterColumnType
    case _ => Statement.AlterColumn
  }
}
