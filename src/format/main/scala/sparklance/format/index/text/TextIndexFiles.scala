package sparklance.format.index.text

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{Float4Vector, LargeVarBinaryVector, UInt4Vector, UInt8Vector, VarBinaryVector}
import org.apache.arrow.vector.complex.ListVector
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import scala.jdk.CollectionConverters._
import sparklance.format.file.v2_1.FileWriter21
import sparklance.format.io.Storage
import sparklance.format.table.LanceSchema

/**
 * The files of an INVERTED index segment as pylance 14.0.2 writes them (Lance 2.2 files, every
 * column non-nullable; docs/format-inverted-index.md): per partition `part_<p>_tokens.lance`,
 * `part_<p>_docs.lance` and `part_<p>_invert.lance`, and the segment's `metadata.lance`.
 */
object TextIndexFiles {
  val MetadataFile = "metadata.lance"
  private val RowsPerWrite = 8192

  // The layout this writer writes, as the schema metadata of metadata.lance and the invert files name it.
  private val Layout = Seq("format_version" -> "2", "posting_block_size" -> PostingList.BlockSize.toString,
    "posting_tail_codec" -> "varint_delta_v1")
  // Added to the layout when the segment holds positions.
  private val PositionsLayout = Seq("positions_layout" -> Positions.Layout, "positions_codec" -> Positions.PackedCodec)

  private def field(name: String, t: ArrowType, children: Field*): Field =
    new Field(name, new FieldType(false, t, null), children.asJava)
  private def listOf(name: String): Field =
    field(name, ArrowType.List.INSTANCE, new Field("item", new FieldType(true, ArrowType.LargeBinary.INSTANCE, null), null))
  private val u32 = new ArrowType.Int(32, false)
  private val u64 = new ArrowType.Int(64, false)

  private def writer(storage: Storage, dir: String, name: String, arrow: Schema, metadata: Seq[(String, String)]): FileWriter21 = {
    val schema = LanceSchema.fromArrow(arrow).copy(metadata = metadata.map { case (k, v) => k -> v.getBytes(UTF_8) }.toMap)
    new FileWriter21(storage.create(Storage.join(dir, name)), schema, minor = 2)
  }

  /**
   * Writes partition `p`'s files into segment directory `dir`: the token map (`fst` of `numTokens`
   * tokens of `tokenBytes` bytes in all), the documents (`rowIds`, `lengths`, `numDocs` of them,
   * `totalTokens` tokens) and, for each token id, `posting(id)`: its encoding, posting count and,
   * when `withPositions`, its positions stream and block offsets ([[Positions.encode]]).
   */
  def writePartition(storage: Storage, dir: String, p: Int, allocator: BufferAllocator, withPositions: Boolean)(fst: Array[Byte],
      numTokens: Int, tokenBytes: Long, rowIds: Array[Long], lengths: Array[Int], numDocs: Int, totalTokens: Long, invertRows: Int,
      posting: Int => (EncodedPosting, Int, Option[(Array[Byte], Array[Int])])): Seq[(String, Long)] = {
    val tokensName = s"part_${p}_tokens.lance"
    val tokensArrow = new Schema(Seq(field("_token_fst_bytes", ArrowType.LargeBinary.INSTANCE),
      field("_token_next_id", u32), field("_token_total_length", u64)).asJava)
    val tw = writer(storage, dir, tokensName, tokensArrow, Nil)
    tw.writeRows(tokensArrow, 1, allocator) { case Seq(bytes: LargeVarBinaryVector, next: UInt4Vector, total: UInt8Vector) =>
      bytes.setSafe(0, fst); next.setSafe(0, numTokens); total.setSafe(0, tokenBytes)
    }
    val tokensSize = tw.finish().sizeBytes

    val docsName = s"part_${p}_docs.lance"
    val docsArrow = new Schema(Seq(field("_rowid", u64), field("_num_tokens", u32)).asJava)
    val dw = writer(storage, dir, docsName, docsArrow, Seq("total_tokens" -> totalTokens.toString))
    var from = 0
    while (from < numDocs) {
      val rows = math.min(RowsPerWrite * 8, numDocs - from)
      val at = from
      dw.writeRows(docsArrow, rows, allocator) { case Seq(ids: UInt8Vector, lens: UInt4Vector) =>
        ids.allocateNew(rows); lens.allocateNew(rows)
        var i = 0
        while (i < rows) { ids.set(i, rowIds(at + i)); lens.set(i, lengths(at + i)); i += 1 }
      }
      from += rows
    }
    val docsSize = dw.finish().sizeBytes

    val invertName = s"part_${p}_invert.lance"
    val positionFields = if (!withPositions) Nil else Seq(field("_compressed_position", ArrowType.LargeBinary.INSTANCE),
      field("_position_block_offset", ArrowType.List.INSTANCE, new Field("item", new FieldType(true, u32, null), null)))
    val invertArrow = new Schema((Seq(listOf("_posting"), field("_max_score", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)),
      field("_length", u32), listOf("_impacts")) ++ positionFields).asJava)
    val iw = writer(storage, dir, invertName, invertArrow, layout(withPositions))
    from = 0
    while (from < invertRows) {
      val rows = math.min(RowsPerWrite, invertRows - from)
      val at = from
      iw.writeRows(invertArrow, rows, allocator) { vectors =>
        val Seq(postings: ListVector, max: Float4Vector, length: UInt4Vector, impacts: ListVector) = vectors.take(4)
        var i = 0
        while (i < rows) {
          val (encoded, count, positions) = posting(at + i)
          setList(postings, i, encoded.blocks)
          max.setSafe(i, encoded.maxScore)
          length.setSafe(i, count)
          setList(impacts, i, encoded.impacts)
          positions.foreach { case (stream, offsets) =>
            vectors(4).asInstanceOf[LargeVarBinaryVector].setSafe(i, stream)
            setOffsets(vectors(5).asInstanceOf[ListVector], i, offsets)
          }
          i += 1
        }
      }
      from += rows
    }
    val invertSize = iw.finish().sizeBytes
    Seq(invertName -> invertSize, tokensName -> tokensSize, docsName -> docsSize)
  }

  /** The three files of a partition, as named in segment directories. */
  def partitionFiles(p: Int): Seq[String] = Seq(s"part_${p}_invert.lance", s"part_${p}_tokens.lance", s"part_${p}_docs.lance")

  /**
   * Copies partition `from` of the segment directory `fromDir` into `toDir` as partition `to`
   * (a partition's files name nothing outside themselves, and its token ids are its own);
   * returns the files written with their sizes.
   */
  def copyPartition(storage: Storage, fromDir: String, from: Int, toDir: String, to: Int): Seq[(String, Long)] =
    partitionFiles(from).zip(partitionFiles(to)).map { case (source, target) =>
      val in = storage.openInput(Storage.join(fromDir, source))
      val out = storage.create(Storage.join(toDir, target))
      try {
        var at = 0L
        while (at < in.length) {
          val n = math.min(CopyChunk.toLong, in.length - at).toInt
          out.write(in.read(at, n))
          at += n
        }
        target -> in.length
      } finally { out.close(); in.close() }
    }
  private val CopyChunk = 8 << 20

  private def layout(withPositions: Boolean): Seq[(String, String)] = if (withPositions) Layout ++ PositionsLayout else Layout

  private def setList(list: ListVector, row: Int, items: Array[Array[Byte]]): Unit =
    setItems[LargeVarBinaryVector](list, row, items.length)((data, at, j) => data.setSafe(at, items(j)))

  private def setOffsets(list: ListVector, row: Int, offsets: Array[Int]): Unit =
    setItems[UInt4Vector](list, row, offsets.length)((data, at, j) => data.setSafe(at, offsets(j)))

  /** Row `row` of `list`: `n` items, item j set by `set(data, its index in data, j)`. */
  private def setItems[V <: org.apache.arrow.vector.ValueVector](list: ListVector, row: Int, n: Int)(set: (V, Int, Int) => Unit): Unit = {
    val data = list.getDataVector.asInstanceOf[V]
    val start = list.startNewValue(row)
    var j = 0
    while (j < n) { set(data, start + j, j); j += 1 }
    data.setValueCount(start + n)
    list.endValue(row, n)
  }

  /**
   * Writes `metadata.lance` of a segment whose partitions are `partitions`: one row with an empty
   * `deleted_fragments` bitmap; `partitions`, `params` and the layout in its schema metadata.
   */
  def writeMetadata(storage: Storage, dir: String, partitions: Seq[Int], params: TextIndexParams,
      allocator: BufferAllocator): (String, Long) = {
    val arrow = new Schema(Seq(field("deleted_fragments", ArrowType.Binary.INSTANCE)).asJava)
    val metadata = Seq("partitions" -> partitions.mkString("[", ",", "]"), "params" -> params.json,
      "token_set_format" -> "fst") ++ layout(params.withPosition)
    val w = writer(storage, dir, MetadataFile, arrow, metadata)
    w.writeRows(arrow, 1, allocator) { case Seq(deleted: VarBinaryVector) =>
      deleted.setSafe(0, sparklance.format.deletion.PortableBitmaps.toBytes(new org.roaringbitmap.RoaringBitmap()))
    }
    MetadataFile -> w.finish().sizeBytes
  }
}
