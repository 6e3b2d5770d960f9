package sparklance.format.table

/**
 * One difference between two versions of a table's schema. Lance tells fields apart by id: a
 * rename keeps the id, a drop removes it, an added field gets a new one, and a type change (Lance's
 * cast, our ALTER COLUMN ... TYPE) gives the field a new id under the same name. `path` is the
 * field's dotted path from the top level (in the older schema for drops and renames).
 */
sealed trait FieldChange { def path: String }

object FieldChange {
  final case class Added(path: String, field: LanceField) extends FieldChange
  final case class Dropped(path: String, field: LanceField) extends FieldChange
  final case class Renamed(path: String, to: String, field: LanceField) extends FieldChange
  /** The field at `path` now has a new id and type `now`; `was` is the field it replaced. */
  final case class Retyped(path: String, was: LanceField, now: LanceField) extends FieldChange
}

object SchemaDiff {
  import FieldChange._

  /** How `after` differs from `before`, field by field (nested fields too), in path order. */
  def of(before: LanceSchema, after: LanceSchema): Seq[FieldChange] = {
    val (was, now) = (paths(before), paths(after))
    // A new id at a path whose old id is gone replaced that field (a cast); a new id at a path
    // still held by the old id under another name (renamed away in the same commit) is an addition.
    val gonePaths = was.collect { case (id, (path, f)) if !now.contains(id) => path -> f }
    val retyped = now.collect { case (id, (path, f)) if !was.contains(id) && gonePaths.contains(path) =>
      Retyped(path, gonePaths(path), f)
    }
    val retypedPaths = retyped.map(_.path).toSet
    val changes = retyped ++
      now.collect { case (id, (path, f)) if !was.contains(id) && !retypedPaths(path) => Added(path, f) } ++
      // The item field of a list made a vector goes with it (a vector keeps its item type in itself).
      was.collect { case (id, (path, f)) if !now.contains(id) && !retypedPaths(path) &&
          !retypedPaths.exists(r => path.startsWith(r + ".")) => Dropped(path, f) } ++
      now.collect { case (id, (path, f)) if was.get(id).exists(_._1 != path) => Renamed(was(id)._1, path, f) }
    changes.toSeq.sortBy(_.path)
  }

  /** Every field of `schema` by id, with its dotted path. */
  private def paths(schema: LanceSchema): Map[Int, (String, LanceField)] = {
    def walk(f: LanceField, prefix: String): Seq[(Int, (String, LanceField))] = {
      val path = prefix + f.name
      (f.id -> (path, f)) +: f.children.flatMap(walk(_, path + "."))
    }
    schema.fields.flatMap(walk(_, "")).toMap
  }
}
