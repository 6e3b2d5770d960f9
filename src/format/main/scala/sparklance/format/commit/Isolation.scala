package sparklance.format.commit

/**
 * What a statement that read the table (DELETE, UPDATE, MERGE, an INSERT that selects from its own
 * target) guarantees against writers that committed after the version it read. Serializable (the
 * default): it fails if another writer added or changed rows its reads could have returned, as if
 * the statements had run one after the other. Snapshot: it applies to the rows of the version it
 * read and keeps rows committed meanwhile as they are, so two MERGEs may both insert one new key.
 */
sealed trait Isolation { def name: String }

object Isolation {
  /** The table property (and statement option) that chooses a table's isolation level. */
  val Key = "isolation_level"

  case object Serializable extends Isolation { val name = "serializable" }
  case object Snapshot extends Isolation { val name = "snapshot" }

  def parse(value: String): Isolation = value.trim.toLowerCase match {
    case "serializable" => Serializable
    case "snapshot" => Snapshot
    case other => throw new IllegalArgumentException(s"Unknown isolation level '$other': use serializable or snapshot")
  }
}
