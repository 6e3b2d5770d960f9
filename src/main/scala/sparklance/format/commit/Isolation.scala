package sparklance.format.commit

/**
 * What a DELETE / UPDATE / MERGE guarantees against writers that committed after the version it
 * read. Serializable (the default): rows appended concurrently might have matched the statement's
 * condition, so any concurrent append is a conflict. Snapshot: the statement applies to the rows
 * of the version it read, and concurrent appends are kept as they are.
 */
sealed trait Isolation { def name: String }

object Isolation {
  case object Serializable extends Isolation { val name = "serializable" }
  case object Snapshot extends Isolation { val name = "snapshot" }

  def parse(value: String): Isolation = value.trim.toLowerCase match {
    case "serializable" => Serializable
    case "snapshot" => Snapshot
    case other => throw new IllegalArgumentException(s"Unknown isolation level '$other': use serializable or snapshot")
  }
}
