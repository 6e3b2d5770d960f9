package sparklance.format.file.v2_0

import org.apache.arrow.vector.types.pojo.ArrowType
import sparklance.format.UnsupportedFeatureException
import sparklance.format.file.FixedWidth

/** What the pages of a value column must decode to, derived from the field's Arrow type. */
private[v2_0] sealed trait Shape

private[v2_0] object Shape {
  /** `bits` per value; 1 = a bitmap (bool). */
  final case class Fixed(bits: Int) extends Shape
  /** Variable-length bytes: string and binary of either offset width. */
  case object Variable extends Shape
  final case class FixedSizeList(dimension: Int, item: Shape) extends Shape
  /**
   * The values of a dictionary field (`dict:...`) with indices of `indexBits`: its dictionary pages
   * map index k to item k, where a plain string column's 0 is a null and k item k - 1 (§2.6a).
   * Decoded pages have the `values` shape.
   */
  final case class DictionaryField(indexBits: Int, values: Shape) extends Shape
  /** The offsets of a list column. */
  case object ListOffsets extends Shape

  /** The shape of a leaf field (not struct, list or null). */
  def of(name: String, t: ArrowType, fslItem: Option[ArrowType]): Shape = t match {
    case _: ArrowType.Utf8 | _: ArrowType.LargeUtf8 | _: ArrowType.Binary | _: ArrowType.LargeBinary => Variable
    case f: ArrowType.FixedSizeList =>
      val item = fslItem.getOrElse(throw new IllegalArgumentException(s"Fixed-size list field '$name' has no item type"))
      FixedSizeList(f.getListSize, of(name, item, None))
    case other => FixedWidth.bits(other).map(Fixed)
      .getOrElse(throw new UnsupportedFeatureException(s"Field '$name': reading Arrow type $other from a Lance 2.0 file is not supported"))
  }
}
