package sparklance.format.file.v2_0

import com.github.luben.zstd.{Zstd, ZstdException}
import net.jpountz.lz4.LZ4Exception
import sparklance.format.file.Lz4
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}

/** Decompression of a `Flat` buffer that carries `compression` (§2.3): one block per buffer. */
private[v2_0] object Codecs {
  private val ZstdMagic = 0xfd2fb528

  def decompress(scheme: String, src: ByteSlice, path: String, where: => String): ByteSlice =
    if (src.length == 0) src
    else scheme match {
      case "zstd" => zstd(src, path, where)
      case "lz4" => lz4(src, path, where)
      case other => throw new UnsupportedFeatureException(s"$where of $path uses compression scheme '$other', which is not supported")
    }

  private def intLE(s: ByteSlice, at: Int): Int =
    (s.array(s.offset + at) & 0xff) | (s.array(s.offset + at + 1) & 0xff) << 8 |
      (s.array(s.offset + at + 2) & 0xff) << 16 | (s.array(s.offset + at + 3) & 0xff) << 24

  private def sizeOf(n: Long, path: String, where: => String): Int =
    if (n < 0 || n > Int.MaxValue - 64) throw new CorruptFileException(path, s"$where: implausible uncompressed size $n")
    else n.toInt

  // pylance prefixes the frame with its u64 uncompressed size; a bare frame (told apart by the
  // zstd magic) is read too, sized from its header.
  private def zstd(src: ByteSlice, path: String, where: => String): ByteSlice = {
    val bare = src.length >= 4 && intLE(src, 0) == ZstdMagic
    if (!bare && src.length < 8) throw new CorruptFileException(path, s"$where: zstd buffer of ${src.length} bytes is too short")
    val frameStart = if (bare) 0 else 8
    val size =
      if (bare) sizeOf(Zstd.getFrameContentSize(src.array, src.offset, src.length), path, where)
      else sizeOf((intLE(src, 0) & 0xffffffffL) | (intLE(src, 4).toLong << 32), path, where)
    val out = new Array[Byte](size)
    val n =
      try Zstd.decompressByteArray(out, 0, size, src.array, src.offset + frameStart, src.length - frameStart)
      catch { case e: ZstdException => throw new CorruptFileException(path, s"$where: zstd data is damaged", e) }
    if (Zstd.isError(n)) throw new CorruptFileException(path, s"$where: zstd data is damaged (${Zstd.getErrorName(n)})")
    if (n != size) throw new CorruptFileException(path, s"$where: zstd data holds $n bytes, its header says $size")
    ByteSlice(out, 0, size)
  }

  private def lz4(src: ByteSlice, path: String, where: => String): ByteSlice = {
    if (src.length < 4) throw new CorruptFileException(path, s"$where: lz4 buffer of ${src.length} bytes is too short")
    val size = sizeOf(intLE(src, 0) & 0xffffffffL, path, where)
    val out = new Array[Byte](size)
    val n =
      try Lz4.decompressor.decompress(src.array, src.offset + 4, src.length - 4, out, 0, size)
      catch { case e: LZ4Exception => throw new CorruptFileException(path, s"$where: lz4 data is damaged", e) }
    if (n != size) throw new CorruptFileException(path, s"$where: lz4 data holds $n bytes, its header says $size")
    ByteSlice(out, 0, size)
  }
}
