package sparklance.format.table

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector

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
}
