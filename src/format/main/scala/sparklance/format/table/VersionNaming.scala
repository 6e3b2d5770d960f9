package sparklance.format.table

import sparklance.format.LanceException

/**
 * Manifest file names. "V2" names are `{u64::MAX - v:020}.manifest` so the latest version sorts
 * first; old datasets use "V1" names `{v}.manifest`. A dataset uses one scheme throughout.
 */
sealed trait VersionNaming {
  def fileName(version: Long): String
}

object VersionNaming {
  case object V1 extends VersionNaming {
    def fileName(version: Long): String = s"$version.manifest"
  }
  case object V2 extends VersionNaming {
    def fileName(version: Long): String = {
      val inverted = java.lang.Long.toUnsignedString(-1L - version)
      ("0" * (20 - inverted.length)) + inverted + ".manifest"
    }
  }

  private val Suffix = ".manifest"

  /** The scheme and version a manifest file name encodes; None for non-manifest or detached names. */
  def parse(name: String): Option[(VersionNaming, Long)] = {
    if (!name.endsWith(Suffix) || name.startsWith("d")) return None
    val digits = name.dropRight(Suffix.length)
    if (digits.isEmpty || !digits.forall(_.isDigit)) None
    else if (name.length == 29) Some(V2 -> (-1L - java.lang.Long.parseUnsignedLong(digits)))
    else Some(V1 -> digits.toLong)
  }

  /** The versions in a `_versions` listing, with the single scheme they use. */
  def scan(tablePath: String, names: Seq[String]): (Option[VersionNaming], Seq[Long]) = {
    val parsed = names.flatMap(parse)
    val schemes = parsed.map(_._1).distinct
    if (schemes.size > 1)
      throw new LanceException(s"Lance table $tablePath mixes V1 and V2 manifest names in _versions; refusing to guess")
    (schemes.headOption, parsed.map(_._2).sorted)
  }
}
