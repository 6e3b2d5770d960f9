package sparklance.spark.streaming

/** Where a new stream query (one without offsets in its checkpoint) starts reading a table. */
sealed trait SourceStart

object SourceStart {
  /** The rows of the latest version first (its whole fragment list), then each later version's appends (the default). */
  case object InitialSnapshot extends SourceStart
  /** Only versions committed after the query started (`startingVersion = latest`). */
  case object Latest extends SourceStart
  /** The appends of `version` and of every later one (`startingVersion = n`). */
  final case class Version(version: Long) extends SourceStart
  /** The appends of the first version committed at or after `micros` and later ones (`startingTimestamp`). */
  final case class Timestamp(micros: Long, text: String) extends SourceStart
}
