package sparklance.format.file.v2_0

import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import scala.jdk.CollectionConverters._

/** Vector contents as plain Scala values (null for null slots), independent of the code under test. */
object Rows {
  def apply(v: ValueVector): IndexedSeq[Any] = (0 until v.getValueCount).map(row(v, _))

  def row(v: ValueVector, i: Int): Any = if (v.isNull(i)) null else v match {
    case b: BitVector => b.get(i) == 1
    case f: BaseFixedWidthVector =>
      val w = f.getTypeWidth
      val a = new Array[Byte](w)
      f.getDataBuffer.getBytes(i.toLong * w, a)
      a.toSeq
    case s: BaseVariableWidthVector =>
      val (a, b) = (s.getOffsetBuffer.getInt(i * 4L), s.getOffsetBuffer.getInt(i * 4L + 4))
      val out = new Array[Byte](b - a)
      s.getDataBuffer.getBytes(a, out)
      out.toSeq
    case s: BaseLargeVariableWidthVector =>
      val (a, b) = (s.getOffsetBuffer.getLong(i * 8L), s.getOffsetBuffer.getLong(i * 8L + 8))
      val out = new Array[Byte]((b - a).toInt)
      s.getDataBuffer.getBytes(a, out)
      out.toSeq
    case l: FixedSizeListVector => (0 until l.getListSize).map(j => row(l.getDataVector, i * l.getListSize + j))
    case l: ListVector => (l.getOffsetBuffer.getInt(i * 4L) until l.getOffsetBuffer.getInt(i * 4L + 4)).map(row(l.getDataVector, _))
    case l: LargeListVector =>
      (l.getOffsetBuffer.getLong(i * 8L).toInt until l.getOffsetBuffer.getLong(i * 8L + 8).toInt).map(row(l.getDataVector, _))
    case s: StructVector => s.getChildrenFromFields.asScala.map(c => c.getName -> row(c, i)).toList
    case _: NullVector => null
  }
}
