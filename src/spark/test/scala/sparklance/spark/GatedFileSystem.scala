package sparklance.spark

import java.io.IOException
import java.net.URI
import java.util.concurrent.{CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicReference
import org.apache.hadoop.fs.{FSDataInputStream, Path, RawLocalFileSystem}
import scala.jdk.CollectionConverters._

/**
 * The local file system under the scheme `gated://`, which sparklance treats as an object store
 * (a scheme other than file: and HDFS's). Armed, the first data file a reader opens stays shut
 * until a second one is opened, for up to 10 s (then it fails): a reader that opens one split's
 * files only once the split before it is done fails.
 */
class GatedFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("gated:///")
  override def getScheme: String = "gated"

  override def open(f: Path, bufferSize: Int): FSDataInputStream = {
    if (f.getParent != null && f.getParent.getName == "data" && f.getName.endsWith(".lance")) GatedFileSystem.opening(f.toString)
    super.open(f, bufferSize)
  }
}

object GatedFileSystem {
  private final class Gate {
    @volatile var first: Option[String] = None
    val second = new CountDownLatch(1)
    val opened = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()
  }

  private val armed = new AtomicReference[Option[Gate]](None)

  def arm(): Unit = armed.set(Some(new Gate))

  /** Disarms the gate; returns the data files opened while it was armed. */
  def disarm(): Set[String] = {
    val gate = armed.getAndSet(None)
    gate.fold(Set.empty[String])(_.opened.asScala.toSet)
  }

  private def opening(path: String): Unit = armed.get.foreach { gate =>
    gate.opened.add(path)
    val isFirst = gate.synchronized {
      if (gate.first.isEmpty) { gate.first = Some(path); true }
      else { if (!gate.first.contains(path)) gate.second.countDown(); false }
    }
    if (isFirst && !gate.second.await(10, TimeUnit.SECONDS))
      throw new IOException(s"$path: no other data file was opened while it was")
  }
}
