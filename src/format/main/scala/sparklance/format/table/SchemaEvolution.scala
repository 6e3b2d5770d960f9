package sparklance.format.table

import scala.jdk.CollectionConverters._
import sparklance.format.SchemaChangeException
import org.apache.arrow.vector.types.pojo.ArrowType
import sparklance.format.commit.Operation
import sparklance.format.table.SchemaChange._

/**
 * Applies ALTER TABLE's schema changes to a version of a table, as pylance records them
 * (LANCE-SCHEMA-EVOLUTION.md): added columns are a Merge of every fragment unchanged (no data is
 * written; they read as NULL), everything else a Project of the new schema. New fields get ids
 * above every id the schema or a current data file uses, depth first. Changes that would leave
 * the table unreadable or lose its meaning are refused with a [[SchemaChangeException]].
 */
object SchemaEvolution {
  /**
   * The new schema and the operation that commits it. `tightened` are the columns made NOT NULL,
   * whose data must be checked for NULLs before committing (the commit then tells concurrent
   * writers of values to retry).
   */
  final case class Evolved(schema: LanceSchema, operation: Operation, tightened: Seq[Seq[String]],
      retyped: Seq[Retyped] = Nil) {
    /**
     * The operation with column values written: `files` holds, per fragment id, a column-only file
     * with the new (or retyped) columns for all its rows. A fragment without one (no live rows)
     * reads them as NULL.
     */
    def withFiles(files: Map[Long, sparklance.format.proto.TableProtos.DataFile]): Operation = operation match {
      case m: Operation.Merge => m.copy(fragments = m.fragments.map(f => files.get(f.getId).fold(f)(f.toBuilder.addFiles(_).build())))
      case other => other
    }
  }

  /** A column whose values are written anew as `to` (same name, place and nullability; a new field id). */
  final case class Retyped(from: LanceField, to: LanceField)

  def plan(table: String, snapshot: Snapshot, changes: Seq[SchemaChange]): Evolved = {
    var fields = snapshot.schema.fields
    val fileIds = snapshot.fragments.flatMap(_.getFilesList.asScala.flatMap(_.getFieldsList.asScala.map(_.intValue)))
    var nextId = (snapshot.schema.maxFieldId +: fileIds).max + 1
    val tightened = Seq.newBuilder[Seq[String]]
    val retyped = Seq.newBuilder[Retyped]
    lazy val indexed = sparklance.format.index.Indices.parse(snapshot.file.indexSection, s"$table version ${snapshot.version}")
    var adds = false
    def fail(path: Seq[String], why: String) = throw new SchemaChangeException(table, path.mkString("."), why)
    // Zone maps (and bloom filters) go with the old field id of a column written anew (the commit
    // drops indices of fields the schema lost); writes keep zone maps by default, so they must not
    // stand in the way. Other indices are the user's to drop.
    def requireNoIndex(path: Seq[String], f: LanceField): Unit =
      indexed.find(i => f.preOrder.exists(x => i.getFieldsList.contains(Int.box(x.id))) &&
          sparklance.format.index.Indices.kind(i) != sparklance.format.index.IndexKind.FragmentSummaries).foreach(i => fail(path,
        s"it has the index ${sparklance.format.index.Indices.describe(i)}, which would not follow the new values; drop the index first"))

    for (change <- changes) change match {
      case AddField(path, arrow, position, valuesWritten) =>
        if (!arrow.isNullable && !valuesWritten) fail(path, "a column added to existing rows must be nullable (its value " +
          "is NULL in them); add it without NOT NULL, or with a non-NULL DEFAULT, which existing rows get")
        // V1 files store no nulls, so a column no file holds cannot be read as NULL.
        if (snapshot.storageVersion == StorageVersion.Legacy)
          fail(path, "a legacy (V1) table cannot take a column of NULLs (pylance refuses it too: \"Cannot add all-null " +
            "columns to legacy dataset version\"); copy the table into one of data_storage_version 2.0 or later")
        if (path.size > 1 && snapshot.storageVersion == StorageVersion.V2_0)
          fail(path, "Lance file version 2.0 cannot add a field inside a struct (pylance refuses it too); " +
            "add a top-level column, or use a table of data_storage_version 2.1 or later")
        val added = LanceSchema.fromArrow(new org.apache.arrow.vector.types.pojo.Schema(java.util.List.of(arrow)), nextId).fields.head
        StorageVersion.checkColumns(table, snapshot.storageVersion, Seq(added))
        nextId += added.preOrder.size
        fields = updateSiblings(fields, path.init, path, fail) { siblings =>
          siblings.find(_.name.equalsIgnoreCase(path.last)).foreach(f => fail(path, s"a column named '${f.name}' already exists"))
          place(siblings, added, position, path, fail)
        }
        adds = true
      case DropField(path) =>
        fields = updateSiblings(fields, path.init, path, fail) { siblings =>
          val kept = siblings.filterNot(_.name == path.last)
          if (kept.size == siblings.size) fail(path, "there is no such column")
          if (kept.isEmpty) fail(path, if (path.size == 1) "a table needs at least one column" else "a struct needs at least one field")
          kept
        }
      case RenameField(path, newName) =>
        fields = updateField(fields, path, fail) { f =>
          f.copy(name = newName)
        }
        fields = updateSiblings(fields, path.init, path, fail) { siblings =>
          if (siblings.count(_.name.equalsIgnoreCase(newName)) > 1) fail(path, s"a column named '$newName' already exists")
          siblings
        }
      case SetNullable(path, nullable) =>
        fields = updateField(fields, path, fail) { f =>
          if (!nullable && f.nullable) tightened += path
          f.copy(nullable = nullable)
        }
      case SetMetadata(path, key, value) =>
        fields = updateField(fields, path, fail)(f => f.copy(metadata = value.fold(f.metadata - key)(v => f.metadata + (key -> v))))
      case ChangeType(path, to) =>
        if (path.size > 1) fail(path, "changing the type of a field inside a struct is not supported; change a top-level column")
        fields = updateField(fields, path, fail) { f =>
          if (f.children.nonEmpty || f.arrowItemType.isDefined) fail(path, "only columns of a primitive type change type")
          Widening.refusal(f.arrowType, to).foreach(why => fail(path,
            s"cannot change ${f.logicalType} to ${LogicalTypes.toLogical(to, None)}: $why"))
          requireNoIndex(path, f)
          val widened = f.copy(id = nextId, arrowType = to)
          nextId += 1
          retyped += Retyped(f, widened)
          widened
        }
      case MakeVector(path, dimension) =>
        if (path.size > 1) fail(path, "only a top-level column becomes a vector")
        if (dimension <= 0) fail(path, s"a vector has a positive number of items, not $dimension")
        fields = updateField(fields, path, fail) { f =>
          f.arrowType match {
            case v: ArrowType.FixedSizeList => fail(path, s"it is a vector of ${v.getListSize} items already; " +
              "a vector's dimension does not change (copy the column into a new one of the other dimension)")
            case _: ArrowType.List | _: ArrowType.LargeList =>
            case _ => fail(path, s"it is ${f.logicalType}, and only a list (ARRAY) column becomes a vector")
          }
          val item = f.children.head
          if (item.children.nonEmpty || item.arrowItemType.isDefined || item.dictionary.isDefined || item.storedLogicalType.isDefined)
            fail(path, s"its items are ${item.logicalType}, and a vector's items are of a primitive type")
          requireNoIndex(path, f)
          // Lance's schema keeps a fixed-size list's item type in the field itself (no child field).
          val vector = f.copy(id = nextId, arrowType = new ArrowType.FixedSizeList(dimension), children = Nil,
            arrowItemType = Some(item.arrowType))
          nextId += 1
          retyped += Retyped(f, vector)
          vector
        }
      case MoveField(path, position) =>
        fields = updateSiblings(fields, path.init, path, fail) { siblings =>
          val moving = siblings.find(_.name == path.last).getOrElse(fail(path, "there is no such column"))
          place(siblings.filterNot(_ eq moving), moving, position, path, fail)
        }
    }

    val schema = snapshot.schema.copy(fields = fields)
    val made = tightened.result()
    val rewritten = retyped.result()
    // Pylance would write a fragment without data files, which no reader can open: refuse instead.
    // (A type change gives every fragment a new file.)
    if (rewritten.isEmpty) snapshot.fragments.find(f => f.getFilesCount > 0 && schema.filesOf(f).isEmpty)
      .foreach(f => fail(changes.collect { case d: DropField => d.path }.headOption.getOrElse(Nil),
        s"it is the last column with data in fragment ${f.getId}; a fragment needs one, so drop it together with a column added since or keep it"))
    // A type change must not let a concurrent writer's old values slip in under the old field id,
    // where they would read as NULL (pylance allows it): its Merge does not preserve nullability.
    val op =
      if (adds || rewritten.nonEmpty) Operation.Merge(snapshot.fragments, schema,
        preservesNullability = made.isEmpty && rewritten.isEmpty)
      else Operation.Project(schema, preservesNullability = made.isEmpty)
    Evolved(schema, op, made, rewritten)
  }

  private def place(siblings: Seq[LanceField], field: LanceField, position: Position, path: Seq[String],
      fail: (Seq[String], String) => Nothing): Seq[LanceField] = position match {
    case Position.Last => siblings :+ field
    case Position.First => field +: siblings
    case Position.After(name) =>
      val at = siblings.indexWhere(_.name == name)
      if (at < 0) fail(path, s"there is no column '$name' to place it after")
      (siblings.take(at + 1) :+ field) ++ siblings.drop(at + 1)
  }

  /** Rewrites the children of the struct at `parent` (the top level when empty). */
  private def updateSiblings(fields: Seq[LanceField], parent: Seq[String], path: Seq[String],
      fail: (Seq[String], String) => Nothing)(f: Seq[LanceField] => Seq[LanceField]): Seq[LanceField] =
    if (parent.isEmpty) f(fields)
    else updateField(fields, parent, fail) { p =>
      if (!p.arrowType.isInstanceOf[org.apache.arrow.vector.types.pojo.ArrowType.Struct])
        fail(path, s"'${parent.mkString(".")}' is not a struct")
      p.copy(children = f(p.children))
    }

  private def updateField(fields: Seq[LanceField], path: Seq[String], fail: (Seq[String], String) => Nothing)(
      f: LanceField => LanceField): Seq[LanceField] = {
    val at = fields.indexWhere(_.name == path.head)
    if (at < 0) fail(path, "there is no such column")
    val target = fields(at)
    val updated =
      if (path.size == 1) f(target)
      else if (!target.arrowType.isInstanceOf[org.apache.arrow.vector.types.pojo.ArrowType.Struct]) fail(path, s"'${target.name}' is not a struct")
      else target.copy(children = updateField(target.children, path.tail, fail)(f))
    fields.updated(at, updated)
  }
}
