package sparklance.format.table

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.io.Storage

/**
 * The bytes per row a version's blob v2 columns keep in sidecar files, which its manifest does not
 * count (a data file's size covers only the values stored in it): measured by listing the sidecar
 * directories of at most `sample` fragments. Without it a table of large blobs would look tiny to
 * Spark, which would then broadcast it or read it in one task.
 */
object BlobSidecarBytes {
  def perRow(storage: Storage, snapshot: Snapshot, sample: Int = 64): Double = {
    val blobIds = snapshot.schema.fields.filter(_.blobEncoding.contains(BlobEncoding.V2)).map(_.id).toSet
    if (blobIds.isEmpty) return 0.0
    val withBlobs = snapshot.fragments.filter(_.getFilesList.asScala.exists(_.getFieldsList.asScala.exists(id => blobIds(id.intValue))))
    val sampled = withBlobs.take(sample)
    val rows = sampled.map(_.getPhysicalRows).sum
    if (rows <= 0) return 0.0
    val bytes = sampled.flatMap(_.getFilesList.asScala).map { f =>
      val dir = Storage.join(snapshot.files.dataDir(f), f.getPath.stripSuffix(".lance"))
      try storage.list(dir).map(_.size).sum catch { case NonFatal(_) => 0L }
    }.sum
    bytes.toDouble / rows
  }
}
