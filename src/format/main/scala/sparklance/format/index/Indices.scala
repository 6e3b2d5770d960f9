package sparklance.format.index

import com.google.protobuf.ByteString
import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.CorruptFileException
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.proto.TableProtos.{IndexMetadata, IndexSection}

/** The index section of a manifest, read and rewritten as far as fragment coverage goes. */
object Indices {
  def parse(section: Option[Array[Byte]], where: String): Seq[IndexMetadata] = section.fold(Seq.empty[IndexMetadata]) { bytes =>
    try IndexSection.parseFrom(bytes).getIndicesList.asScala.toSeq
    catch { case e: com.google.protobuf.InvalidProtocolBufferException => throw new CorruptFileException(where, "undecodable index section", e) }
  }

  def encode(indices: Seq[IndexMetadata]): Array[Byte] = IndexSection.newBuilder().addAllIndices(indices.asJava).build().toByteArray

  def kind(index: IndexMetadata): IndexKind = IndexKind.of(index.getIndexDetails.getTypeUrl)

  /**
   * The fragment ids the index holds rows of (it may name fragments that no longer exist); None
   * for indices written before Lance recorded coverage, which may hold rows of any fragment.
   */
  def coverage(index: IndexMetadata): Option[RoaringBitmap] =
    if (index.getFragmentBitmap.isEmpty) None else Some(PortableBitmaps.fromBytes(index.getFragmentBitmap.toByteArray))

  /**
   * The fragment ids any of `segments` (of one index) holds rows of; a segment without recorded
   * coverage counts as covering every fragment of `tableFragments`.
   */
  def coverage(segments: Seq[IndexMetadata], tableFragments: => Iterable[Long]): RoaringBitmap = {
    val covered = new RoaringBitmap()
    segments.foreach(s => coverage(s).fold(tableFragments.foreach(id => covered.add(id.toInt)))(covered.or))
    covered
  }

  def withCoverage(index: IndexMetadata, fragments: RoaringBitmap): IndexMetadata =
    index.toBuilder.setFragmentBitmap(ByteString.copyFrom(PortableBitmaps.toBytes(fragments))).build()

  /** The name of the index's directory under `_indices/`: its uuid, lowercase and hyphenated. */
  def directory(index: IndexMetadata): String = {
    val b = java.nio.ByteBuffer.wrap(index.getUuid.getUuid.toByteArray)
    new java.util.UUID(b.getLong, b.getLong).toString
  }

  /** The index's type as Lance names its details message: ZoneMap, BTree, Bitmap, Inverted, Vector... */
  def typeName(index: IndexMetadata): String =
    index.getIndexDetails.getTypeUrl.split('/').last.split('.').last.stripSuffix("IndexDetails")

  /** A readable label for errors and reports: the name and the type. */
  def describe(index: IndexMetadata): String = s"'${index.getName}' (${typeName(index)})"
}
