package sparklance.format

/**
 * Closing what was opened: all of several resources, even when one fails to close, and what a
 * constructor opened before it failed.
 */
object Resources {
  /**
   * Closes every resource in order (nulls are skipped: resources opened on demand), even when
   * some fail; the first failure is thrown with the later ones added to it as suppressed.
   */
  def closeAll(resources: Iterable[AutoCloseable]): Unit = {
    var first: Throwable = null
    resources.foreach { r =>
      if (r != null) try r.close() catch {
        case t: Throwable => if (first == null) first = t else if (t ne first) first.addSuppressed(t)
      }
    }
    if (first != null) throw first
  }

  /**
   * Runs `body`, which goes on from `opened`; if it fails, `opened` (evaluated then, so it may
   * name what the body had opened so far) is closed, its close failures are added to the body's
   * error as suppressed, and that error is rethrown.
   */
  def closeOnFailure[A](opened: => Iterable[AutoCloseable])(body: => A): A =
    try body catch {
      case t: Throwable =>
        try closeAll(opened) catch { case c: Throwable => if (c ne t) t.addSuppressed(c) }
        throw t
    }
}
