package sparklance.format.file

import java.util.concurrent.CompletableFuture
import sparklance.format.Parallel
import sparklance.format.io.InputFile

/**
 * Reads of one file issued ahead of need, on [[Parallel.background]]'s threads: while a scan
 * decodes one batch, the bytes of its next one (per column: a 2.0 page, a 2.1/2.2 read-ahead range,
 * vector rows) are already on their way, and the columns' reads run in parallel, as pylance's do.
 *
 * Memory is bounded: the ranges issued and not yet taken or dropped (the arrays being read, or read
 * and waiting) take at most `budget` bytes together; a range that does not fit is not issued, and
 * its reader then reads it itself when it needs it. Each stream (a column) has only its latest
 * ranges pending: issuing new ones drops the ones a scan went past, so a wrong guess does not hold
 * its bytes longer than the next guess.
 *
 * A read takes a pending range holding it ([[take]]): waiting for it if its read is running, and
 * doing nothing of it if it has not started (the reader's own read is then no later than the
 * background one). A background read that failed gives nothing: the reader reads the range itself,
 * so an error is the one the reader reports today, with its context, from its own thread.
 *
 * [[close]] drops every range and waits for reads still running, so that the file can then be
 * closed under none. Background reads are never interrupted: an interrupt closes a FileChannel
 * for every reader of it.
 */
private[file] final class Prefetcher(input: InputFile, budget: Long) {
  private sealed trait State
  private case object Queued extends State
  private case object Running extends State
  private case object Finished extends State

  private final class Pending(val stream: Int, val position: Long, val length: Int) {
    var state: State = Queued // guarded by Prefetcher.this
    var listed = true // in `byPosition`; guarded by Prefetcher.this
    val result = new CompletableFuture[Array[Byte]]()
    def end: Long = position + length
  }

  // Guarded by this: the pending ranges by position, and the bytes they hold (see `release`).
  private val byPosition = new java.util.TreeMap[java.lang.Long, Pending]()
  private var held = 0L
  private var closed = false
  private var peak = 0L
  private var served = 0L

  /** Bytes the pending ranges hold (for tests of the bound), and the most they held. */
  private[file] def heldBytes: Long = synchronized(held)
  private[file] def peakBytes: Long = synchronized(peak)

  /** How many reads took their bytes from a background read (for tests). */
  private[file] def servedReads: Long = synchronized(served)

  /** How many ranges are pending (for tests). */
  private[file] def pendingRanges: Int = synchronized(byPosition.size)

  /**
   * Reads `ranges` (position, length; in the file's data part) ahead for `stream`; the stream's
   * pending ranges that are not among them are dropped. Ranges beyond the budget are not issued.
   */
  def ahead(stream: Int, ranges: Seq[(Long, Int)]): Unit = {
    val issued = synchronized {
      if (closed) Nil
      else {
        val wanted = ranges.toSet
        val stale = byPosition.values.toArray(Array.empty[Pending]).filter(p => p.stream == stream && !wanted((p.position, p.length)))
        stale.foreach(drop)
        ranges.flatMap { case (position, length) =>
          val same = byPosition.get(position)
          if (length <= 0 || (same != null && same.length == length && same.stream == stream) || held + length > budget) None
          else {
            if (same != null) drop(same)
            val p = new Pending(stream, position, length)
            byPosition.put(position, p)
            held += length
            peak = math.max(peak, held)
            Some(p)
          }
        }
      }
    }
    issued.foreach(p => Parallel.background.execute(() => run(p)))
  }

  private def run(p: Pending): Unit = {
    val go = synchronized { if (p.state == Queued) { p.state = Running; true } else false }
    if (go) {
      val bytes = try input.read(p.position, p.length) catch { case _: Throwable => null }
      synchronized {
        p.state = Finished
        if (!p.listed) held -= p.length
      }
      p.result.complete(bytes)
    }
  }

  /** Unlists `p`; its bytes are released now unless its read runs, which releases them when it ends. Holding the lock. */
  private def drop(p: Pending): Unit = {
    byPosition.remove(p.position, p)
    p.listed = false
    if (p.state == Queued) p.state = Finished
    if (p.state == Finished) held -= p.length
  }

  /**
   * The bytes from `position` on, up to `length` of them, where a pending range holds `position`:
   * the array, the first byte in it, and how many bytes it holds from there (the caller reads any
   * more itself). Waits for the range's read if it runs; None where no range holds `position`, its
   * read has not started, or it failed. The range is taken either way: it is no longer pending.
   */
  def take(position: Long, length: Long): Option[(Array[Byte], Int, Int)] = {
    val found = synchronized {
      val e = byPosition.floorEntry(position)
      if (e == null || e.getValue.end <= position) None
      else {
        val p = e.getValue
        val wait = p.state != Queued // a range not started is read by the caller, now
        drop(p)
        if (wait) Some(p) else None
      }
    }
    found.flatMap { p =>
      val bytes = try p.result.get() catch {
        case _: InterruptedException =>
          Thread.currentThread().interrupt()
          throw new java.io.InterruptedIOException(s"${input.path}: interrupted waiting for a read")
      }
      Option(bytes).map { b =>
        synchronized(served += 1)
        (b, (position - p.position).toInt, math.min(length, p.end - position).toInt)
      }
    }
  }

  /** Drops every pending range and waits for the reads still running. */
  def close(): Unit = {
    val running = synchronized {
      closed = true
      val all = byPosition.values.toArray(Array.empty[Pending])
      all.foreach(drop)
      all.filter(_.state == Running)
    }
    var interrupted = false
    running.foreach { p =>
      var done = false
      while (!done) {
        try { p.result.get(); done = true }
        catch { case _: InterruptedException => interrupted = true }
      }
    }
    if (interrupted) Thread.currentThread().interrupt()
  }
}
