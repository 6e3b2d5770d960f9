package sparklance.format.table

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.complex.StructVector
import sparklance.format.Resources

/** All-null vectors, for fields a fragment has no data file for (columns added after it was written). */
object NullVectors {
  def allNull(field: LanceField, rows: Int, allocator: BufferAllocator): FieldVector = {
    val v = field.toArrow.createVector(allocator).asInstanceOf[FieldVector]
    v.setInitialCapacity(rows)
    v.allocateNew()
    (0 until rows).foreach(v.setNull)
    v.setValueCount(rows)
    v
  }

  /**
   * The struct values `read` (of `field` less children no data file of the fragment holds) with
   * those children added, all NULL, in `field`'s order; `read` is consumed.
   */
  def completing(read: FieldVector, field: LanceField, allocator: BufferAllocator): FieldVector = read match {
    case s: StructVector =>
      val n = s.getValueCount
      val out = field.toArrow.createVector(allocator).asInstanceOf[StructVector]
      Resources.closeOnFailure(Seq(out, s)) {
        out.setInitialCapacity(n)
        out.allocateNew()
        field.children.foreach { c =>
          val target = out.getChild(c.name).asInstanceOf[FieldVector]
          Option(s.getChild(c.name).asInstanceOf[FieldVector]) match {
            case Some(got) =>
              val whole = if (got.getField.getChildren.size == c.children.size) got else completing(got, c, allocator)
              whole.makeTransferPair(target).transfer()
              if (whole ne got) whole.close()
            case None =>
              (0 until n).foreach(target.setNull)
              target.setValueCount(n)
          }
        }
        (0 until n).foreach(i => if (s.isNull(i)) out.setNull(i) else out.setIndexDefined(i))
        out.setValueCount(n)
      }
      s.close()
      out
    case other => other
  }
}
