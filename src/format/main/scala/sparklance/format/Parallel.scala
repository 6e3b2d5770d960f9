package sparklance.format

import java.util.concurrent.{Callable, ExecutionException, ExecutorService, Executors, LinkedBlockingQueue, ThreadFactory, ThreadPoolExecutor, TimeUnit}
import scala.jdk.CollectionConverters._

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
        futures.asScala.toSeq.map { fut =>
          try fut.get() catch { case e: ExecutionException => throw e.getCause }
        }
      } finally { pool.shutdownNow(); pool.awaitTermination(1, TimeUnit.MINUTES) }
    }

  /**
   * One pool for reads issued ahead of need (see sparklance.format.file.Prefetcher), shared by every
   * task of the JVM: a bounded number of daemon threads, which end when idle, so that neither
   * a forgotten reader nor the JVM's exit waits on them. Its tasks must not block on each other.
   */
  lazy val background: ExecutorService = {
    val threads: ThreadFactory = new ThreadFactory {
      private val made = new java.util.concurrent.atomic.AtomicInteger()
      def newThread(r: Runnable): Thread = {
        val t = new Thread(r, s"sparklance-read-ahead-${made.incrementAndGet()}")
        t.setDaemon(true)
        t
      }
    }
    val pool = new ThreadPoolExecutor(BackgroundThreads, BackgroundThreads, 30, TimeUnit.SECONDS, new LinkedBlockingQueue[Runnable](), threads)
    pool.allowCoreThreadTimeOut(true)
    pool
  }

  /** Reads run in parallel in the background: enough for the columns of a batch on an object store. */
  val BackgroundThreads = 16
}
