package sparklance.format.file

import net.jpountz.lz4.{LZ4Factory, LZ4SafeDecompressor}

/**
 * The LZ4 block decompressor of both file versions, looked up once: `LZ4Factory.fastestInstance`
 * takes a lock to look at the native library on every call, 1.4% of a scan of LZ4-compressed
 * text that decompressed chunk by chunk. lz4-java's decompressors hold no state, so one serves
 * every thread.
 */
private[file] object Lz4 {
  lazy val decompressor: LZ4SafeDecompressor = LZ4Factory.fastestInstance().safeDecompressor()
}
