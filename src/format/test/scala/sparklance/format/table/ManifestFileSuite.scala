package sparklance.format.table

import com.google.protobuf.{ByteString, UnknownFieldSet}
import java.nio.{ByteBuffer, ByteOrder}
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.CorruptFileException
import sparklance.format.proto.TableProtos.{DataFragment, Manifest}
import sparklance.format.proto.TransactionProtos.Transaction

class ManifestFileSuite extends AnyFunSuite {
  private def manifest(version: Long) = Manifest.newBuilder().setVersion(version)
    .addFragments(DataFragment.newBuilder().setId(3).setPhysicalRows(10)).setMaxFragmentId(3).build()

  test("round trip keeps the manifest, the index section and the transaction offset") {
    val index = Array[Byte](1, 2, 3, 4, 5)
    val txn = Transaction.newBuilder().setReadVersion(4).setUuid("u").build()
    val bytes = ManifestFile.encode(manifest(5), Some(index), Some(txn))
    val decoded = ManifestFile.decode("m", bytes)
    assert(decoded.manifest.getVersion == 5)
    assert(decoded.manifest.getFragments(0).getPhysicalRows == 10)
    assert(decoded.indexSection.get.toSeq == index.toSeq)
    // The transaction section is a u32 length and the Transaction message at the recorded offset.
    val at = decoded.manifest.getTransactionSection.toInt
    val len = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getInt(at)
    assert(Transaction.parseFrom(bytes.slice(at + 4, at + 4 + len)) == txn)
    // 16-byte tail: manifest position, version 0.2, magic.
    val tail = ByteBuffer.wrap(bytes, bytes.length - 16, 16).order(ByteOrder.LITTLE_ENDIAN)
    tail.getLong()
    assert(tail.getShort() == 0 && tail.getShort() == 2)
    assert(new String(bytes.takeRight(4), "US-ASCII") == "LANC")
  }

  test("unknown fields survive a read-modify-write") {
    val unknown = UnknownFieldSet.newBuilder()
      .addField(999, UnknownFieldSet.Field.newBuilder().addLengthDelimited(ByteString.copyFromUtf8("future")).build()).build()
    val m = manifest(1).toBuilder.setUnknownFields(unknown).build()
    val again = ManifestFile.decode("m", ManifestFile.encode(m, None, None)).manifest.toBuilder.setVersion(2).build()
    val reread = ManifestFile.decode("m", ManifestFile.encode(again, None, None)).manifest
    assert(reread.getUnknownFields.getField(999).getLengthDelimitedList.get(0).toStringUtf8 == "future")
  }

  test("truncated or damaged manifests fail with CorruptFileException") {
    val good = ManifestFile.encode(manifest(1), None, None)
    intercept[CorruptFileException](ManifestFile.decode("m", good.take(10)))
    intercept[CorruptFileException](ManifestFile.decode("m", good.dropRight(1)))
    intercept[CorruptFileException](ManifestFile.decode("m", good.drop(3)))
    val badMagic = good.clone(); badMagic(badMagic.length - 1) = 'X'
    intercept[CorruptFileException](ManifestFile.decode("m", badMagic))
    val badBody = good.clone(); (4 until badBody.length - 16).foreach(i => badBody(i) = 0xFF.toByte)
    intercept[CorruptFileException](ManifestFile.decode("m", badBody))
  }
}
