package sparklance.format.index.vector.build

import sparklance.format.index.vector.VectorIndexType
import com.google.protobuf.ByteString
import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{Float4Vector, UInt1Vector, UInt8Vector}
import org.apache.arrow.vector.complex.FixedSizeListVector
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import scala.jdk.CollectionConverters._
import sparklance.format.file.v2_1.FileWriter21
import sparklance.format.io.Storage
import sparklance.format.proto.VectorIndexProtos.{IVF, Tensor}
import sparklance.format.table.LanceSchema

/**
 * Writes the two files of one IVF index segment as pylance 14.0.2 writes them
 * (LANCE-VECTOR-INDICES.md §2, §4), both Lance files of format 2.2:
 *  - `index.idx`: the IVF model (centroids, loss) in global buffer 1 and a FLAT sub-index, which
 *    is the 0-row column `__flat_marker`;
 *  - `auxiliary.idx`: the rows grouped by partition (`_rowid` and the payload: `flat` vectors,
 *    `__pq_code` codes transposed per partition, or `__sq_code` levels), the partitions' row ranges
 *    in an IVF message in global buffer 1, and for PQ the codebook as a Tensor in global buffer 2.
 */
object IvfSegmentFiles {
  val IndexFileName = "index.idx"
  val AuxiliaryFileName = "auxiliary.idx"
  /** Rows handed to the file writer at a time. */
  private val ChunkRows = 8192

  /** Writes both files into `dir`; returns (file name, size) in the order pylance lists them. */
  def write(storage: Storage, dir: String, model: VectorModel, rows: PartitionedRows, allocator: BufferAllocator): Seq[(String, Long)] = {
    val auxiliary = writeAuxiliary(storage, Storage.join(dir, AuxiliaryFileName), model, rows, allocator)
    val index = writeIndex(storage, Storage.join(dir, IndexFileName), model, allocator)
    Seq(AuxiliaryFileName -> auxiliary, IndexFileName -> index)
  }

  private def field(name: String, t: ArrowType, nullable: Boolean, children: Field*) =
    new Field(name, new FieldType(nullable, t, null), children.asJava)
  private val u64 = new ArrowType.Int(64, false)

  private def metadata(entries: (String, String)*): Map[String, Array[Byte]] = entries.map { case (k, v) => k -> v.getBytes(UTF_8) }.toMap
  /** A JSON string literal of `s`, which holds no backslashes or control characters. */
  private def quoted(s: String): String = "\"" + s.replace("\"", "\\\"") + "\""

  private def ivf(offsets: Seq[Long], lengths: Seq[Int]): IVF.Builder =
    IVF.newBuilder().addAllOffsets(offsets.map(Long.box).asJava).addAllLengths(lengths.map(Int.box).asJava)

  private def tensor(shape: Seq[Int], values: Array[Float]): Tensor = {
    val bytes = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN)
    bytes.asFloatBuffer().put(values)
    Tensor.newBuilder().setDataType(Tensor.DataType.FLOAT32).addAllShape(shape.map(Int.box).asJava)
      .setData(ByteString.copyFrom(bytes.array())).build()
  }

  private def typeJson(model: VectorModel) = s"""{"type":"${model.indexType.name}","distance_type":"${model.metric.name}"}"""

  private def writeIndex(storage: Storage, path: String, model: VectorModel, allocator: BufferAllocator): Long = {
    val k = model.numPartitions
    val arrow = new Schema(Seq(field("__flat_marker", u64, nullable = false)).asJava)
    val schema = LanceSchema.fromArrow(arrow).copy(metadata = metadata("lance:index" -> typeJson(model), "lance:ivf" -> "1",
      "lance:flat" -> Seq.fill(k)("\"\"").mkString("[", ",", "]")))
    val model1 = ivf(Seq.fill(k)(0L), Seq.fill(k)(0)).setCentroidsTensor(tensor(Seq(k, model.dim), model.centroids))
      .setLoss(model.loss).build()
    val writer = new FileWriter21(storage.create(path), schema, minor = 2)
    writer.writeRows(arrow, 0, allocator)(_ => ())
    writer.finish(Seq(model1.toByteArray)).sizeBytes
  }

  private def writeAuxiliary(storage: Storage, path: String, model: VectorModel, rows: PartitionedRows, allocator: BufferAllocator): Long = {
    val k = model.numPartitions
    val (payloadName, item, width, nullable, storageJson) = model.indexType match {
      case VectorIndexType.IvfFlat =>
        ("flat", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), model.dim, false, s"""{"dim":${model.dim}}""")
      case VectorIndexType.IvfPq =>
        ("__pq_code", new ArrowType.Int(8, false), model.numSubVectors, true,
          s"""{"codebook_position":2,"nbits":8,"num_sub_vectors":${model.numSubVectors},"dimension":${model.dim},""" +
            """"codebook_tensor":[],"transposed":true}""")
      case VectorIndexType.IvfSq =>
        ("__sq_code", new ArrowType.Int(8, false), model.dim, true,
          s"""{"dim":${model.dim},"num_bits":8,"bounds":{"start":${model.sqBounds._1},"end":${model.sqBounds._2}}}""")
    }
    val arrow = new Schema(Seq(field("_rowid", u64, nullable = true),
      field(payloadName, new ArrowType.FixedSizeList(width), nullable, field("item", item, nullable = true))).asJava)
    val lengths = (0 until k).map(rows.size)
    val offsets = lengths.scanLeft(0L)(_ + _).init
    val schema = LanceSchema.fromArrow(arrow).copy(metadata = metadata("distance_type" -> model.metric.name, "lance:ivf" -> "1",
      "storage_metadata" -> s"[${quoted(storageJson)}]"))
    val buffers = Seq(ivf(offsets, lengths).build().toByteArray) ++
      (if (model.indexType == VectorIndexType.IvfPq) Seq(tensor(Seq(256, model.dim), model.codebook).toByteArray) else Nil)
    val writer = new FileWriter21(storage.create(path), schema, minor = 2)
    var finished = false
    try {
      (0 until k).foreach { p =>
        val (ids, payload) = rows.sorted(p)
        rows.release(p)
        val bytes = if (model.indexType == VectorIndexType.IvfPq) transpose(payload, ids.length, rows.bytesPerRow) else payload
        ids.indices.grouped(ChunkRows).foreach { chunk =>
          writeChunk(writer, arrow, allocator, ids, bytes, chunk.head, chunk.size, model, width)
        }
      }
      finished = true
      writer.finish(buffers).sizeBytes
    } finally if (!finished) writer.finish() // closes the stream; the partial file is abandoned with its directory
  }

  /**
   * pylance's `transposed` PQ layout: a partition's `n` rows of `b` code bytes are kept column by
   * column, so byte `j` of row `i` sits at `j · n + i` of the partition's bytes (§4.2).
   */
  private def transpose(rowMajor: Array[Byte], n: Int, b: Int): Array[Byte] = {
    val out = new Array[Byte](rowMajor.length)
    var i = 0
    while (i < n) {
      var j = 0
      while (j < b) { out(j * n + i) = rowMajor(i * b + j); j += 1 }
      i += 1
    }
    out
  }

  private def writeChunk(writer: FileWriter21, arrow: Schema, allocator: BufferAllocator, ids: Array[Long], payload: Array[Byte],
      from: Int, n: Int, model: VectorModel, width: Int): Unit = {
    writer.writeRows(arrow, n, allocator) { vectors =>
      val rowIds = vectors.head.asInstanceOf[UInt8Vector]
      val list = vectors(1).asInstanceOf[FixedSizeListVector]
      rowIds.allocateNew(n)
      list.allocateNew()
      (0 until n).foreach(i => rowIds.set(i, ids(from + i)))
      if (model.indexType == VectorIndexType.IvfFlat) {
        val values = list.getDataVector.asInstanceOf[Float4Vector]
        values.allocateNew(n * width)
        val floats = ByteBuffer.wrap(payload, from * 4 * width, n * 4 * width).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
        (0 until n * width).foreach(j => values.set(j, floats.get(j)))
        values.setValueCount(n * width)
      } else {
        val values = list.getDataVector.asInstanceOf[UInt1Vector]
        values.allocateNew(n * width)
        (0 until n * width).foreach(j => values.set(j, payload(from * width + j)))
        values.setValueCount(n * width)
      }
      (0 until n).foreach(list.setNotNull)
    }
  }
}
