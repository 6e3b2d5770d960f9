package sparklance.format.index.vector

import com.google.protobuf.ByteString
import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * Opened vector index segments kept across searches, least recently used first out once their
 * heap bytes (centroids, codebook, the partitions a search decoded: [[VectorIndexSegment.heapBytes]])
 * pass `capacityBytes`. A warm query then reads no index file.
 *
 * The key is the table's path and the segment's manifest entry as bytes (its uuid, the fragments it
 * covers, the version it was built at): index files never change once written, so a commit that
 * leaves the index as it was (an append, a delete) keeps its segments, and one that changes the
 * entry (optimize, remap after compaction) makes another key. What a version adds besides (deletion
 * vectors, fragments not covered) is read by each [[VectorSearch]] from its own snapshot.
 *
 * A segment is leased (`acquire` ... `release`); one evicted while leased is closed at its last
 * release. Thread-safe.
 */
final class VectorIndexCache(val capacityBytes: Long) {
  private final class Entry(val key: VectorIndexCache.Key, val segment: VectorIndexSegment) {
    var leases = 0
    var evicted = false
  }
  // Access order: the head is the least recently used.
  private val entries = new java.util.LinkedHashMap[VectorIndexCache.Key, Entry](16, 0.75f, true)
  private val leased = new java.util.IdentityHashMap[VectorIndexSegment, Entry]()

  /** The cached segment of `entry` in the table at `tablePath`, or the one `open` makes (then cached). */
  def acquire(tablePath: String, entry: IndexMetadata)(open: => VectorIndexSegment): VectorIndexSegment = {
    val key = VectorIndexCache.Key(tablePath, entry.toByteString)
    val found = synchronized {
      Option(entries.get(key)).map { e => e.leases += 1; leased.put(e.segment, e); e.segment }
    }
    found.getOrElse {
      // Opened outside the lock: another query may open the same segment meanwhile, and the
      // second to finish is then used once and closed.
      val segment = open
      synchronized {
        val e = new Entry(key, segment)
        e.leases = 1
        if (!entries.containsKey(key)) entries.put(key, e) else e.evicted = true
        leased.put(segment, e)
        segment
      }
    }
  }

  /** Ends a lease of `segment`; evicts the least recently used segments past the capacity. */
  def release(segment: VectorIndexSegment): Unit = {
    val toClose = synchronized {
      val e = leased.get(segment)
      if (e == null) Seq(segment) // not from this cache
      else {
        e.leases -= 1
        if (e.leases == 0) leased.remove(segment)
        val closed = if (e.evicted && e.leases == 0) Seq(segment) else Nil
        closed ++ evict()
      }
    }
    sparklance.format.Resources.closeAll(toClose)
  }

  /** Heap bytes of the segments cached now. */
  def bytes: Long = synchronized {
    var total = 0L
    entries.values.forEach(e => total += e.segment.heapBytes)
    total
  }

  /** Segments cached now. */
  def size: Int = synchronized(entries.size)

  /** Drops every segment (those leased are closed at their last release). */
  def clear(): Unit = {
    val toClose = synchronized {
      val all = scala.collection.mutable.ArrayBuffer.empty[VectorIndexSegment]
      entries.values.forEach { e => e.evicted = true; if (e.leases == 0) all += e.segment }
      entries.clear()
      all.toSeq
    }
    sparklance.format.Resources.closeAll(toClose)
  }

  // Under the lock: removes least recently used entries while over capacity; returns those to close now.
  private def evict(): Seq[VectorIndexSegment] = {
    var total = 0L
    entries.values.forEach(e => total += e.segment.heapBytes)
    val out = scala.collection.mutable.ArrayBuffer.empty[VectorIndexSegment]
    val it = entries.values.iterator
    while (total > capacityBytes && it.hasNext) {
      val e = it.next()
      it.remove()
      total -= e.segment.heapBytes
      e.evicted = true
      if (e.leases == 0) out += e.segment
    }
    out.toSeq
  }
}

object VectorIndexCache {
  private final case class Key(tablePath: String, entry: ByteString)

  /** Bytes of opened segments this JVM keeps: two segments' partition caches and their models. */
  val DefaultCapacityBytes: Long = 2 * VectorIndexSegment.CacheBytes + (64L << 20)

  /** The JVM's cache, which [[VectorSearch]] uses unless given another. */
  lazy val shared: VectorIndexCache = new VectorIndexCache(DefaultCapacityBytes)
}
