package sparklance.spark

import java.io.IOException
import java.net.URI
import java.util.concurrent.atomic.AtomicInteger
import org.apache.hadoop.fs.{FSDataOutputStream, FileStatus, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.util.Progressable

/**
 * The local file system under the scheme `faulty://`, with failures a test arms: the next
 * manifest written reports an error after it was fully written (a connection reset after the
 * upload), and then the next `listingsFailingAfter` listings of `_versions` fail. Armed state
 * is per JVM, which in local mode is the driver's and the executors'.
 */
class FaultyFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("faulty:///")
  override def getScheme: String = "faulty"

  override def create(f: Path, overwrite: Boolean, bufferSize: Int, replication: Short, blockSize: Long,
      progress: Progressable): FSDataOutputStream =
    resetAfterUpload(f, super.create(f, overwrite, bufferSize, replication, blockSize, progress))

  override def create(f: Path, permission: FsPermission, overwrite: Boolean, bufferSize: Int, replication: Short,
      blockSize: Long, progress: Progressable): FSDataOutputStream =
    resetAfterUpload(f, super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress))

  private def resetAfterUpload(f: Path, out: FSDataOutputStream): FSDataOutputStream =
    if (!f.getName.endsWith(".manifest") || !FaultyFileSystem.failNextManifest.compareAndSet(true, false)) out
    else new FSDataOutputStream(out, null) {
      override def close(): Unit = {
        super.close()
        FaultyFileSystem.failingListings.set(FaultyFileSystem.listingsFailingAfter.get)
        throw new IOException("connection reset after the upload")
      }
    }

  override def listStatus(f: Path): Array[FileStatus] = {
    if (f.getName == "_versions" && FaultyFileSystem.failingListings.getAndUpdate(n => math.max(0, n - 1)) > 0)
      throw new IOException("listing failed: service unavailable")
    super.listStatus(f)
  }
}

object FaultyFileSystem {
  val failNextManifest = new java.util.concurrent.atomic.AtomicBoolean(false)
  val listingsFailingAfter = new AtomicInteger(0)
  val failingListings = new AtomicInteger(0)
}
