package sparklance.format.file.v2_0

import com.github.luben.zstd.Zstd
import java.nio.{ByteBuffer, ByteOrder}
import net.jpountz.lz4.LZ4Factory
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.Encodings20Protos._
import sparklance.format.table.{LanceField, LanceSchema}
import sparklance.format.file.v2_0.TestFiles.RawPage

/** Encodings pylance may write in 2.0 files that FileWriter20 never produces (§2.3, §2.12, §2.13). */
class ForeignEncodingsSuite extends AnyFunSuite {
  private def le(width: Int, vs: Seq[Long]): Array[Byte] = {
    val b = ByteBuffer.allocate(width * vs.size).order(ByteOrder.LITTLE_ENDIAN)
    vs.foreach(v => width match { case 2 => b.putShort(v.toShort); case 4 => b.putInt(v.toInt); case 8 => b.putLong(v) })
    b.array()
  }

  private def readColumn(field: LanceField, n: Long, pages: Seq[RawPage]): IndexedSeq[Any] = {
    val a = new RootAllocator()
    try {
      val bytes = TestFiles.build(LanceSchema(Seq(field)), n, Seq(pages))
      val v = new FileReader20(new BytesInputFile(bytes)).read(field, _ => 0, 0, n.toInt, a)
      try Rows(v) finally { v.close() }
    } finally a.close()
  }

  private def compressed(bits: Int, buffer: Int, scheme: String): ArrayEncoding = ArrayEncoding.newBuilder()
    .setFlat(Flat.newBuilder().setBitsPerValue(bits).setBuffer(Buffer.newBuilder().setBufferIndex(buffer))
      .setCompression(Compression.newBuilder().setScheme(scheme))).build()

  private val i32 = LanceField(0, "x", new ArrowType.Int(32, true), nullable = true)
  private val rnd = new Random(1)
  private val values = Seq.fill(5000)(rnd.nextInt(100).toLong)
  private val raw = le(4, values)
  private def ints(vs: Seq[Long]) = vs.map(v => le(4, Seq(v)).toSeq)

  test("zstd-compressed flat: with the u64 length prefix and as a bare frame") {
    val frame = Zstd.compress(raw, 3)
    for (buf <- Seq(le(8, Seq(raw.length.toLong)) ++ frame, frame)) {
      val page = RawPage(5000, ArrayEncodings.noNulls(compressed(32, 0, "zstd")), Seq(buf))
      assert(readColumn(i32, 5000, Seq(page)) == ints(values))
    }
  }

  test("lz4-compressed flat with nulls, and compressed string bytes") {
    val block = LZ4Factory.fastestInstance().fastCompressor().compress(raw)
    val validity = Array.tabulate[Byte](625)(i => if (i == 3) 0xfe.toByte else -1)
    val page = RawPage(5000, ArrayEncodings.someNulls(ArrayEncodings.flat(1, 0), compressed(32, 1, "lz4")),
      Seq(validity, le(4, Seq(raw.length.toLong)) ++ block))
    assert(readColumn(i32, 5000, Seq(page)) == ints(values).updated(24, null))

    val s = LanceField(0, "s", ArrowType.Utf8.INSTANCE, nullable = true)
    val text = "hello world, hello lance ".getBytes("UTF-8")
    val bin = ArrayEncodings.binary(ArrayEncodings.noNulls(ArrayEncodings.flat(64, 0)), compressed(8, 1, "zstd"), text.length + 1)
    val strPage = RawPage(2, bin, Seq(le(8, Seq(12, text.length.toLong)), le(8, Seq(text.length.toLong)) ++ Zstd.compress(text)))
    assert(readColumn(s, 2, Seq(strPage)) == Seq(text.take(12).toSeq, text.drop(12).toSeq))
  }

  test("damaged or unknown compression") {
    val page = RawPage(5000, ArrayEncodings.noNulls(compressed(32, 0, "zstd")), Seq(le(8, Seq(raw.length.toLong)) ++ Array.fill[Byte](50)(7)))
    intercept[CorruptFileException](readColumn(i32, 5000, Seq(page)))
    val short = RawPage(5000, ArrayEncodings.noNulls(compressed(32, 0, "zstd")), Seq(le(8, Seq(8L)) ++ Zstd.compress(raw.take(8))))
    intercept[CorruptFileException](readColumn(i32, 5000, Seq(short)))
    val e = intercept[UnsupportedFeatureException](
      readColumn(i32, 5000, Seq(RawPage(5000, ArrayEncodings.noNulls(compressed(32, 0, "brotli")), Seq(raw)))))
    assert(e.getMessage.contains("brotli"))
  }

  /** Packs values of w bits contiguously, LSB first (§2.12). */
  private def packContiguous(vs: Seq[Long], w: Int): Array[Byte] = {
    val out = new Array[Byte]((vs.size * w + 7) / 8)
    for ((v, i) <- vs.zipWithIndex; j <- 0 until w if ((v >>> j) & 1) != 0) {
      val bit = i * w + j
      out(bit / 8) = (out(bit / 8) | (1 << (bit % 8))).toByte
    }
    out
  }

  test("bitpacked, unsigned and signed") {
    def page(vs: Seq[Long], w: Int, signed: Boolean) = RawPage(vs.size, ArrayEncodings.noNulls(ArrayEncoding.newBuilder()
      .setBitpacked(Bitpacked.newBuilder().setCompressedBitsPerValue(w).setUncompressedBitsPerValue(32)
        .setBuffer(Buffer.getDefaultInstance).setSigned(signed)).build()), Seq(packContiguous(vs, w)))
    val unsigned = (0L until 32L) ++ (0L until 9L)
    assert(readColumn(i32, unsigned.size, Seq(page(unsigned, 5, signed = false))) == ints(unsigned))
    val signed = -16L until 16L
    assert(readColumn(i32, signed.size, Seq(page(signed, 5, signed = true))) == ints(signed))
  }

  private val Order = Seq(0, 4, 2, 6, 1, 5, 3, 7)

  /** FastLanes packing written from the forward formula of LANCE-FILE-2.1-2.2.md §9.3. */
  private def packFastLanes(vs: Seq[Long], w: Int, t: Int): Array[Byte] = {
    val lanes = 1024 / t
    val blocks = (vs.size + 1023) / 1024
    val words = Array.ofDim[Long](blocks, lanes * w)
    for (b <- 0 until blocks; row <- 0 until t; lane <- 0 until lanes) {
      val i = b * 1024 + Order(row / 8) * 16 + (row % 8) * 128 + lane
      val v = if (i < vs.size) vs(i) else 0L
      for (j <- 0 until w if ((v >>> j) & 1) != 0) {
        val bit = row * w + j
        words(b)(lanes * (bit / t) + lane) |= 1L << (bit % t)
      }
    }
    words.flatMap(ws => le(t / 8, ws.toSeq))
  }

  private def fastLanesPage(vs: Seq[Long], w: Int, t: Int) = RawPage(vs.size, ArrayEncodings.noNulls(ArrayEncoding.newBuilder()
    .setBitpackedForNonNeg(BitpackedForNonNeg.newBuilder().setCompressedBitsPerValue(w).setUncompressedBitsPerValue(t)
      .setBuffer(Buffer.getDefaultInstance)).build()), Seq(packFastLanes(vs, w, t)))

  test("FastLanes: the worked example of the 2.1 document (int32 0..1023, W = 10)") {
    val packed = packFastLanes(0L until 1024L, 10, 32)
    assert(packed.slice(0, 8).toSeq == Hex("00 00 02 10 01 04 12 50").toSeq)
    assert(readColumn(i32, 1024, Seq(fastLanesPage(0L until 1024L, 10, 32))) == ints(0L until 1024L))
  }

  test("bitpacked_for_non_neg: u16, u32 and i64 columns of 2500 values") {
    val r = new Random(5)
    for ((t, field) <- Seq(16 -> new ArrowType.Int(16, false), 32 -> new ArrowType.Int(32, false), 64 -> new ArrowType.Int(64, true))) {
      val vs = Seq.fill(2500)(r.nextInt(1024).toLong)
      val got = readColumn(LanceField(0, "x", field, nullable = true), 2500, Seq(fastLanesPage(vs, 10, t)))
      assert(got == vs.map(v => le(t / 8, Seq(v)).toSeq), s"T = $t")
    }
  }

  test("fixed_size_binary on a binary field, with byte-wise flat8") {
    val b = LanceField(0, "b", ArrowType.Binary.INSTANCE, nullable = true)
    val enc = ArrayEncoding.newBuilder().setFixedSizeBinary(FixedSizeBinary.newBuilder()
      .setBytes(ArrayEncodings.flat(8, 1)).setByteWidth(3)).build()
    val page = RawPage(3, ArrayEncodings.someNulls(ArrayEncodings.flat(1, 0), enc), Seq(Hex("05"), Hex.ascii("abcdefghi")))
    assert(readColumn(b, 3, Seq(page)) == Seq(Hex.ascii("abc").toSeq, null, Hex.ascii("ghi").toSeq))
  }

  test("FSST strings: symbols, escapes, nulls, a code past the table") {
    val table = new Array[Byte](2312)
    val symbols = Seq("ab", "cde", "hello wo")
    ByteBuffer.wrap(table).order(ByteOrder.LITTLE_ENDIAN).putLong(0x46535354L << 32 | 1L << 24 | symbols.size)
    symbols.zipWithIndex.foreach { case (sym, k) =>
      System.arraycopy(sym.getBytes("UTF-8"), 0, table, 8 + 8 * k, sym.length)
      table(8 + 8 * symbols.size + k) = sym.length.toByte
    }
    // "ab" "cde" escape 'x' | "hello wo" escape 'r' | "ab"
    val good = Hex("00 01 ff 78 | 02 ff 72 | 00")
    val bin = ArrayEncodings.binary(ArrayEncodings.noNulls(ArrayEncodings.flat(64, 0)), ArrayEncodings.flat(8, 1), 9)
    val fsst = ArrayEncoding.newBuilder().setFsst(Fsst.newBuilder().setBinary(bin)
      .setSymbolTable(com.google.protobuf.ByteString.copyFrom(table))).build()
    val s = LanceField(0, "s", ArrowType.Utf8.INSTANCE, nullable = true)
    val page = RawPage(4, fsst, Seq(le(8, Seq(4, 4 + 9, 7, 8)), good))
    assert(readColumn(s, 4, Seq(page)) == Seq("abcdex", null, "hello wor", "ab").map(x => if (x == null) null else x.getBytes("UTF-8").toSeq))
    val bad = RawPage(1, fsst, Seq(le(8, Seq(2)), Hex("05 00")))
    intercept[CorruptFileException](readColumn(s, 1, Seq(bad)))
  }
}
