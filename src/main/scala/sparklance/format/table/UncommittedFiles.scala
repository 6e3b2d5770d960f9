package sparklance.format.table

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment

/**
 * Removes the data files of fragments that a failed or aborted write never committed. Nothing
 * references them, so this only saves space; failures to delete are ignored.
 */
object UncommittedFiles {
  def delete(storage: Storage, tablePath: String, fragments: Seq[DataFragment]): Unit =
    for (f <- fragments; file <- f.getFilesList.asScala)
      try storage.delete(Storage.join(tablePath, s"data/${file.getPath}")) catch { case NonFatal(_) => }
}
