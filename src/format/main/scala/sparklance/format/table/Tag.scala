package sparklance.format.table

import java.time.Instant

/**
 * A named version, as pylance keeps it in `_refs/tags/<name>.json`. `branch` is the branch the
 * version belongs to (None: the main line); `manifestSize` is the
 * byte size of the tagged manifest, which Lance uses to skip a lookup.
 */
final case class Tag(name: String, version: Long, branch: Option[String], createdAt: Instant, updatedAt: Instant,
    manifestSize: Long, metadata: Map[String, String])
