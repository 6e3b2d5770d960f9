package sparklance.format.table

import org.apache.arrow.vector.types.pojo.Field

/**
 * One change of a table's schema, as ALTER TABLE states it. `path` names a column from the top
 * level down (`Seq("address", "zip")` for a struct's child).
 */
sealed trait SchemaChange { def path: Seq[String] }

object SchemaChange {
  /** Where a column goes among its siblings. */
  sealed trait Position
  object Position {
    case object First extends Position
    case object Last extends Position
    final case class After(sibling: String) extends Position
  }

  /**
   * A new column (or struct child): `path` ends with its name; `field` gives its type. Without
   * `valuesWritten` it holds no values (existing rows read NULL), so it must be nullable; with it
   * the caller writes a value for every existing row in the same commit, so it may be NOT NULL.
   */
  final case class AddField(path: Seq[String], field: Field, position: Position = Position.Last,
      valuesWritten: Boolean = false) extends SchemaChange
  final case class DropField(path: Seq[String]) extends SchemaChange
  final case class RenameField(path: Seq[String], newName: String) extends SchemaChange
  /** Nullability; making a column NOT NULL needs its data checked first (see [[SchemaEvolution.Evolved.tightened]]). */
  final case class SetNullable(path: Seq[String], nullable: Boolean) extends SchemaChange
  /** A field metadata key set (Some) or removed (None); a column's comment is the key `comment`. */
  final case class SetMetadata(path: Seq[String], key: String, value: Option[String]) extends SchemaChange
  final case class MoveField(path: Seq[String], position: Position) extends SchemaChange
  /** A type change that keeps every value (see [[Widening]]): the column is written anew under a new field id. */
  final case class ChangeType(path: Seq[String], to: org.apache.arrow.vector.types.pojo.ArrowType) extends SchemaChange

  /**
   * A list column made a vector, a fixed-size list of `dimension` items of the list's item type:
   * written anew under a new field id, as a type change is; every array must have `dimension` items
   * (the caller checks the data, see [[SchemaEvolution.Evolved.retyped]]).
   */
  final case class MakeVector(path: Seq[String], dimension: Int) extends SchemaChange

  /** The field metadata key a column's comment is kept under (Spark's own name for it). */
  val CommentKey = "comment"
}
