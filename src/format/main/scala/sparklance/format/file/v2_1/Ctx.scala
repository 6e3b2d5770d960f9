package sparklance.format.file.v2_1

import sparklance.format.{CorruptFileException, UnsupportedFeatureException}

/** Where decoding happens (file and column/page), for error messages. */
private[v2_1] final case class Ctx(path: String, where: String) {
  def corrupt(detail: String): CorruptFileException = new CorruptFileException(path, s"$where: $detail")
  def unsupported(what: String): UnsupportedFeatureException =
    new UnsupportedFeatureException(s"$where of $path uses $what, which sparklance does not read yet")
  def check(cond: Boolean, detail: => String): Unit = if (!cond) throw corrupt(detail)
}
