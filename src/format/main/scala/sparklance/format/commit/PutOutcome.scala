package sparklance.format.commit

/** What became of one attempt to publish a manifest with put-if-absent. */
private[commit] sealed trait PutOutcome

private[commit] object PutOutcome {
  /** Our manifest is now the version. */
  case object Landed extends PutOutcome

  /** Another writer's manifest holds the version: a collision at the put itself. */
  case object Taken extends PutOutcome

  /** A newer version existed before we tried, so we did not: we lost while rebasing, not at the put. */
  case object Superseded extends PutOutcome

  /**
   * The store failed the put. It may still have written the manifest, even later (an object store
   * completing a request the client gave up on), until another writer holds the version.
   */
  final case class Failed(cause: Throwable) extends PutOutcome
}
