package sparklance.format.file.v2_1

import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.LargeVarBinaryVector
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Using
import sparklance.format.UnsupportedFeatureException
import sparklance.format.file.{BlobDescriptors, BlobLocation}
import sparklance.format.file.BlobLocation._
import sparklance.format.io.LocalStorage
import sparklance.format.table.{LanceField, LanceSchema}

/**
 * Blob descriptors as pylance 14.0.2 stores them in 2.2 files (kind u8, position u64, size u64,
 * blob id u32, URI as u32 length + UTF-8), decoded into locations: the kind decides what position
 * and size mean (docs/format-blobs.md).
 */
class BlobLocationSuite extends AnyFunSuite {
  private def descriptor(kind: Int, position: Long, size: Long, blobId: Int, uri: String): Array[Byte] = {
    val u = uri.getBytes(UTF_8)
    val b = ByteBuffer.allocate(25 + u.length).order(ByteOrder.LITTLE_ENDIAN)
    b.put(kind.toByte).putLong(position).putLong(size).putInt(blobId).putInt(u.length).put(u)
    b.array()
  }

  private def decoded(bytes: Array[Byte]*): Seq[Option[BlobLocation]] = {
    val out = new BlobDescriptors(bytes.size + 1) // the last row stays NULL (no descriptor)
    bytes.zipWithIndex.foreach { case (d, row) => BlobDescriptorsV2.parse(d, 0, d.length, out, row, Ctx("t.lance", s"row $row")) }
    (0 until out.count).map(i => out.location(i, s"row $i"))
  }

  test("each kind decodes to its location; NULL has none") {
    val got = decoded(
      descriptor(0, 128, 12, 0, ""),
      descriptor(0, 0, 0, 0, ""),
      descriptor(1, 4096, 70000, 1, ""),
      descriptor(2, 0, 5 << 20, 2, ""),
      descriptor(3, 0, 0, 0, "file:///data/x0.bin"),
      descriptor(3, 10, 25, 0, "s3://bucket/x1.bin"),
      descriptor(3, 0, 0, 1, "x0.bin"),
      descriptor(4, 150, 20, 0, "_blobs/shared.blob"),
      descriptor(5, 5, 10, 2, "m.blob"))
    assert(got == Seq(
      Some(Inline(128, 12)),
      Some(Inline(0, 0)),
      Some(Packed(1, 4096, 70000)),
      Some(Dedicated(2, 0, 5 << 20)),
      Some(External("file:///data/x0.bin", 0, None)),
      Some(External("s3://bucket/x1.bin", 0, Some(ByteRange(10, 25)))),
      Some(External("x0.bin", 1, None)),
      Some(Managed("_blobs/shared.blob", 0, 150, 20)),
      Some(Managed("m.blob", 2, 5, 10)),
      None))
  }

  test("an external blob of size 0 is a whole object, not an empty value") {
    val Seq(Some(location), _) = decoded(descriptor(3, 0, 0, 0, "file:///x.bin"))
    assert(location.knownSize.isEmpty)
    val Seq(Some(empty), _) = decoded(descriptor(0, 0, 0, 0, ""))
    assert(empty.knownSize.contains(0L))
  }

  test("an unknown kind is refused by number, naming the row") {
    val e = intercept[UnsupportedFeatureException](decoded(descriptor(9, 0, 1, 0, "")))
    assert(e.getMessage.contains("row 0") && e.getMessage.contains("blob kind 9"))
  }

  test("a descriptor whose URI length disagrees with its bytes is corrupt") {
    val d = descriptor(3, 0, 0, 0, "file:///x.bin")
    intercept[Exception](decoded(d.dropRight(1)))
  }

  test("a 2.1 blob column written as pylance writes it reads back as inline locations") {
    val field = LanceField(0, "b", ArrowType.LargeBinary.INSTANCE, nullable = true, metadata = Map("lance-encoding:blob" -> "true"))
    val values = Seq("abc".getBytes(UTF_8), null, Array.emptyByteArray, Array.fill[Byte](100)(7))
    Using.resource(new RootAllocator()) { a =>
      val v = new LargeVarBinaryVector("b", a)
      val (bytes, _) = try {
        v.allocateNew()
        values.zipWithIndex.foreach { case (x, i) => if (x == null) v.setNull(i) else v.setSafe(i, x) }
        v.setValueCount(values.size)
        Writer21Fixtures.write(LanceSchema(Seq(field)), Seq(Seq(v)), minor = 1)
      } finally v.close()
      val r = new FileReader21(new MemFile(bytes, "mem-2.1"))
      val d = r.blobDescriptors(field, 0, 0, values.size)
      val got = (0 until values.size).map(i => d.location(i, s"row $i"))
      assert(got(1).isEmpty && got(2).contains(Inline(0, 0)))
      Seq(0, 3).foreach { i =>
        val Some(Inline(position, size)) = got(i)
        assert(position % 64 == 0 && bytes.slice(position.toInt, (position + size).toInt).toSeq == values(i).toSeq)
      }
    }
  }

  test("managed blobs (flag 16384) are read, not written; data overlays (64) are refused by name") {
    import sparklance.format.table.FeatureFlags
    FeatureFlags.check("t", 1, 16384, 16384, forWrite = false)
    val write = intercept[UnsupportedFeatureException](FeatureFlags.check("t", 1, 16384, 16384, forWrite = true))
    assert(write.getMessage.contains("16384 (managed blobs)") && write.getMessage.contains("for writing"))
    val overlay = intercept[UnsupportedFeatureException](FeatureFlags.check("t", 1, 64, 64, forWrite = false))
    assert(overlay.getMessage.contains("64 (data overlay files)"))
  }

  test("local storage opens external objects by file: URI only") {
    val dir = Files.createTempDirectory("blob-location")
    val file = dir.resolve("x.bin")
    Files.write(file, Array.fill[Byte](7)(42))
    val in = LocalStorage.openExternal(file.toUri.toString)
    try assert(in.length == 7 && in.read(2, 3).toSeq == Seq[Byte](42, 42, 42)) finally in.close()
    assert(intercept[UnsupportedFeatureException](LocalStorage.openExternal("s3://bucket/x.bin")).getMessage.contains("s3://bucket/x.bin"))
    assert(intercept[UnsupportedFeatureException](LocalStorage.openExternal("x.bin")).getMessage.contains("'x.bin'"))
  }
}
