package sparklance.hadoop

import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch, TimeUnit}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/** Bytes fetched ahead serve the reads they hold, and only those; a failed fetch leaves the read to the file. */
class PrefetchesSuite extends AnyFunSuite {
  private val file = Array.tabulate[Byte](1 << 20)(i => (i * 31 + i / 7).toByte)
  private def bytes(position: Long, n: Int) = java.util.Arrays.copyOfRange(file, position.toInt, position.toInt + n)

  /** Reads of `file` aside, recorded as (position, length). */
  private final class Aside {
    val reads = new ConcurrentLinkedQueue[(Long, Int)]()
    def apply(position: Long, n: Int): Array[Byte] = { reads.add(position -> n); bytes(position, n) }
  }

  private def serve(p: Prefetches, position: Long, n: Int, direct: Boolean = false): Option[Array[Byte]] = {
    val target = if (direct) ByteBuffer.allocateDirect(n) else ByteBuffer.allocate(n)
    if (!p.serve(position, target)) None
    else {
      assert(!target.hasRemaining)
      target.flip()
      val out = new Array[Byte](n)
      target.get(out)
      Some(out)
    }
  }

  test("a read inside a fetched range gets its bytes, on the heap or off it; a read past its ends does not") {
    val aside = new Aside
    val p = new Prefetches(aside(_, _))
    p.start(3, 1000, 5000)
    assert(serve(p, 1000, 5000).map(_.toSeq).contains(bytes(1000, 5000).toSeq))
    assert(serve(p, 1234, 100, direct = true).map(_.toSeq).contains(bytes(1234, 100).toSeq))
    assert(serve(p, 5999, 1).map(_.toSeq).contains(bytes(5999, 1).toSeq))
    assert(serve(p, 999, 10).isEmpty && serve(p, 5990, 11).isEmpty && serve(p, 7000, 10).isEmpty)
    assert(aside.reads.asScala.toSeq == Seq(1000L -> 5000))
    p.close()
    assert(serve(p, 1000, 10).isEmpty)
  }

  test("a stream's next fetch replaces its last; streams are apart; past MaxBytes nothing more is fetched") {
    val aside = new Aside
    val p = new Prefetches(aside(_, _))
    p.start(0, 0, 1000)
    p.start(1, 5000, 1000)
    p.start(0, 2000, 1000)
    assert(serve(p, 0, 10).isEmpty, "the replaced range")
    assert(serve(p, 2000, 10).isDefined && serve(p, 5000, 10).isDefined)
    p.close()

    val big = new Prefetches((_, n) => new Array[Byte](n))
    val half = (Prefetches.MaxBytes / 2).toInt
    big.start(0, 0, half)
    big.start(1, 0, half)
    big.start(2, 0, 1)
    assert(serve(big, 0, 1).isDefined)
    big.start(1, 0, 1) // replacing stream 1 frees its bytes
    big.start(2, 10, 1)
    assert(serve(big, 10, 1).isDefined)
    big.close()
  }

  test("a fetch that fails leaves the read to the file; a read waits for a fetch under way") {
    val failing = new Prefetches((_, _) => throw new java.io.IOException("the store said no"))
    failing.start(0, 0, 100)
    assert(serve(failing, 0, 100).isEmpty)
    failing.close()

    val release = new CountDownLatch(1)
    val slow = new Prefetches((position, n) => { release.await(10, TimeUnit.SECONDS); bytes(position, n) })
    slow.start(0, 100, 100)
    // The fetch ends only once the read is waiting for it: a read that did not wait would get nothing.
    val reader = Thread.currentThread
    val releaser = new Thread(() => {
      val deadline = System.nanoTime + TimeUnit.SECONDS.toNanos(10)
      while (reader.getState != Thread.State.WAITING && System.nanoTime < deadline) Thread.onSpinWait()
      release.countDown()
    })
    releaser.start()
    assert(serve(slow, 150, 50).map(_.toSeq).contains(bytes(150, 50).toSeq))
    releaser.join()
    slow.close()
  }

  test("work in the background: on a fetching thread for an object store, on the caller's for local files; its value, or what it threw") {
    val conf = new org.apache.hadoop.conf.Configuration()
    conf.set("fs.fakeobj.impl", classOf[ObjectStoreLikeFileSystem].getName)
    val storage = new HadoopStorage(conf)
    val threadName = () => Thread.currentThread.getName
    assert(storage.inBackground("fakeobj:///tmp/x")(threadName).result.startsWith("sparklance-prefetch-"))
    assert(storage.inBackground("file:///tmp/x")(threadName).result == threadName())
    val gone = storage.inBackground("fakeobj:///tmp/x")(() => throw new java.io.FileNotFoundException("no such object"))
    assert(intercept[java.io.FileNotFoundException](gone.result).getMessage == "no such object")
  }

  test("work in the background runs on the caller's thread when every fetching thread is busy") {
    val release = new CountDownLatch(1)
    val started = new CountDownLatch(Prefetches.MaxThreads)
    val busy = (1 to Prefetches.MaxThreads).map(_ => Prefetches.inBackground(() => { started.countDown(); release.await(10, TimeUnit.SECONDS) }))
    try {
      assert(started.await(10, TimeUnit.SECONDS))
      assert(Prefetches.inBackground(() => Thread.currentThread.getName).result == Thread.currentThread.getName)
    } finally release.countDown()
    assert(busy.forall(_.result))
  }
}
