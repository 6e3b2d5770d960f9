package sparklance.format.file.v2_1

import java.nio.charset.StandardCharsets.UTF_8
import sparklance.format.file.BlobDescriptors

/**
 * A 2.2 blob v2 descriptor as its variable packed struct stores it: kind (u8), position (u64),
 * size (u64), blob id (u32), then the URI as a u32 length and its UTF-8 bytes.
 */
private[v2_1] object BlobDescriptorsV2 {
  private val FixedBytes = 1 + 8 + 8 + 4 + 4

  def parse(data: Array[Byte], from: Int, to: Int, out: BlobDescriptors, row: Int, ctx: Ctx): Unit = {
    if (to - from < FixedBytes) throw ctx.corrupt(s"${to - from} bytes, a descriptor needs at least $FixedBytes")
    out.valid(row) = true
    out.kind(row) = data(from)
    out.position(row) = Bytes.i64(data, from + 1)
    out.size(row) = Bytes.i64(data, from + 9)
    out.blobId(row) = Bytes.i32(data, from + 17)
    val uriLength = Bytes.u32(data, from + 21)
    if (uriLength != to - from - FixedBytes) throw ctx.corrupt(s"a URI of $uriLength bytes in ${to - from - FixedBytes}")
    out.uri(row) = new String(data, from + FixedBytes, uriLength.toInt, UTF_8)
  }
}
