package sparklance.format.index

import com.google.protobuf.ByteString
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.UnsupportedFeatureException
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.proto.TableProtos.IndexMetadata

/** Lance's view of index coverage under a fragment reuse index (the cases pylance's tables do not easily show). */
class FragmentReuseSuite extends AnyFunSuite {
  private def bitmap(ids: Int*): RoaringBitmap = RoaringBitmap.bitmapOf(ids: _*)
  private def index(name: String, builtOn: Long, covers: Int*): IndexMetadata = IndexMetadata.newBuilder().setName(name)
    .setDatasetVersion(builtOn).setFragmentBitmap(ByteString.copyFrom(PortableBitmaps.toBytes(bitmap(covers: _*)))).build()

  // Fragments 0-2 became 6 at version 4; 3-5 became 7 and 8 at version 9.
  private val reuse = FragmentReuse.Known(Seq(
    FragmentReuse.Compaction(4, Seq(FragmentReuse.Group(Seq(0, 1, 2), Seq(6)))),
    FragmentReuse.Compaction(9, Seq(FragmentReuse.Group(Seq(3, 4, 5), Seq(7, 8))))))

  test("a stored bitmap is seen with each whole group replaced, and trimmed after that; the stored one is left as it was") {
    val stored = bitmap(0, 1, 2, 3, 4, 5, 10)
    assert(reuse.remap(stored) == bitmap(6, 7, 8, 10))
    assert(reuse.without(stored, Seq(7, 10)) == bitmap(6, 8))
    assert(stored == bitmap(0, 1, 2, 3, 4, 5, 10))
    assert(FragmentReuse.Absent.without(stored, Seq(0)) == bitmap(1, 2, 3, 4, 5, 10) && stored.contains(0))
  }

  test("a bitmap holding part of a group is refused, as Lance refuses it") {
    val e = intercept[UnsupportedFeatureException](reuse.remap(bitmap(0, 1)))
    assert(e.getMessage.contains("0, 1 but not all of 0, 1, 2"), e.getMessage)
  }

  test("an index finds the rows of the compactions after it was built only through the row maps") {
    assert(reuse.unmapped(index("a", 2)) == Set(6L, 7L, 8L))
    assert(reuse.unmapped(index("b", 5)) == Set(7L, 8L))
    assert(reuse.unmapped(index("c", 9)) == Set.empty)
    assert(reuse.unmapped(index(FragmentReuse.IndexName, 1)) == Set.empty)
  }

  test("a reuse index of an unread format keeps its fragments out of skipping, and refuses trimming only them") {
    val opaque = FragmentReuse.Opaque(index(FragmentReuse.IndexName, 9, 7, 8).toBuilder.setIndexVersion(1).build())
    assert(opaque.unmapped(index("a", 20)) == Set(7L, 8L))
    assert(opaque.without(bitmap(1, 2, 7), Seq(2)) == bitmap(1, 7))
    val e = intercept[UnsupportedFeatureException](opaque.without(bitmap(1, 2, 7), Seq(7)))
    assert(e.getMessage.contains("index_version 1"), e.getMessage)
  }
}
