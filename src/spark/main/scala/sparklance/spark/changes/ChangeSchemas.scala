package sparklance.spark.changes

import scala.jdk.CollectionConverters._
import sparklance.format.table.{FieldChange, LanceField, LanceSchema, SchemaDiff, Snapshot, Widening}
import sparklance.spark.SparkTypes

/**
 * How change data serves rows of every version of a range in the schema of its end version.
 * `snapshots` are consecutive versions, the range's end last. Additive changes keep the feed
 * going: a column added within the range reads NULL in rows of versions before it, and a column
 * whose type was widened (Lance gives it a new field id under the same name, see [[SchemaDiff]])
 * is read from the field the older version stored and cast. A drop or a rename (fields keep their
 * id across a rename), or a type change that is no widening, leaves rows from before it without a
 * place in the end's schema: such a change is a [[SchemaBreak]].
 */
final class ChangeSchemas(tableName: String, snapshots: Seq[Snapshot]) {
  private val end = snapshots.last
  private def sameSchema(a: Snapshot, b: Snapshot) = a.manifest.getFieldsList == b.manifest.getFieldsList

  /** The schema changes of each commit (version) whose schema differs from the version before. */
  private val steps: Seq[(Long, Seq[FieldChange])] = snapshots.sliding(2).collect {
    case Seq(before, after) if !sameSchema(before, after) => after.version -> SchemaDiff.of(before.schema, after.schema)
  }.toSeq

  /** Changes that end the feed, in version order (the first of each commit, by path). */
  val breaks: Seq[SchemaBreak] = steps.flatMap { case (version, changes) =>
    changes.flatMap(SchemaBreak.of(tableName, version, _)).headOption
  }

  /** Whether every version has the end's schema (nothing to map). */
  def single: Boolean = steps.isEmpty

  /**
   * The end's schema as change data serves it: a column whose definition differs at some version
   * of the range (added, widened, nullability relaxed or tightened) is nullable, with its nested
   * fields, since rows of that version may hold NULL in it or not have it at all.
   */
  def servedSchema: LanceSchema =
    if (single) end.schema
    else end.schema.copy(fields = end.schema.fields.map { f =>
      if (snapshots.forall(s => s.schema.fields.find(_.id == f.id).contains(f))) f else nullableTree(f)
    })

  private def nullableTree(f: LanceField): LanceField = f.copy(nullable = true, children = f.children.map(nullableTree))

  /**
   * The Lance fields that read rows of `version`'s fragments as `wanted` (top-level fields of the
   * end, pruned to the columns read): fields it holds under the end's ids as it stores them, a
   * widened field as it stored it before the cast, and a field it does not have under an id none
   * of its data files lists, so that it reads as NULL (an id can be reused after a drop: Lance
   * gives new fields max id + 1, so an old file may list a dropped field under the id a later
   * column got). None when the version has the end's schema.
   */
  def fieldsAt(version: Long, wanted: Seq[LanceField]): Option[Seq[LanceField]] = {
    val at = snapshots.find(_.version == version).getOrElse(
      throw new IllegalStateException(s"Version $version of $tableName is not in the change data range"))
    if (sameSchema(at, end)) return None
    // The field of `at` that each end id stands for: its own id, or the one a later cast replaced.
    var stored: Map[Int, LanceField] = at.schema.allFields.map(f => f.id -> f).toMap
    steps.filter(_._1 > version).foreach { case (_, changes) =>
      changes.foreach {
        case r: FieldChange.Retyped if stored.contains(r.was.id) => stored = stored - r.was.id + (r.now.id -> stored(r.was.id))
        case _ =>
      }
    }
    val listed = at.fragments.flatMap(_.getFilesList.asScala.flatMap(_.getFieldsList.asScala.map(_.intValue)))
    var fresh = (listed ++ Seq(at.schema.maxFieldId, end.schema.maxFieldId)).max
    def absent(e: LanceField): LanceField = { fresh += 1; e.copy(id = fresh, children = e.children.map(absent)) }
    def read(e: LanceField): LanceField = stored.get(e.id) match {
      case Some(own) if own.id == e.id => own.copy(children = e.children.map(read))
      case Some(beforeCast) => beforeCast
      case None => absent(e)
    }
    Some(wanted.map(read))
  }
}

/** A schema change within a change-data range that rows from before it cannot be served across. */
final case class SchemaBreak(version: Long, column: String, what: String)

object SchemaBreak {
  def of(tableName: String, version: Long, change: FieldChange): Option[SchemaBreak] = change match {
    case _: FieldChange.Added => None
    case d: FieldChange.Dropped => Some(SchemaBreak(version, d.path, s"dropped column '${d.path}'"))
    case r: FieldChange.Renamed => Some(SchemaBreak(version, r.path, s"renamed column '${r.path}' to '${r.to}'"))
    case r: FieldChange.Retyped =>
      val (from, to) = (SparkTypes.toSparkField(r.was, tableName).dataType, SparkTypes.toSparkField(r.now, tableName).dataType)
      // Same Spark type (e.g. string to large string): nothing to cast.
      if (from == to || Widening.refusal(r.was.arrowType, r.now.arrowType).isEmpty) None
      else Some(SchemaBreak(version, r.path,
        s"changed the type of column '${r.path}' from ${from.sql} to ${to.sql}, which is not a widening"))
  }
}
