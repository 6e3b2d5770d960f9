package sparklance.format.file.v2_0

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import scala.jdk.CollectionConverters._
import scala.util.Random
import sparklance.format.table.LanceField

/** Random vectors for a field; `nullRate` applies at every level (structs excepted unless asked). */
final class RandomVectors(seed: Long, nullRate: Double, structNulls: Boolean = false) {
  private val rnd = new Random(seed)

  def vector(field: LanceField, n: Int, allocator: BufferAllocator): FieldVector = {
    val v = field.toArrow.createVector(allocator)
    fill(v, n)
    v
  }

  private def isNull: Boolean = rnd.nextDouble() < nullRate

  private def fill(v: FieldVector, n: Int): Unit = v match {
    case b: BitVector =>
      b.allocateNew(n)
      (0 until n).foreach(i => if (isNull) b.setNull(i) else b.set(i, rnd.nextInt(2)))
      b.setValueCount(n)
    case f: BaseFixedWidthVector =>
      f.allocateNew(n)
      val bytes = new Array[Byte](n * f.getTypeWidth)
      rnd.nextBytes(bytes)
      f.getDataBuffer.setBytes(0, bytes)
      (0 until n).foreach(i => BitVectorHelper.setValidityBit(f.getValidityBuffer, i, if (isNull) 0 else 1))
      f.setValueCount(n)
    case s: BaseVariableWidthVector =>
      s.allocateNew()
      (0 until n).foreach(i => if (isNull) s.setNull(i) else s.setSafe(i, randomBytes()))
      s.setValueCount(n)
    case s: BaseLargeVariableWidthVector =>
      s.allocateNew()
      (0 until n).foreach(i => if (isNull) s.setNull(i) else s.setSafe(i, randomBytes()))
      s.setValueCount(n)
    case l: FixedSizeListVector =>
      l.setInitialCapacity(n)
      l.allocateNew()
      fill(l.getDataVector, n * l.getListSize)
      (0 until n).foreach(i => if (isNull) l.setNull(i) else l.setNotNull(i))
      l.setValueCount(n)
    case l: ListVector =>
      val lens = Array.fill(n)(rnd.nextInt(5))
      val nulls = Array.fill(n)(isNull)
      l.setInitialCapacity(n)
      l.allocateNew()
      fill(l.getDataVector, (0 until n).filterNot(nulls).map(lens).sum)
      (0 until n).foreach { i =>
        if (nulls(i)) l.setNull(i) else { l.startNewValue(i); l.endValue(i, lens(i)) }
      }
      l.setValueCount(n)
    case l: LargeListVector =>
      val lens = Array.fill(n)(rnd.nextInt(5))
      val nulls = Array.fill(n)(isNull)
      l.setInitialCapacity(n)
      l.allocateNew()
      fill(l.getDataVector, (0 until n).filterNot(nulls).map(lens).sum)
      (0 until n).foreach { i =>
        if (nulls(i)) l.setNull(i) else { l.startNewValue(i); l.endValue(i, lens(i)) }
      }
      l.setValueCount(n)
    case s: StructVector =>
      s.setInitialCapacity(n)
      s.allocateNew()
      s.getChildrenFromFields.asScala.foreach(fill(_, n))
      (0 until n).foreach(i => if (structNulls && isNull) s.setNull(i) else s.setIndexDefined(i))
      s.setValueCount(n)
    case z: NullVector => z.setValueCount(n)
  }

  private def randomBytes(): Array[Byte] = {
    val a = new Array[Byte](rnd.nextInt(12))
    rnd.nextBytes(a)
    a
  }
}
