package sparklance.format.file.v2_1

import org.apache.arrow.vector.{BaseFixedWidthVector, BaseLargeVariableWidthVector, BaseVariableWidthVector, BitVectorHelper, FieldVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import sparklance.format.file.FixedWidth
import sparklance.format.table.LanceField

/**
 * Packed structs (field metadata `lance-encoding:packed`): one column whose values hold every
 * child's value after one another. Takes such a value apart into the vectors of the children read.
 */
private[format] object PackedStructs {
  val MetadataKey = "lance-encoding:packed"

  /** Whether `f` is a struct pylance stores packed. */
  def isPacked(f: LanceField): Boolean = f.arrowType.isInstanceOf[ArrowType.Struct] && f.children.nonEmpty &&
    f.metadata.get(MetadataKey).exists(_.equalsIgnoreCase("true"))

  /**
   * Reads the value at `data(from)`: `children` are all the struct's children in order; `kids`
   * the ones read, by their index among them, with their vectors, which get row `row`.
   */
  def read(children: Seq[LanceField], data: Array[Byte], from: Int, row: Int, kids: Seq[(Int, FieldVector)], ctx: Ctx): Unit = {
    var at = from
    var k = 0
    while (k < children.size) {
      val c = children(k)
      val target = kids.collectFirst { case (i, v) if i == k => v }
      FixedWidth.bits(c.arrowType) match {
        case Some(bits) if bits % 8 == 0 =>
          val width = bits / 8
          target.foreach {
            case v: BaseFixedWidthVector =>
              while (v.getValueCapacity <= row) v.reAlloc()
              v.getDataBuffer.setBytes(row.toLong * width, data, at, width)
              BitVectorHelper.setBit(v.getValidityBuffer, row)
            case v => throw ctx.unsupported(s"a packed child of vector ${v.getClass.getSimpleName}")
          }
          at += width
        case None if c.arrowType.isInstanceOf[ArrowType.Utf8] || c.arrowType.isInstanceOf[ArrowType.Binary] ||
            c.arrowType.isInstanceOf[ArrowType.LargeUtf8] || c.arrowType.isInstanceOf[ArrowType.LargeBinary] =>
          val lenBytes = if (c.arrowType.isInstanceOf[ArrowType.LargeUtf8] || c.arrowType.isInstanceOf[ArrowType.LargeBinary]) 8 else 4
          val len = Bytes.uN(data, at, lenBytes).toInt
          at += lenBytes
          target.foreach {
            case v: BaseVariableWidthVector => v.setSafe(row, data, at, len)
            case v: BaseLargeVariableWidthVector => v.setSafe(row, data, at, len)
            case v => throw ctx.unsupported(s"a packed child of vector ${v.getClass.getSimpleName}")
          }
          at += len
        case _ => throw ctx.unsupported(s"a packed struct child of type ${c.logicalType}")
      }
      k += 1
    }
  }
}
