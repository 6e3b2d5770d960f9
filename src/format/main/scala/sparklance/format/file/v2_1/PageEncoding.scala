package sparklance.format.file.v2_1

import sparklance.format.proto.Encodings20Protos.ColumnEncoding
import sparklance.format.proto.Encodings21Protos.{CompressiveEncoding, Flat, PageLayout, Variable}

/** An encoded page: its layout and its buffers, in buffer order. */
private[v2_1] final case class EncodedPage(layout: PageLayout, buffers: Seq[ByteSink])

/** What the page writers share (LANCE-FILE-2.1-2.2.md §1.1, §3, §10). */
private[v2_1] object PageEncoding {
  val PageLayoutName = "lance.encodings21.PageLayout"
  val ColumnEncodingName = "lance.encodings.ColumnEncoding"
  val columnValues: ColumnEncoding =
    ColumnEncoding.newBuilder().setValues(com.google.protobuf.Empty.getDefaultInstance).build()

  /** Values of this many bytes or more go to full-zip pages, as pylance decides. */
  val FullZipThreshold = 256

  def flat(bits: Int): CompressiveEncoding =
    CompressiveEncoding.newBuilder().setFlat(Flat.newBuilder().setBitsPerValue(bits.toLong)).build()

  def variable(offsetBits: Int): CompressiveEncoding =
    CompressiveEncoding.newBuilder().setVariable(Variable.newBuilder().setOffsets(flat(offsetBits))).build()

  /** The size of the largest value slot of the page (strings: their length). */
  def largestSlotBytes(s: PageSpan): Long = s.values match {
    case f: ValueSink.Fixed => f.width.toLong
    case f: ValueSink.FixedSizeList => if (f.itemBits == 1) (f.dim + 7L) / 8 else f.slotBytes.toLong
    case v: ValueSink.Variable =>
      var m = 0L
      var i = s.slotFrom
      val end = s.slotFrom + s.numSlots
      while (i < end) { m = math.max(m, v.length(i)); i += 1 }
      m
    case _ => 0L
  }
}
