package sparklance.format.file

import sparklance.format.UnsupportedFeatureException

/**
 * Where one non-NULL blob value's bytes are, decoded from its descriptor (see [[BlobDescriptors]]).
 * The kind decides what position and size mean, so it is read first: an external blob of size 0
 * is a whole object whose length only its store knows, not an empty value.
 */
sealed trait BlobLocation {
  /** The value's length as the descriptor states it; None where only the store knows it. */
  def knownSize: Option[Long]
}

object BlobLocation {
  /** `size` bytes at `position` of the data file itself (size 0: an empty value). */
  final case class Inline(position: Long, size: Long) extends BlobLocation {
    def knownSize: Option[Long] = Some(size)
  }
  /** `size` bytes at `position` of the shared sidecar file `blobId` next to the data file. */
  final case class Packed(blobId: Int, position: Long, size: Long) extends BlobLocation {
    def knownSize: Option[Long] = Some(size)
  }
  /** The sidecar file `blobId` of its own, `size` bytes from `position` (0 as Lance writes them). */
  final case class Dedicated(blobId: Int, position: Long, size: Long) extends BlobLocation {
    def knownSize: Option[Long] = Some(size)
  }
  /**
   * An object outside the table: `uri` is absolute when `baseId` is 0, else relative to the
   * table's registered base path `baseId`. `range` None means the whole object.
   */
  final case class External(uri: String, baseId: Int, range: Option[ByteRange]) extends BlobLocation {
    def knownSize: Option[Long] = range.map(_.size)
  }

  /**
   * `size` bytes at `position` of an object the table manages apart from its data files (feature
   * flag 16384): `uri` is relative to the table's root when `baseId` is 0 (kind 4), else to its
   * registered base path `baseId` (kind 5). Size 0 is an empty value.
   */
  final case class Managed(uri: String, baseId: Int, position: Long, size: Long) extends BlobLocation {
    def knownSize: Option[Long] = Some(size)
  }

  final case class ByteRange(position: Long, size: Long)

  /** Lance's blob kinds (the descriptor's first field). */
  object Kind {
    val Inline: Byte = 0
    val Packed: Byte = 1
    val Dedicated: Byte = 2
    val External: Byte = 3
    val Managed: Byte = 4
    /** Managed, under a registered base path: pylance 14 writes this kind when given a `base_id`. */
    val ManagedUnderBase: Byte = 5
  }

  /**
   * The location a descriptor states. Kinds not listed are refused by number, naming `what` (the
   * row and column), rather than read as something they are not.
   */
  def decode(kind: Byte, position: Long, size: Long, blobId: Int, uri: String, what: => String): BlobLocation = kind match {
    case Kind.Inline => Inline(position, size)
    case Kind.Packed => Packed(blobId, position, size)
    case Kind.Dedicated => Dedicated(blobId, position, size)
    // pylance stores a whole external object as position 0, size 0 (Lance refuses a 0-byte range).
    case Kind.External => External(uri, blobId, if (size == 0) None else Some(ByteRange(position, size)))
    case Kind.Managed | Kind.ManagedUnderBase => Managed(uri, blobId, position, size)
    case k => throw new UnsupportedFeatureException(s"$what uses blob kind ${k & 0xff}, which sparklance does not read")
  }
}
