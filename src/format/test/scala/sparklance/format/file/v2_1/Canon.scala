package sparklance.format.file.v2_1

import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import scala.jdk.CollectionConverters._

/** Renders vector rows the way generate.py's canon() renders pylance's values. */
object Canon {
  private def hex(a: Array[Byte]): String = a.map(b => f"${b & 0xff}%02x").mkString

  def apply(v: ValueVector, i: Int): String = if (v.isNull(i)) "null" else v match {
    case b: BitVector => if (b.get(i) == 1) "true" else "false"
    case f: Float2Vector => f"h:${f.get(i) & 0xffff}%04x"
    case f: Float4Vector => f"f:${java.lang.Float.floatToRawIntBits(f.get(i))}%08x"
    case f: Float8Vector => f"d:${java.lang.Double.doubleToRawLongBits(f.get(i))}%016x"
    case d: DecimalVector => d.getObject(i).unscaledValue.toString
    case d: Decimal256Vector => d.getObject(i).unscaledValue.toString
    case u: UInt1Vector => (u.get(i) & 0xff).toString
    case u: UInt2Vector => u.get(i).toInt.toString
    case u: UInt4Vector => Integer.toUnsignedLong(u.get(i)).toString
    case u: UInt8Vector => java.lang.Long.toUnsignedString(u.get(i))
    case f: BaseFixedWidthVector => f.getTypeWidth match {
      case 1 => f.getDataBuffer.getByte(i.toLong).toString
      case 2 => f.getDataBuffer.getShort(2L * i).toString
      case 4 => f.getDataBuffer.getInt(4L * i).toString
      case 8 => f.getDataBuffer.getLong(8L * i).toString
      case w => val a = new Array[Byte](w); f.getDataBuffer.getBytes(i.toLong * w, a); "x:" + hex(a)
    }
    case s: BaseVariableWidthVector => "x:" + hex(s.get(i))
    case s: BaseLargeVariableWidthVector => "x:" + hex(s.get(i))
    case l: FixedSizeListVector => (0 until l.getListSize).map(j => apply(l.getDataVector, i * l.getListSize + j)).mkString("[", ",", "]")
    case l: ListVector =>
      (l.getOffsetBuffer.getInt(i * 4L) until l.getOffsetBuffer.getInt(i * 4L + 4)).map(apply(l.getDataVector, _)).mkString("[", ",", "]")
    case l: LargeListVector =>
      (l.getOffsetBuffer.getLong(i * 8L).toInt until l.getOffsetBuffer.getLong(i * 8L + 8).toInt).map(apply(l.getDataVector, _)).mkString("[", ",", "]")
    case s: StructVector => s.getChildrenFromFields.asScala.map(c => c.getName + "=" + apply(c, i)).mkString("{", ",", "}")
    case _: NullVector => "null"
  }
}
