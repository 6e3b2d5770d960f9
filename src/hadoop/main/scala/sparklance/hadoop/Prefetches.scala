package sparklance.hadoop

import java.nio.ByteBuffer
import java.util.concurrent.{Callable, CancellationException, ExecutionException, Future, RejectedExecutionException, SynchronousQueue,
  ThreadFactory, ThreadPoolExecutor, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger
import scala.collection.mutable
import sparklance.format.io.Background

/**
 * Bytes of one file fetched ahead on background threads ([[sparklance.format.io.InputFile.prefetch]]):
 * at most one range per stream (a column), which the stream's next prefetch replaces, and
 * [[Prefetches.MaxBytes]] in all, past which a prefetch is skipped. `readAside` reads a range
 * through a stream of its own, so that the file's reads never wait behind a fetch they do not need.
 * A fetch that failed or was cancelled leaves the read to the file, which reports its own errors.
 */
private[hadoop] final class Prefetches(readAside: (Long, Int) => Array[Byte]) {
  private final class Fetch(val position: Long, val length: Int, val bytes: Future[Array[Byte]]) {
    def holds(from: Long, n: Int): Boolean = position <= from && from + n <= position + length
  }

  private val byStream = mutable.HashMap.empty[Int, Fetch]

  def start(stream: Int, position: Long, length: Int): Unit = synchronized {
    byStream.remove(stream).foreach(_.bytes.cancel(true))
    if (length > 0 && byStream.valuesIterator.map(_.length.toLong).sum + length <= Prefetches.MaxBytes) {
      try byStream(stream) = new Fetch(position, length, Prefetches.pool.submit(() => readAside(position, length)))
      catch { case _: RejectedExecutionException => } // every fetching thread is busy: the read will fetch
    }
  }

  /** Puts bytes `[position, position + target.remaining)` into `target` if a fetch holds them: whether it did. */
  def serve(position: Long, target: ByteBuffer): Boolean = {
    val n = target.remaining
    synchronized(byStream.valuesIterator.find(_.holds(position, n))) match {
      case None => false
      case Some(f) =>
        // An interrupt (a task being killed) goes on up; a failed fetch leaves the read to the file.
        val bytes = try f.bytes.get() catch { case _: ExecutionException | _: CancellationException => null }
        if (bytes == null) false
        else { target.put(bytes, (position - f.position).toInt, n); true }
    }
  }

  def close(): Unit = synchronized {
    byStream.valuesIterator.foreach(_.bytes.cancel(true))
    byStream.clear()
  }
}

private[hadoop] object Prefetches {
  /** The bytes one file may hold fetched ahead: a few columns' next pages. */
  val MaxBytes: Long = 64L << 20

  /**
   * `work` (reads of a small file, as a deletion file) on a fetching thread, or where every one is
   * busy, on the caller's when it asks for the result.
   */
  def inBackground[T](work: () => T): Background[T] =
    try Background.started(pool.submit(_: Callable[T]))(work)
    catch { case _: RejectedExecutionException => Background.later(work) }

  /**
   * The threads fetching for every file of the process: a fetch that finds them all busy is
   * skipped rather than queued, so no queue of fetches grows behind a slow store.
   */
  private[hadoop] val MaxThreads = 32

  private lazy val pool: ThreadPoolExecutor = new ThreadPoolExecutor(0, MaxThreads, 30, TimeUnit.SECONDS,
    new SynchronousQueue[Runnable](), new ThreadFactory {
      private val count = new AtomicInteger()
      def newThread(r: Runnable): Thread = {
        val t = new Thread(r, s"sparklance-prefetch-${count.incrementAndGet()}")
        t.setDaemon(true)
        t
      }
    })
}
