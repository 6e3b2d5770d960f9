package sparklance.format.file.v2_1

import org.apache.arrow.vector.FieldVector
import sparklance.format.file.ContainerWriter
import sparklance.format.proto.File2Protos.ColumnMetadata

/** One column of a 2.1/2.2 file being written: rows of its top-level vector in, pages out. */
private[v2_1] trait ColumnWriter21 {
  /** Takes rows `[from, from + n)` of the top-level vector `top`. */
  def append(top: FieldVector, from: Int, n: Int): Unit
  /** Encodes the rows taken since the last flush as pages. */
  def flush(out: ContainerWriter): Unit
  def metadata: ColumnMetadata
}
