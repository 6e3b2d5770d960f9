package sparklance.format.commit

import sparklance.format.proto.TableProtos.Manifest

/**
 * A compare-and-set on keys of the manifest's table metadata, carried by a commit: the keys held
 * `expected` (None: absent) in version `since`, which the write was planned on, and the commit
 * sets them to `updated`. Any version committed after `since` that holds another value of such a
 * key (another writer set it meanwhile) makes the commit fail with a retryable conflict instead of
 * landing on it: nothing is rebased over it. `what` says, for the message, what the keys hold.
 *
 * Every Lance commit copies the table metadata from the version before (pylance's too), so
 * writers that do not know the keys keep them and never conflict.
 */
final case class MetadataClaim(since: Long, expected: Map[String, Option[String]], updated: Map[String, String], what: String) {
  require(updated.keySet.subsetOf(expected.keySet), "a claim sets only keys whose value it read")

  /** Why a commit may not land after `manifest` (a version after `since`), if it may not. */
  def movedIn(manifest: Manifest): Option[String] = {
    val table = manifest.getTableMetadataMap
    expected.collectFirst { case (key, value) if Option(table.get(key)) != value =>
      s"it changed $what ($key: ${value.getOrElse("unset")} when this statement was planned on version $since, " +
        s"now ${Option(table.get(key)).getOrElse("unset")})"
    }
  }
}
