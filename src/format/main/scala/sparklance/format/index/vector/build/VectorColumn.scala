package sparklance.format.index.vector.build

import java.nio.ByteOrder
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.Float4Vector
import org.apache.arrow.vector.complex.FixedSizeListVector
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.ArrowType
import org.roaringbitmap.RoaringBitmap
import scala.util.{Random, Using}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.rowids.RowLineage
import sparklance.format.table.{BasePaths, FragmentScanner, LanceField, RowAddress}

/**
 * A column of vectors (`fixed_size_list<float32>[dim]`) as the build reads it: every live,
 * non-null vector of a fragment with its row id, or a random sample of them.
 */
object VectorColumn {
  /** The dimension of `field` if it is a vector column an index can be built on. */
  def dimension(field: LanceField): Option[Int] = (field.arrowType, field.arrowItemType) match {
    case (l: ArrowType.FixedSizeList, Some(f: ArrowType.FloatingPoint))
        if f.getPrecision == FloatingPointPrecision.SINGLE && l.getListSize > 0 => Some(l.getListSize)
    case _ => None
  }

  /**
   * Every live row of `fragment` whose vector is not null, as (row id, vector in `buffer` at
   * `from`) to `each`; the buffer is reused. Row ids are stable row ids where the table has them,
   * row addresses otherwise (what `_rowid` holds in an index, §3).
   */
  def foreach(storage: Storage, files: BasePaths, fragment: DataFragment, field: LanceField, allocator: BufferAllocator,
      within: Option[RoaringBitmap] = None)(each: (Long, Array[Float], Int) => Unit): Unit = {
    val dim = dimension(field).getOrElse(throw new IllegalArgumentException(s"column '${field.name}' is not a vector column"))
    val stable = RowLineage.rowIds(storage, files.tablePath, fragment)
    Using.resource(new FragmentScanner(storage, files, fragment, Seq(field), allocator, 0, fragment.getPhysicalRows, within = within)) {
      scanner =>
        var buffer = new Array[Float](0)
        scanner.foreach { batch =>
          try {
            val list = batch.vectors.head.asInstanceOf[FixedSizeListVector]
            val values = list.getDataVector.asInstanceOf[Float4Vector]
            if (buffer.length < batch.numRows * dim) buffer = new Array[Float](batch.numRows * dim)
            // Without null values the batch's floats come over in one copy (the common case).
            val bulk = values.getNullCount == 0 && values.getValueCount >= batch.numRows * dim
            if (bulk) values.getDataBuffer.nioBuffer(0L, batch.numRows * dim * 4).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
              .get(buffer, 0, batch.numRows * dim)
            var i = 0
            while (i < batch.numRows) {
              if (!list.isNull(i)) {
                var j = 0
                val start = i * dim
                if (!bulk) while (j < dim) { buffer(start + j) = if (values.isNull(start + j)) Float.NaN else values.get(start + j); j += 1 }
                val offset = batch.offsets(i)
                val id = stable.fold(RowAddress.of(fragment.getId, offset))(_(offset))
                each(id, buffer, start)
              }
              i += 1
            }
          } finally batch.close()
        }
    }
  }

  /**
   * About `count` vectors of `fragment` at random (seeded) offsets, as rows of `dim` floats: rows
   * deleted or null at the chosen offsets are missing, so the sample may be a little smaller.
   */
  def sample(storage: Storage, files: BasePaths, fragment: DataFragment, field: LanceField, count: Int, seed: Long,
      allocator: BufferAllocator): Array[Float] = {
    val dim = dimension(field).get
    val physical = fragment.getPhysicalRows
    val picked = new RoaringBitmap()
    if (count >= physical) picked.add(0L, physical)
    else {
      val random = new Random(seed)
      while (picked.getCardinality < count) picked.add(random.nextLong(physical).toInt)
    }
    val out = new Array[Float](picked.getCardinality * dim)
    var n = 0
    foreach(storage, files, fragment, field, allocator, within = Some(picked)) { (_, v, from) =>
      System.arraycopy(v, from, out, n * dim, dim)
      n += 1
    }
    java.util.Arrays.copyOf(out, n * dim)
  }
}
