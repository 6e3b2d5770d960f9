package sparklance.format.table

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import org.roaringbitmap.RoaringBitmap
import scala.util.Using
import sparklance.format.{LanceException, Resources}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}

/**
 * Lance's column-only data files: one file holding some columns of a fragment for all its
 * physical rows, deleted ones included (their values are never read), appended to the
 * fragment's files. A column added with values, or rewritten under a new field id, costs only
 * its own bytes.
 */
object ColumnFile {
  /**
   * Reads `sources` (fields of `snapshot`'s schema) for every physical row of `fragment`, turns
   * each batch into the vectors of `target`'s fields with `derive` (which takes ownership of the
   * batch's vectors), and writes them as one file in the table's format. Nothing references the
   * file until a commit does; a failure removes it.
   */
  def write(storage: Storage, snapshot: Snapshot, fragment: DataFragment, sources: Seq[LanceField], target: LanceSchema,
      allocator: BufferAllocator)(derive: Seq[FieldVector] => Seq[FieldVector]): DataFile = {
    val rows = fragment.getPhysicalRows
    val writer = new FragmentWriter(storage, snapshot.tablePath, target, snapshot.storageVersion, allocator,
      math.max(1L, rows), Seq(math.max(1L, rows)))
    try {
      val every = new RoaringBitmap()
      every.add(0L, rows)
      Using.resource(new FragmentScanner(storage, snapshot.tablePath, fragment, sources, allocator, 0, rows, only = Some(every))) { scan =>
        scan.foreach { batch =>
          val derived = derive(batch.vectors)
          try writer.write(derived) finally Resources.closeAll(derived)
        }
      }
      val written = writer.finish()
      if (written.size != 1 || written.head.getPhysicalRows != rows) throw new LanceException(
        s"Column file for fragment ${fragment.getId} of ${snapshot.tablePath} holds ${written.map(_.getPhysicalRows).sum} rows, not $rows")
      written.head.getFiles(0)
    } catch { case e: Throwable => writer.abort(); throw e }
    finally writer.close()
  }
}
