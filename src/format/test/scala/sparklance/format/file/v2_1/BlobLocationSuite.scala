package sparklance.format.file.v2_1

import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.UnsupportedFeatureException
import sparklance.format.file.{BlobDescriptors, BlobLocation}
import sparklance.format.file.BlobLocation._
import sparklance.format.io.LocalStorage

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
      descriptor(3, 0, 0, 1, "x0.bin"))
    assert(got == Seq(
      Some(Inline(128, 12)),
      Some(Inline(0, 0)),
      Some(Packed(1, 4096, 70000)),
      Some(Dedicated(2, 0, 5 << 20)),
      Some(External("file:///data/x0.bin", 0, None)),
      Some(External("s3://bucket/x1.bin", 0, Some(ByteRange(10, 25)))),
      Some(External("x0.bin", 1, None)),
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
