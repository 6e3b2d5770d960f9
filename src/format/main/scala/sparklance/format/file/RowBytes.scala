package sparklance.format.file

import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import scala.jdk.CollectionConverters._

/**
 * The Arrow data size of a row range, from the vectors' offsets (so also while they are being
 * filled, before their value count is set): where writers cut pages and batches, and how many
 * rows a reader decodes at once.
 */
object RowBytes {
  def apply(v: ValueVector, from: Int, until: Int): Long = if (until <= from) 0L else v match {
    case _: BitVector => (until - from + 7L) / 8
    case f: BaseFixedWidthVector => (until - from).toLong * f.getTypeWidth
    case s: BaseVariableWidthVector =>
      s.getOffsetBuffer.getInt(until * 4L).toLong - s.getOffsetBuffer.getInt(from * 4L) + 8L * (until - from)
    case s: BaseLargeVariableWidthVector =>
      s.getOffsetBuffer.getLong(until * 8L) - s.getOffsetBuffer.getLong(from * 8L) + 8L * (until - from)
    case l: FixedSizeListVector => apply(l.getDataVector, from * l.getListSize, until * l.getListSize)
    case l: ListVector =>
      8L * (until - from) + apply(l.getDataVector, l.getOffsetBuffer.getInt(from * 4L), l.getOffsetBuffer.getInt(until * 4L))
    case l: LargeListVector =>
      8L * (until - from) + apply(l.getDataVector,
        Math.toIntExact(l.getOffsetBuffer.getLong(from * 8L)), Math.toIntExact(l.getOffsetBuffer.getLong(until * 8L)))
    case s: StructVector => s.getChildrenFromFields.asScala.map(apply(_, from, until)).sum
    case _ => 0L
  }
}
