package sparklance.format.index.text

import org.apache.arrow.memory.BufferAllocator
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import sparklance.format.{LanceException, Resources, UnsupportedFeatureException}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.table.Snapshot

/** A hit: the row id the index stores (the row address on a plain table) and its BM25 score. */
final case class TextHit(rowId: Long, score: Float)

/**
 * Full-text search of column `column` of one table version through its INVERTED index, scoring as
 * pylance 14's `full_text_query` does for a plain match query (any query token, OR): BM25 with
 * k1 1.2, b 0.75 in f32, statistics summed over every partition of every segment, deleted rows
 * left out of the answer but not of the statistics (docs/format-inverted-index.md). Ties are
 * ordered by row id (Lance leaves them unordered). Tables with fragments the index does not cover
 * and stable-row-id tables are refused: pylance's flat search of those rows is not implemented.
 */
final class TextSearch(storage: Storage, val snapshot: Snapshot, val column: String, allocator: BufferAllocator)
    extends AutoCloseable {
  private val field = snapshot.schema.field(column).getOrElse(
    throw new LanceException(s"Lance table ${snapshot.tablePath} version ${snapshot.version} has no column '$column'"))

  private val entries: Seq[IndexMetadata] = {
    val all = Indices.parse(snapshot.file.indexSection, s"${snapshot.tablePath} version ${snapshot.version}")
      .filter(i => Indices.typeName(i) == "Inverted" && i.getFieldsList.asScala.map(_.intValue) == Seq(field.id))
    all.headOption.map(first => all.filter(_.getName == first.getName)).getOrElse(
      throw new LanceException(s"Column '$column' of ${snapshot.tablePath} has no INVERTED index"))
  }

  if (snapshot.stableRowIds)
    throw new UnsupportedFeatureException(s"Full-text search of ${snapshot.tablePath}: tables with stable row ids are not supported yet")

  private val fragments: Map[Long, DataFragment] = snapshot.fragments.map(f => f.getId -> f).toMap

  {
    val covered = Indices.coverage(entries, fragments.keys)
    val uncovered = fragments.keys.filterNot(id => covered.contains(id.toInt)).toSeq.sorted
    if (uncovered.nonEmpty) throw new UnsupportedFeatureException(s"Full-text search of ${snapshot.tablePath}: " +
      s"fragments ${uncovered.mkString(", ")} are not covered by index '${entries.head.getName}' (run optimize_indices)")
  }

  private val segments: Seq[TextIndexSegment] = {
    val opened = mutable.ArrayBuffer.empty[TextIndexSegment]
    Resources.closeOnFailure(opened)(entries.foreach(e => opened += TextIndexSegment.open(storage, snapshot, e, allocator)))
    opened.toSeq
  }

  /** The analyzer of the index (its segments must agree). */
  val analyzer: TextAnalyzer = segments.map(_.analyzer).distinct match {
    case Seq(one) => one
    case many => throw new UnsupportedFeatureException(s"Segments of index '${entries.head.getName}' tokenize differently: ${many.mkString("; ")}")
  }

  private val deleted = mutable.Map.empty[Long, RoaringBitmap]
  private def live(address: Long): Boolean = fragments.get(address >>> 32).exists { f =>
    !deleted.getOrElseUpdate(f.getId, DeletionFiles.read(storage, snapshot.files, f)).contains((address & 0xffffffffL).toInt)
  }

  /** The `k` best rows for `query`, best first. */
  def search(query: String, k: Int): Seq[TextHit] = {
    val tokens = analyzer.tokens(query)
    val parts = segments.flatMap(_.partitions)
    val numDocs = parts.map(_.numDocs.toLong).sum
    if (tokens.isEmpty || numDocs == 0 || k <= 0) return Seq.empty
    val avgdl = parts.map(_.totalTokens).sum.toFloat / numDocs.toFloat
    // Each distinct token's postings, per partition, read once.
    val postings: Map[String, Seq[(TextPartition, PostingList)]] = tokens.distinct.map { t =>
      t -> parts.flatMap(p => p.tokens.get(t).map(id => p -> p.postings(id, allocator)))
    }.toMap
    val scores = mutable.LinkedHashMap.empty[Long, Float]
    tokens.foreach { t =>
      val lists = postings(t)
      val n = lists.map(_._2.docs.length.toLong).sum
      if (n > 0) {
        val idf = Math.log((numDocs - n + 0.5) / (n + 0.5) + 1).toFloat
        lists.foreach { case (p, list) =>
          var i = 0
          while (i < list.docs.length) {
            val d = list.docs(i)
            val f = list.freqs(i).toFloat
            val norm = TextSearch.K1 * (1f - TextSearch.B + TextSearch.B * p.numTokens(d).toFloat / avgdl)
            val weight = (TextSearch.K1 + 1f) * f / (f + norm)
            val row = p.rowIds(d)
            scores.update(row, scores.getOrElse(row, 0f) + idf * weight)
            i += 1
          }
        }
      }
    }
    scores.iterator.filter { case (row, _) => live(row) }.map { case (r, s) => TextHit(r, s) }.toSeq
      .sortBy(h => (-h.score, h.rowId)).take(k)
  }

  def close(): Unit = Resources.closeAll(segments)
}

object TextSearch {
  val K1 = 1.2f
  val B = 0.75f
}
