package sparklance.spark.rowlevel

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.write.RowLevelOperation
import org.apache.spark.sql.types.StructType
import sparklance.format.proto.FileProtos
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{ColumnShare, LanceSchema, StorageVersion}
import sparklance.spark.{LanceSparkSessionExtensions, LanceTable, SparkTypes, TableProperties, UnsupportedColumnException}

/**
 * How an UPDATE or MERGE may update rows in place (see [[RewriteMode]]), planned on the driver
 * and sent to the write tasks: the assigned columns (as Lance fields, ids included) and their
 * ordinals in the rows the writer receives, the estimated share of a row's bytes they take, and
 * the fragments of the version the statement read. A task updates a fragment's rows in place
 * once at least `threshold` of its rows are updated: from there, writing the columns for all its
 * rows writes fewer bytes than writing the updated rows whole.
 */
final case class InPlaceUpdates(
    mode: RewriteMode,
    fieldBytes: Array[Array[Byte]],
    positions: Array[Int],
    share: Double,
    fragmentBytes: Map[Long, Array[Byte]]) {

  def fields: LanceSchema = LanceSchema.fromProto(fieldBytes.toSeq.map(FileProtos.Field.parseFrom), java.util.Map.of())
  def fieldIds: Seq[Int] = fields.allFields.map(_.id)

  def fragment(id: Long): DataFragment = DataFragment.parseFrom(fragmentBytes.getOrElse(id,
    throw new IllegalStateException(s"Rows of fragment $id were updated, but the version the statement read has no such fragment")))

  /** The updated rows of a fragment from which updating them in place writes fewer bytes (1 when forced). */
  def threshold(physicalRows: Long): Long =
    if (mode == RewriteMode.Columns) 1L else math.max(1L, math.ceil(physicalRows * share).toLong)
}

object InPlaceUpdates {
  /**
   * At most this many bytes of a fragment's updated rows are held while a task cannot yet tell
   * which way writes less; past it the rows are written whole.
   */
  val BufferBytes: Long = 64L << 20

  /**
   * The plan for a statement, or None when it rewrites whole rows: asked to, a DELETE, no
   * assignments known (the session lacks sparklance's extension), a schema change in the same
   * statement, struct columns of a 2.0 table, or (in auto mode) a MERGE that also inserts rows, whose inserts the per-fragment
   * grouping would put in one task, or columns that take most of a row anyway. A statement that
   * leaves a blob column alone always updates in place (see [[carriesBlobs]]).
   */
  def plan(table: LanceTable, command: RowLevelOperation.Command, rowSchema: StructType,
      options: Map[String, String]): Option[InPlaceUpdates] = {
    val session = SparkSession.getActiveSession.flatMap(_.conf.getOption(RewriteMode.SessionKey))
    val asked = RewriteMode.of(options, session, table.snapshot.config)
    val updates = command == RowLevelOperation.Command.UPDATE || command == RowLevelOperation.Command.MERGE
    if (!updates || table.pending.isDefined) return None
    val known = table.assignments
    val schema = table.snapshot.schema
    // Columns of unmappable types cannot be rewritten: updates leave them where they are, in place
    // whatever the mode; a statement that assigns one is refused.
    val unsupported = SparkTypes.unsupportedColumns(schema, table.tableName)
    for (a <- known.toSeq; (column, lanceType) <- unsupported if a.changed(column))
      throw new UnsupportedColumnException(table.tableName, column, lanceType, "assigns")
    val mode = if (unsupported.nonEmpty || known.exists(carriesBlobs(schema, _))) RewriteMode.Columns else asked
    if (mode == RewriteMode.Rows) return None
    val assigned = known.getOrElse {
      val extensions = SparkSession.getActiveSession.flatMap(_.conf.getOption("spark.sql.extensions")).getOrElse("")
      if (mode == RewriteMode.Columns && !extensions.contains(classOf[LanceSparkSessionExtensions].getName))
        throw new IllegalStateException(s"${TableProperties.RewriteModeProperty.name} = columns on ${table.tableName} needs to know which " +
          s"columns the statement assigns: add ${classOf[LanceSparkSessionExtensions].getName} to spark.sql.extensions " +
          "(sparklance.configure does)")
      return None
    }
    val fields = schema.fields.filter(f => assigned.changed.contains(f.name))
    val positions = fields.map(f => rowSchema.fieldNames.indexOf(f.name))
    if (fields.isEmpty || positions.contains(-1)) return None
    // File format 2.0 lists a struct's own id beside its children's; pylance's in-place rewrite of
    // a nested column there is broken (LANCE-SCHEMA-EVOLUTION.md §6), so such columns move rows.
    if (table.snapshot.storageVersion == StorageVersion.V2_0 && fields.exists(_.children.nonEmpty)) return None
    // Legacy (V1) tables: pylance rewrites whole rows there, so sparklance does too.
    if (table.snapshot.storageVersion == StorageVersion.Legacy) return None
    val share = table.bytesPerRow.fold(1.0)(ColumnShare.of(schema, fields.map(_.name).toSet, _))
    if (mode == RewriteMode.Auto && (assigned.inserts || share >= 1.0)) return None
    Some(InPlaceUpdates(mode, LanceSchema(fields).toProto.map(_.toByteArray).toArray, positions.toArray, share,
      table.snapshot.fragments.map(f => f.getId -> f.toByteArray).toMap))
  }

  /**
   * The blob columns whose values an UPDATE or MERGE need not read: those it leaves alone when it
   * certainly updates its rows in place (see [[plan]]), where they are never written. Empty when
   * rows may be rewritten whole, which needs every value.
   */
  def carriedBlobs(table: LanceTable, command: RowLevelOperation.Command): Set[String] = {
    val schema = table.snapshot.schema
    val updates = command == RowLevelOperation.Command.UPDATE || command == RowLevelOperation.Command.MERGE
    table.assignments match {
      case Some(a) if updates && table.pending.isEmpty && carriesBlobs(schema, a) =>
        val fields = schema.fields.filter(f => a.changed.contains(f.name))
        // As plan decides: the cases where it rewrites rows whole whatever the mode.
        val inPlace = fields.nonEmpty && table.snapshot.storageVersion != StorageVersion.Legacy &&
          !(table.snapshot.storageVersion == StorageVersion.V2_0 && fields.exists(_.children.nonEmpty))
        if (!inPlace) Set.empty
        else schema.fields.filter(f => f.blobEncoding.isDefined && !a.changed.contains(f.name)).map(_.name).toSet
      case _ => Set.empty
    }
  }

  /**
   * Whether the statement leaves a blob column of the table alone. Its rows must then stay where
   * they are: rewritten whole, each blob would be read and stored anew (an external object's bytes
   * copied into the table, a 2.1 blob refused), where updating in place keeps every row's
   * descriptor as it was, bytes unread and unwritten.
   */
  def carriesBlobs(schema: LanceSchema, assigned: RowLevelAssignments): Boolean =
    schema.fields.exists(f => f.blobEncoding.isDefined && !assigned.changed.contains(f.name))
}
