package sparklance.spark

import java.net.URI
import java.util.concurrent.atomic.AtomicReference
import org.apache.hadoop.fs.{FSDataOutputStream, FileStatus, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.util.Progressable

/**
 * The local file system under the scheme `inject://`, which throws what a test armed it with
 * (an interrupt, an Error: anything) at one operation of one thread (or of a fetching thread
 * working for it), once: after that thread has created `afterManifests` manifests, at the first
 * listing, create or delete whose path the trigger accepts. So a test reaches into the work a statement does after its commit landed.
 */
class InjectingFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("inject:///")
  override def getScheme: String = "inject"

  override def create(f: Path, overwrite: Boolean, bufferSize: Int, replication: Short, blockSize: Long,
      progress: Progressable): FSDataOutputStream = {
    InjectingFileSystem.at(InjectingFileSystem.Create, f)
    super.create(f, overwrite, bufferSize, replication, blockSize, progress)
  }

  override def create(f: Path, permission: FsPermission, overwrite: Boolean, bufferSize: Int, replication: Short,
      blockSize: Long, progress: Progressable): FSDataOutputStream = {
    InjectingFileSystem.at(InjectingFileSystem.Create, f)
    super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress)
  }

  override def listStatus(f: Path): Array[FileStatus] = {
    InjectingFileSystem.at(InjectingFileSystem.List, f)
    super.listStatus(f)
  }

  override def delete(f: Path, recursive: Boolean): Boolean = {
    InjectingFileSystem.at(InjectingFileSystem.Delete, f)
    super.delete(f, recursive)
  }
}

object InjectingFileSystem {
  sealed trait Operation
  case object Create extends Operation
  case object List extends Operation
  case object Delete extends Operation

  /** Throws `failure()` in `thread` at the first operation `trigger` accepts once it created `afterManifests` manifests. */
  final case class Injection(thread: Thread, afterManifests: Int, trigger: (Operation, Path) => Boolean, failure: () => Throwable) {
    @volatile private[InjectingFileSystem] var manifests = 0
    @volatile var fired = false
  }

  private val armed = new AtomicReference[Option[Injection]](None)

  def arm(injection: Injection): Unit = armed.set(Some(injection))
  def disarm(): Unit = armed.set(None)

  // The storage of a scheme other than file: and HDFS's does some of a thread's work on its fetching
  // threads (a commit's transaction file, written while it lists the versions): theirs counts as its.
  private def at(op: Operation, path: Path): Unit = armed.get.filter { i =>
    (i.thread eq Thread.currentThread()) || Thread.currentThread().getName.startsWith("sparklance-prefetch-")
  }.foreach { i =>
    if (op == Create && path.getName.endsWith(".manifest")) i.manifests += 1
    else if (!i.fired && i.manifests >= i.afterManifests && i.trigger(op, path)) {
      i.fired = true
      throw i.failure()
    }
  }
}
