package sparklance.format.file.v2_0

import org.apache.arrow.vector.{BitVectorHelper, FieldVector}
import org.apache.arrow.vector.complex.StructVector
import sparklance.format.UnsupportedFeatureException
import sparklance.format.file.ContainerWriter
import sparklance.format.table.LanceField

/**
 * A struct: a header column with one `struct` page covering every value in the file, written at
 * the end (§2.9), plus the children's columns. 2.0 has no struct validity, so nulls are refused.
 */
private[v2_0] final class StructEncoder(field: LanceField, children: Seq[FieldEncoder]) extends FieldEncoder {
  private val header = new ColumnPages
  private var total = 0L

  def columns: Seq[ColumnPages] = header +: children.flatMap(_.columns)

  def append(v: FieldVector, from: Int, count: Int): Unit = {
    val struct = v match {
      case s: StructVector => s
      case other => throw new IllegalArgumentException(
        s"Field '${field.name}' is a struct, but its vector is a ${other.getClass.getSimpleName}")
    }
    if (struct.size < children.size) throw new IllegalArgumentException(
      s"Struct field '${field.name}' has ${children.size} children, its vector ${struct.size}")
    if (struct.getNullCount > 0) {
      var nulls = 0
      var i = from
      while (i < from + count) {
        if (BitVectorHelper.get(struct.getValidityBuffer, i) == 0) nulls += 1
        i += 1
      }
      if (nulls > 0) throw new UnsupportedFeatureException(
        s"The struct field '${field.name}' contains $nulls null value(s), but Lance file version 2.0 cannot store " +
          "struct-level nulls; use data_storage_version 2.1 or later")
    }
    children.zip(field.children).zipWithIndex.foreach { case ((enc, f), i) =>
      val child = struct.getChildByOrdinal(i).asInstanceOf[FieldVector]
      if (child.getName != f.name) throw new IllegalArgumentException(
        s"Struct field '${field.name}': child $i of the vector is '${child.getName}', the schema expects '${f.name}'")
      enc.append(child, from, count)
    }
    total += count
  }

  def flushPage(out: ContainerWriter): Unit = children.foreach(_.flushPage(out))

  def finish(out: ContainerWriter): Unit = {
    header.write(out, Nil, total, ArrayEncodings.struct)
    children.foreach(_.finish(out))
  }
}
