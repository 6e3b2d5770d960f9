package sparklance.format.file.v2_0

import java.io.ByteArrayOutputStream
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.FieldVector
import scala.jdk.CollectionConverters._
import sparklance.format.file.{ContainerWriter, TypedAny}
import sparklance.format.proto.Encodings20Protos.ArrayEncoding
import sparklance.format.proto.File2Protos.ColumnMetadata
import sparklance.format.proto.FileProtos
import sparklance.format.table.LanceSchema

/** Builds 2.0 files from hand-written pages, to test the reader against the spec's bytes, or from random batches. */
object TestFiles {
  /**
   * A file FileWriter20 wrote from `batches` random batches of `rows` rows each, batch k's values
   * from `generator(k)`, and the values of each top-level field as [[Rows]] reads them.
   */
  def random(schema: LanceSchema, batches: Int, rows: Int, maxPageBytes: Long)(
      generator: Int => RandomVectors): (Array[Byte], Seq[IndexedSeq[Any]]) = {
    val a = new RootAllocator()
    try {
      val out = new ByteArrayOutputStream
      val w = new FileWriter20(out, schema, maxPageBytes)
      val expected = schema.fields.map(_ => IndexedSeq.newBuilder[Any])
      for (k <- 0 until batches) {
        val vs: Seq[FieldVector] = schema.fields.map(generator(k).vector(_, rows, a))
        try {
          w.write(vs)
          vs.zip(expected).foreach { case (v, e) => e ++= Rows(v) }
        } finally vs.foreach(_.close())
      }
      w.finish()
      (out.toByteArray, expected.map(_.result()))
    } finally a.close()
  }

  final case class RawPage(length: Long, encoding: ArrayEncoding, buffers: Seq[Array[Byte]])

  def page(length: Long, encodingBytes: Array[Byte], buffers: Array[Byte]*): RawPage =
    RawPage(length, ArrayEncoding.parseFrom(encodingBytes), buffers)

  def build(schema: LanceSchema, numRows: Long, columns: Seq[Seq[RawPage]]): Array[Byte] = {
    val out = new ByteArrayOutputStream
    val w = new ContainerWriter(out)
    val metas = columns.map { pages =>
      val c = new ColumnPages
      pages.foreach(p => c.write(w, p.buffers.map(b => PageBuffer(b, b.length)), p.length, p.encoding))
      c.metadata
    }
    val fd = FileProtos.FileDescriptor.newBuilder()
      .setSchema(FileProtos.Schema.newBuilder().addAllFields(schema.toProto.asJava)).setLength(numRows).build()
    w.finish(Seq(fd.toByteArray), metas, 0, 3)
    out.toByteArray
  }

  def columnMetadata(pages: Seq[(Seq[(Long, Long)], Long, ArrayEncoding)]): ColumnMetadata = {
    val b = ColumnMetadata.newBuilder()
      .setEncoding(TypedAny.direct(ArrayEncodings.ColumnEncodingName, ArrayEncodings.columnValues))
    pages.foreach { case (bufs, len, enc) =>
      val p = ColumnMetadata.Page.newBuilder().setLength(len).setEncoding(TypedAny.direct(ArrayEncodings.ArrayEncodingName, enc))
      bufs.foreach { case (o, s) => p.addBufferOffsets(o).addBufferSizes(s) }
      b.addPages(p)
    }
    b.build()
  }
}
