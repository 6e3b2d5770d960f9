package sparklance.format.io

/**
 * What the process has decoded of files that never change, kept for the next query: index files
 * (a new index or segment gets a new directory) and manifests (a version's manifest is written
 * once; its key holds a checksum of its bytes, since a dropped table's path may be used again),
 * kept as long as memory allows. Keys name the file or directory read and what was read of it
 * (`<index dir>|btree|<key type>`); values are immutable. Least recently used entries are dropped
 * once the entries weigh more than [[MaxBytes]] or number more than [[MaxEntries]].
 *
 * Thread-safe. Two threads missing the same key may both read it; the later value replaces the
 * earlier, which is equal.
 */
object DecodedFileCache {
  /** What the entries may weigh in all (their estimates, see [[get]]). */
  val MaxBytes: Long = 256L << 20
  // Many small entries are fine (a table of 10,000 appends has a zone map segment per append and column); the bytes bound memory.
  val MaxEntries = 65536
  /** The weight given an entry its reader does not estimate. */
  val UnknownWeight: Long = 64L << 10

  private final case class Entry(value: Any, bytes: Long)

  private val lock = new Object
  private var bytes = 0L
  private val entries = new java.util.LinkedHashMap[String, Entry](16, 0.75f, true)

  /** The value of `key`, read by `read` when absent and kept with the weight `weigh` gives it (bytes). */
  def get[T](key: String, weigh: T => Long)(read: => T): T = {
    val hit = lock.synchronized(entries.get(key))
    if (hit != null) hit.value.asInstanceOf[T]
    else {
      val value = read
      put(key, Entry(value, math.max(0L, weigh(value))))
      value
    }
  }

  /** The value of `key`, if held. */
  def find[T](key: String): Option[T] = Option(lock.synchronized(entries.get(key))).map(_.value.asInstanceOf[T])

  /** The value of `key`, read by `read` when absent and kept with the weight [[UnknownWeight]]. */
  def get[T](key: String)(read: => T): T = get[T](key, (_: T) => UnknownWeight)(read)

  private def put(key: String, entry: Entry): Unit = lock.synchronized {
    // An entry heavier than the whole budget is not kept: it would evict everything else.
    if (entry.bytes <= MaxBytes) {
      val old = entries.put(key, entry)
      if (old != null) bytes -= old.bytes
      bytes += entry.bytes
      val it = entries.entrySet.iterator
      while ((bytes > MaxBytes || entries.size > MaxEntries) && it.hasNext) {
        val eldest = it.next()
        bytes -= eldest.getValue.bytes
        it.remove()
      }
    }
  }

  /** What the entries weigh now (for tests and diagnostics). */
  def weight: Long = lock.synchronized(bytes)

  /** Whether `key` is held (for tests). */
  def holds(key: String): Boolean = lock.synchronized(entries.containsKey(key))
}
