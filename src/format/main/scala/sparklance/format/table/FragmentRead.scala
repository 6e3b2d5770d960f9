package sparklance.format.table

import org.apache.arrow.memory.BufferAllocator
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment

/**
 * One fragment of a snapshot to read (see [[Snapshot.plan]]): `open` streams its live rows as
 * Arrow batches of the projected `fields`; `rowAddress` names a row of a batch, as a delete needs.
 */
final case class FragmentRead(files: BasePaths, fragment: DataFragment, fields: Seq[LanceField]) {
  def fragmentId: Long = fragment.getId

  def open(storage: Storage, allocator: BufferAllocator, batchRows: Int = 8192): FragmentScanner =
    new FragmentScanner(storage, files, fragment, fields, allocator, 0, fragment.getPhysicalRows, batchRows)

  /** The address of row `i` of `batch`, a batch this fragment's scanner returned. */
  def rowAddress(batch: ScanBatch, i: Int): Long = RowAddress.of(fragmentId, batch.offsets(i))
}
