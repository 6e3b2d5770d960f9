package sparklance.format.index.text

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{BigIntVector, UInt4Vector, UInt8Vector, VarBinaryVector, LargeVarBinaryVector}
import org.apache.arrow.vector.complex.ListVector
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, Resources, UnsupportedFeatureException}
import sparklance.format.index.Indices
import sparklance.format.io.DecodedFileCache
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.skipping.IndexFile
import sparklance.format.table.{BasePaths, Snapshot}

/**
 * One partition of a segment: its token map, documents (row id, token count) and its posting
 * file `invertPath`, opened by `openInvert` when first read (postings already kept need no file).
 */
final class TextPartition(val id: Int, val tokens: TokenMap, val rowIds: Array[Long], val numTokens: Array[Int],
    val totalTokens: Long, invertPath: String, openInvert: () => IndexFile) extends AutoCloseable {
  private var opened: IndexFile = null
  private def invert: IndexFile = synchronized { if (opened == null) opened = openInvert(); opened }

  def numDocs: Int = rowIds.length

  /** The posting blocks of token id `token`, kept across queries (index files never change). */
  def blocks(token: Long, allocator: BufferAllocator): PostingBlocks =
    DecodedFileCache.get(s"$invertPath|$token", (b: PostingBlocks) => b.weight) {
      if (token < 0 || token >= invert.numRows)
        throw new CorruptFileException(invert.path, s"token id $token of ${invert.numRows} posting lists")
      invert.columns(Seq("_posting", "_length"), allocator, token, 1) { vs =>
        val list = vs.head.asInstanceOf[ListVector]
        val length = vs(1) match {
          case v: UInt4Vector => v.getValueAsLong(0)
          case other => throw new CorruptFileException(invert.path, s"_length is ${other.getField.getType}, not uint32")
        }
        val blocks = list.getObject(0).asScala.map {
          case b: Array[Byte] => b
          case other => throw new CorruptFileException(invert.path, s"a posting block of ${other.getClass.getSimpleName}")
        }.toArray
        new PostingBlocks(blocks, Math.toIntExact(length), invertPath)
      }
    }

  /** The postings of token id `token`. */
  def postings(token: Long, allocator: BufferAllocator): PostingList = blocks(token, allocator).decode

  /**
   * The positions of token id `token`'s postings `list`, in posting order; an index built without
   * positions is an IllegalArgumentException (a phrase query needs them).
   */
  def positions(token: Long, list: PostingList, allocator: BufferAllocator): Array[Array[Int]] = {
    val meta = invert.schema.metadata.map { case (k, v) => k -> new String(v, UTF_8) }
    if (!invert.schema.fields.exists(_.name == "_compressed_position")) throw new IllegalArgumentException(
      s"the INVERTED index of ${invert.path} was built without positions (with_position=True), which a phrase query needs")
    val layout = meta.getOrElse("positions_layout", "(absent)")
    if (layout != Positions.Layout)
      throw new UnsupportedFeatureException(s"INVERTED index positions layout '$layout' of ${invert.path} is not supported")
    invert.columns(Seq("_compressed_position", "_position_block_offset"), allocator, token, 1) { vs =>
      val stream = vs.head match {
        case v: LargeVarBinaryVector => v.getObject(0)
        case other => throw new CorruptFileException(invert.path, s"_compressed_position is ${other.getField.getType}")
      }
      val offsets = vs(1).asInstanceOf[ListVector].getObject(0).asScala.map {
        case n: java.lang.Number => n.longValue()
        case other => throw new CorruptFileException(invert.path, s"a position block offset of ${other.getClass.getSimpleName}")
      }.toArray
      Positions.decode(stream, offsets, list, meta.getOrElse("positions_codec", "(absent)"), invert.path)
    }
  }

  def close(): Unit = synchronized { if (opened != null) opened.close() }
}

/**
 * One segment (IndexMetadata entry) of an INVERTED index: its analyzer and partitions
 * (docs/format-inverted-index.md). Files or settings this reader does not know are refused by name.
 */
final class TextIndexSegment(val entry: IndexMetadata, val analyzer: TextAnalyzer, val partitions: Seq[TextPartition])
    extends AutoCloseable {
  def numDocs: Long = partitions.map(_.numDocs.toLong).sum
  def totalTokens: Long = partitions.map(_.totalTokens).sum
  def close(): Unit = Resources.closeAll(partitions)
}

object TextIndexSegment {
  // The metadata values this reader decodes; any other value names a layout it does not know.
  private val Expected = Map("format_version" -> "2", "token_set_format" -> "fst", "posting_block_size" -> "128",
    "posting_tail_codec" -> "varint_delta_v1")

  def open(storage: Storage, snapshot: Snapshot, entry: IndexMetadata, allocator: BufferAllocator): TextIndexSegment =
    open(storage, snapshot.files, snapshot.tablePath, entry, allocator)

  /** The segment `entry` of the table at `tablePath`, whose files `files` locates. */
  def open(storage: Storage, files: BasePaths, tablePath: String, entry: IndexMetadata, allocator: BufferAllocator): TextIndexSegment = {
    val what = describe(entry, tablePath)
    val (params, partitionIds) = header(storage, files, what, entry, allocator)
    val analyzer = TextAnalyzer.parse(params, what)
    val opened = scala.collection.mutable.ArrayBuffer.empty[TextPartition]
    Resources.closeOnFailure(opened) {
      partitionIds.foreach(p => opened += partition(storage, files, entry, p, allocator))
    }
    new TextIndexSegment(entry, analyzer, opened.toSeq)
  }

  /** The analyzer `params` JSON of segment `entry` (`{}` when it has none), read from its metadata file alone. */
  def params(storage: Storage, files: BasePaths, tablePath: String, entry: IndexMetadata, allocator: BufferAllocator): String =
    header(storage, files, describe(entry, tablePath), entry, allocator)._1

  /** The partition ids of segment `entry`, from its metadata file alone (its layout checked as [[open]] checks it). */
  def partitionIds(storage: Storage, files: BasePaths, tablePath: String, entry: IndexMetadata, allocator: BufferAllocator): Seq[Int] =
    header(storage, files, describe(entry, tablePath), entry, allocator)._2

  private def describe(entry: IndexMetadata, tablePath: String): String =
    s"${Indices.describe(entry)} (${Indices.directory(entry)}) of $tablePath"

  /** The analyzer params and partition ids of a segment, its layout checked. */
  private def header(storage: Storage, files: BasePaths, what: String, entry: IndexMetadata,
      allocator: BufferAllocator): (String, Seq[Int]) = DecodedFileCache.get(s"${files.indexDir(entry)}/metadata.lance") {
    val md = IndexFile.open(storage, files, entry, "metadata.lance")
    try {
      val meta = md.schema.metadata.map { case (k, v) => k -> new String(v, UTF_8) }
      Expected.foreach { case (key, want) =>
        val got = meta.getOrElse(key, "(absent)")
        if (got != want) throw new UnsupportedFeatureException(s"INVERTED index $what: $key = $got is not supported (sparklance reads $want)")
      }
      val deleted = md.all(Seq("deleted_fragments"), allocator) { vs =>
        val v = vs.head.asInstanceOf[VarBinaryVector]
        (0 until v.getValueCount).map(i => v.getObject(i))
      }
      if (deleted.exists(b => b != null && sparklance.format.deletion.PortableBitmaps.fromBytes(b).getCardinality > 0))
        throw new UnsupportedFeatureException(s"INVERTED index $what: deleted_fragments is not empty, which sparklance does not read")
      val ids = meta.get("partitions").map { p =>
        try new com.fasterxml.jackson.databind.ObjectMapper().readTree(p).elements().asScala.map(_.asInt).toSeq
        catch { case _: Exception => throw new CorruptFileException(md.path, s"partitions is not a JSON list: $p") }
      }.getOrElse(throw new CorruptFileException(md.path, "no partitions in the schema metadata"))
      (meta.getOrElse("params", "{}"), ids)
    } finally md.close()
  }

  private def partition(storage: Storage, files: BasePaths, entry: IndexMetadata, p: Int, allocator: BufferAllocator): TextPartition = {
    val dir = files.indexDir(entry)
    // Token maps and document tables are the bulk of opening a segment; kept across queries.
    val tokens = DecodedFileCache.get(s"$dir/part_${p}_tokens.lance", (m: TokenMap) => m.weight) {
      val f = IndexFile.open(storage, files, entry, s"part_${p}_tokens.lance")
      try f.all(Seq("_token_fst_bytes"), allocator) { vs =>
        val v = vs.head.asInstanceOf[LargeVarBinaryVector]
        if (v.getValueCount != 1) throw new CorruptFileException(f.path, s"${v.getValueCount} rows (1 expected)")
        new TokenMap(v.getObject(0), f.path)
      } finally f.close()
    }
    val (rowIds, numTokens, total) = DecodedFileCache.get(s"$dir/part_${p}_docs.lance",
        (d: (Array[Long], Array[Int], Long)) => 12L * d._1.length) {
      val f = IndexFile.open(storage, files, entry, s"part_${p}_docs.lance")
      try {
        // Further columns (a list-element index's document coordinates) name documents this reader does not know.
        f.schema.fields.map(_.name).filterNot(Set("_rowid", "_num_tokens")).headOption.foreach(c =>
          throw new UnsupportedFeatureException(s"INVERTED index ${Indices.describe(entry)}: document column '$c' of ${f.path} is not supported"))
        val total = f.schema.metadata.get("total_tokens").flatMap(b => new String(b, UTF_8).toLongOption)
          .getOrElse(throw new CorruptFileException(f.path, "no total_tokens in the schema metadata"))
        f.all(Seq("_rowid", "_num_tokens"), allocator) { vs =>
          val ids = vs.head match {
            case v: UInt8Vector => Array.tabulate(v.getValueCount)(i => v.get(i))
            case v: BigIntVector => Array.tabulate(v.getValueCount)(i => v.get(i))
            case other => throw new CorruptFileException(f.path, s"_rowid is ${other.getField.getType}")
          }
          val counts = vs(1) match {
            case v: UInt4Vector => Array.tabulate(v.getValueCount)(i => v.get(i))
            case other => throw new CorruptFileException(f.path, s"_num_tokens is ${other.getField.getType}")
          }
          (ids, counts, total)
        }
      } finally f.close()
    }
    new TextPartition(p, tokens, rowIds, numTokens, total, s"$dir/part_${p}_invert.lance",
      () => IndexFile.open(storage, files, entry, s"part_${p}_invert.lance"))
  }
}
