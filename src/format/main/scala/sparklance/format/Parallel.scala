package sparklance.format

import java.util.concurrent.{Callable, Executors, TimeUnit}
import scala.jdk.CollectionConverters._
import sparklance.format.io.Background

/**
 * Runs independent file operations (reads, writes, deletes of small files) on several threads:
 * on an object store each one waits a round trip, and a statement touching many fragments would
 * otherwise wait for them one after the other.
 */
object Parallel {
  /**
   * `f` of every item, in the items' order, on at most `parallelism` threads; the first item's
   * failure (in the items' order) is thrown once every call has ended.
   */
  def map[A, B](items: Seq[A], parallelism: Int)(f: A => B): Seq[B] =
    if (items.size <= 1 || parallelism <= 1) items.map(f)
    else {
      val pool = Executors.newFixedThreadPool(math.min(parallelism, items.size))
      try {
        val futures = pool.invokeAll(items.map(a => (() => f(a)): Callable[B]).asJava)
        futures.asScala.toSeq.map(Background.of(_).result)
      } finally { pool.shutdownNow(); pool.awaitTermination(1, TimeUnit.MINUTES) }
    }
}
