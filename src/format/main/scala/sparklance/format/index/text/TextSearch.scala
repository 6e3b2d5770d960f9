package sparklance.format.index.text

import org.apache.arrow.memory.BufferAllocator
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import sparklance.format.{IndexNotFoundException, LanceException, Resources, UnsupportedFeatureException}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.rowids.RowLineage
import sparklance.format.table.{RowAddress, Snapshot}

/** A hit: the row id the index stores (the row address on a plain table) and its BM25 score. */
final case class TextHit(rowId: Long, score: Float)

/**
 * Full-text search of column `column` of one table version through its INVERTED index, scoring as
 * pylance 14's `full_text_query` does for a plain match query (any query token, OR): BM25 with
 * k1 1.2, b 0.75 in f32, statistics summed over every partition of every segment, deleted rows
 * left out of the answer but not of the statistics (docs/format-inverted-index.md). Rows of
 * fragments the index does not cover are tokenized at query time and scored with the index's
 * statistics plus their own, as pylance's flat search does; the indexed rows keep the index's.
 * Ties are ordered by row id (Lance leaves them unordered). On tables with stable row ids the
 * index and the answer hold stable row ids; elsewhere row addresses.
 */
final class TextSearch(storage: Storage, val snapshot: Snapshot, val column: String, allocator: BufferAllocator)
    extends AutoCloseable {
  private val field = snapshot.schema.field(column).getOrElse(
    throw new LanceException(s"Lance table ${snapshot.tablePath} version ${snapshot.version} has no column '$column'"))

  // One document a row of a string column; Lance's JSON and list-element documents are not read.
  field.arrowType match {
    case _: org.apache.arrow.vector.types.pojo.ArrowType.Utf8 | _: org.apache.arrow.vector.types.pojo.ArrowType.LargeUtf8 =>
    case other => throw new UnsupportedFeatureException(
      s"Full-text search of column '$column' of ${snapshot.tablePath}: a column of $other (strings are searched)")
  }

  private val entries: Seq[IndexMetadata] = {
    val all = Indices.parse(snapshot.file.indexSection, s"${snapshot.tablePath} version ${snapshot.version}")
      .filter(i => Indices.typeName(i) == "Inverted" && i.getFieldsList.asScala.map(_.intValue) == Seq(field.id))
    all.headOption.map(first => all.filter(_.getName == first.getName)).getOrElse(
      throw new IndexNotFoundException(snapshot.tablePath, column, "INVERTED", s" in version ${snapshot.version}"))
  }

  private val fragments: Map[Long, DataFragment] = snapshot.fragments.map(f => f.getId -> f).toMap

  private val covered: RoaringBitmap = Indices.coverage(entries, fragments.keys)

  /** Fragments of this version the index holds no rows of: searched by tokenizing them. */
  val uncovered: Seq[Long] = snapshot.fragments.map(_.getId).filterNot(id => covered.contains(id.toInt))

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
  // Stable row ids: where each live row of this version is (deleted rows have none).
  private lazy val rowIdIndex = RowLineage.index(storage, snapshot)

  /**
   * Whether a row the index holds is live in this version and in a fragment the index covers (a
   * row moved out of them is found by the flat part, with its new contents).
   */
  private def live(rowId: Long): Boolean = {
    val address = this.address(rowId)
    address != -1L && covered.contains(RowAddress.fragmentId(address).toInt) &&
      fragments.get(RowAddress.fragmentId(address)).exists { f =>
        snapshot.stableRowIds || // the row id index holds live rows only
          !deleted.getOrElseUpdate(f.getId, DeletionFiles.read(storage, snapshot.files, f)).contains(RowAddress.offset(address).toInt)
      }
  }

  /** Where the row of `rowId` (an id of an answer) is in this version: its row address, -1 for none. */
  def address(rowId: Long): Long = if (snapshot.stableRowIds) rowIdIndex.address(rowId) else rowId

  /** The `k` best rows for `query` (any of its tokens), best first. */
  def search(query: String, k: Int): Seq[TextHit] = search(query, k, MatchOperator.Or, None)

  /**
   * The `k` best rows for `query` combining its tokens by `operator`, best first. `allowed`, a
   * prefilter on row ids (as the answer carries them): the answer is the k best rows it allows,
   * scored as without it, except that the rows of uncovered fragments it refuses do not count in
   * the statistics of the flat part (pylance's `prefilter=True` filters them before tokenizing).
   */
  def search(query: String, k: Int, operator: MatchOperator, allowed: Option[Long => Boolean]): Seq[TextHit] =
    run(analyzer.tokens(query), None, k, operator, allowed)

  /**
   * The `k` best rows holding `query` as a phrase (Lance's `PhraseQuery`): every token at its place
   * relative to the first, gaps of dropped query words kept (`the red shoes` and `red the shoes`
   * differ), or with `slop` up to that many positions further than the token before
   * ([[Positions.holds]]), scored as the match of its tokens is. Needs an index built with positions.
   * `allowed` as for [[search]].
   */
  def phrase(query: String, k: Int, allowed: Option[Long => Boolean], slop: Int = 0): Seq[TextHit] = {
    require(slop >= 0, s"a phrase's slop must not be negative, got $slop")
    val positioned = analyzer.positioned(query)
    // pylance 14.0.2 misses such phrases with a slop (even in a row holding the phrase as it is).
    positioned.groupBy(_._1).collectFirst { case (t, twice) if slop > 0 && twice.size > 1 =>
      throw new IllegalArgumentException(s"a phrase that repeats a token ('$t') with a slop is not supported, as pylance answers it inconsistently")
    }
    val phrase = positioned.map { case (t, p) => t -> (p - positioned.head._2) }
    run(positioned.map(_._1), Some(Positions.Pattern(phrase, slop)), k, MatchOperator.And, allowed)
  }

  /** The search of `tokens` (a phrase's, when `phrase` is set: rows must also hold it). */
  private def run(tokens: Seq[String], phrase: Option[Positions.Pattern], k: Int, operator: MatchOperator,
      allowed: Option[Long => Boolean]): Seq[TextHit] = {
    if (tokens.isEmpty || k <= 0) return Seq.empty
    val parts = segments.flatMap(_.partitions)
    val numDocs = parts.map(_.numDocs.toLong).sum
    val totalTokens = parts.map(_.totalTokens).sum
    val distinct = tokens.distinct
    // Each distinct token's posting blocks, per partition, read once (decoded when needed).
    val blocks: Map[String, Seq[(TextPartition, PostingBlocks)]] = distinct.map { t =>
      t -> parts.flatMap(p => p.tokens.get(t).map(id => p -> p.blocks(id, allocator)))
    }.toMap
    val docsWith: Map[String, Long] = blocks.map { case (t, lists) => t -> lists.map(_._2.length.toLong).sum }
    val passes: Long => Boolean = allowed.getOrElse(_ => true)
    if (operator == MatchOperator.Or && phrase.isEmpty) {
      // Any token: the k best by block-max pruning, which decodes only the blocks that may hold one.
      val indexed = if (numDocs == 0) Nil else {
        val stats = TextSearch.Stats(numDocs, totalTokens, docsWith)
        val slot = distinct.zipWithIndex.toMap
        val lists = blocks.map { case (t, l) => t -> l.toMap }
        BlockMaxTopK.top(parts.map(p => BlockMaxTopK.Part(p.rowIds, p.numTokens, distinct.map(t => lists(t).getOrElse(p, null)).toArray)),
          tokens.map(slot).toArray, distinct.map(t => stats.idf(t).getOrElse(Float.NaN)).toArray, stats.avgdl, k,
          row => passes(row) && live(row))
      }
      return (indexed ++ flat(tokens, distinct, numDocs, totalTokens, docsWith, operator, passes, phrase))
        .sortBy(h => (-h.score, h.rowId)).take(k)
    }
    val postings: Map[String, Seq[(TextPartition, PostingList)]] = blocks.map { case (t, lists) => t -> lists.map { case (p, b) => p -> b.decode } }
    val scores = mutable.LinkedHashMap.empty[Long, Float]
    // AND: how many of the distinct tokens each row holds (a row is one document of one partition).
    val held = mutable.Map.empty[Long, Int]
    if (numDocs > 0) {
      val stats = TextSearch.Stats(numDocs, totalTokens, docsWith)
      if (operator == MatchOperator.And) distinct.foreach { t =>
        postings(t).foreach { case (p, list) => list.docs.foreach { d => val row = p.rowIds(d); held(row) = held.getOrElse(row, 0) + 1 } }
      }
      tokens.foreach { t =>
        stats.idf(t).foreach { idf =>
          postings(t).foreach { case (p, list) =>
            var i = 0
            while (i < list.docs.length) {
              val row = p.rowIds(list.docs(i))
              scores.update(row, scores.getOrElse(row, 0f) + idf * stats.weight(list.freqs(i), p.numTokens(list.docs(i))))
              i += 1
            }
          }
        }
      }
    }
    val holding: Long => Boolean =
      if (operator == MatchOperator.And) row => held.getOrElse(row, 0) == distinct.size else _ => true
    val matching: Long => Boolean = phrase.fold(holding) { words =>
      val rows = phraseRows(words, postings, holding)
      row => rows.contains(row)
    }
    val indexed = scores.iterator.filter { case (row, _) => matching(row) && passes(row) && live(row) }
      .map { case (r, s) => TextHit(r, s) }.toSeq
    (indexed ++ flat(tokens, distinct, numDocs, totalTokens, docsWith, operator, passes, phrase))
      .sortBy(h => (-h.score, h.rowId)).take(k)
  }

  /**
   * The rows (ids) of the indexed documents that hold the phrase `words`, among those `holding`
   * every token: each partition's documents in every token's postings, their positions checked.
   */
  private def phraseRows(pattern: Positions.Pattern, postings: Map[String, Seq[(TextPartition, PostingList)]],
      holding: Long => Boolean): Set[Long] = {
    val distinct = pattern.words.map(_._1).distinct
    // By partition object: partition ids repeat across segments (each numbers its own from 0).
    val byPartition = distinct.map(t => t -> postings(t).toMap).toMap
    val found = mutable.Set.empty[Long]
    byPartition(distinct.head).keys.foreach { p =>
      val lists = distinct.flatMap(t => byPartition(t).get(p).map(t -> _)).toMap
      if (lists.size == distinct.size) {
        // Each token's postings: document -> its index in the list; positions decoded once a token.
        val index = lists.map { case (t, list) => t -> list.docs.zipWithIndex.toMap }
        val candidates = lists(distinct.head).docs.filter(d => holding(p.rowIds(d)) && index.values.forall(_.contains(d)))
        if (candidates.nonEmpty) {
          val positions = lists.map { case (t, list) => t -> p.positions(p.tokens.get(t).get, list, allocator) }
          candidates.foreach { d =>
            if (pattern.holdsIn(t => positions(t)(index(t)(d)))) found += p.rowIds(d)
          }
        }
      }
    }
    found.toSet
  }

  /**
   * The live rows of the uncovered fragments that `passes` and that hold a query token (every
   * distinct one for AND), scored with the index's statistics plus those of every uncovered live
   * row that `passes` and has at least one token.
   */
  private def flat(tokens: Seq[String], distinct: Seq[String], numDocs: Long, totalTokens: Long,
      docsWith: Map[String, Long], operator: MatchOperator, passes: Long => Boolean,
      phrase: Option[Positions.Pattern]): Seq[TextHit] = {
    if (uncovered.isEmpty) return Seq.empty
    val slot = distinct.zipWithIndex.toMap
    val rows = mutable.ArrayBuffer.empty[(Long, Int, Array[Int])] // row id, tokens, count per distinct query token
    var docs = 0L
    var total = 0L
    val withToken = new Array[Long](distinct.size)
    val wanted = uncovered.toSet
    snapshot.plan(Seq(column)).filter(f => wanted.contains(f.fragmentId)).foreach { read =>
      // The id a hit carries: the row's stable id on tables with them, else its address.
      val ids = if (snapshot.stableRowIds) Some(RowLineage.rowIds(storage, snapshot.tablePath, read.fragment).getOrElse(
        throw new LanceException(s"Fragment ${read.fragmentId} of ${snapshot.tablePath} has no row ids"))) else None
      scala.util.Using.resource(read.open(storage, allocator)) { scanner =>
        scanner.foreach { batch =>
          try {
            val text = batch.vectors.head
            var i = 0
            while (i < batch.numRows) {
              lazy val id = ids.fold(read.rowAddress(batch, i))(_(batch.offsets(i)))
              if (!text.isNull(i) && passes(id)) {
                val value = TextSearch.string(text, i, column)
                val positioned = phrase.map(_ => analyzer.positioned(value))
                val doc = positioned.fold(analyzer.tokens(value))(_.map(_._1))
                if (doc.nonEmpty) {
                  docs += 1
                  total += doc.size
                  val counts = new Array[Int](distinct.size)
                  doc.foreach(t => slot.get(t).foreach(j => counts(j) += 1))
                  counts.indices.foreach(j => if (counts(j) > 0) withToken(j) += 1)
                  val matches = (if (operator == MatchOperator.And) counts.forall(_ > 0) else counts.exists(_ > 0)) &&
                    phrase.forall { pattern =>
                      val at = positioned.get.groupMap(_._1)(_._2).map { case (t, ps) => t -> ps.toArray }
                      pattern.holdsIn(t => at.getOrElse(t, Array.emptyIntArray))
                    }
                  if (matches) rows += ((id, doc.size, counts))
                }
              }
              i += 1
            }
          } finally batch.close()
        }
      }
    }
    if (rows.isEmpty) return Seq.empty
    val stats = TextSearch.Stats(numDocs + docs, totalTokens + total,
      distinct.indices.map(j => distinct(j) -> (docsWith(distinct(j)) + withToken(j))).toMap)
    rows.toSeq.map { case (address, length, counts) =>
      var score = 0f
      tokens.foreach { t => stats.idf(t).foreach(idf => score += idf * stats.weight(counts(slot(t)), length)) }
      TextHit(address, score)
    }.filter(_.score > 0f)
  }

  def close(): Unit = Resources.closeAll(segments)
}

object TextSearch {
  /** Corpus statistics of one scoring: documents, their tokens, documents holding each query token. */
  private final case class Stats(numDocs: Long, totalTokens: Long, docsWith: Map[String, Long]) {
    val avgdl: Float = Bm25.avgdl(totalTokens, numDocs)

    /** The token's idf, None for a token no document holds. */
    def idf(token: String): Option[Float] = docsWith.get(token).filter(_ > 0).map(Bm25.idf(numDocs, _))

    /** The BM25 weight of a frequency in a document of `length` tokens. */
    def weight(freq: Int, length: Int): Float = Bm25.weight(freq, length, avgdl)
  }

  private def string(v: org.apache.arrow.vector.FieldVector, i: Int, column: String): String = v match {
    case s: org.apache.arrow.vector.VarCharVector => new String(s.get(i), java.nio.charset.StandardCharsets.UTF_8)
    case s: org.apache.arrow.vector.LargeVarCharVector => new String(s.get(i), java.nio.charset.StandardCharsets.UTF_8)
    case other => throw new UnsupportedFeatureException(s"Full-text search of column '$column' of ${other.getField.getType}: strings only")
  }
}
