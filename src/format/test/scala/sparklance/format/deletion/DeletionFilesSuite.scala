package sparklance.format.deletion

import java.nio.file.Files
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.CorruptFileException
import sparklance.format.io.{ForwardingStorage, InputFile, LocalStorage, Storage}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.proto.TableProtos.DeletionFile.DeletionFileType
import sparklance.format.table.BasePaths

class DeletionFilesSuite extends AnyFunSuite {
  private def roundTrip(offsets: Seq[Int], expected: DeletionFileType): Unit = {
    val dir = Files.createTempDirectory("del").toString
    val bitmap = RoaringBitmap.bitmapOf(offsets: _*)
    val file = DeletionFiles.write(LocalStorage, dir, 7, 3, bitmap)
    assert(file.getFileType == expected)
    assert(file.getNumDeletedRows == offsets.distinct.size)
    val fragment = DataFragment.newBuilder().setId(7).setDeletionFile(file).build()
    assert(DeletionFiles.read(LocalStorage, BasePaths.own(dir), fragment) == bitmap)
    val name = DeletionFiles.relativePath(7, file)
    assert(name.startsWith("_deletions/7-3-") && name.endsWith(if (expected == DeletionFileType.BITMAP) ".bin" else ".arrow"))
  }

  test("small sets are Arrow IPC files, large ones Roaring bitmaps") {
    roundTrip(Seq(0, 5, 9, 100000), DeletionFileType.ARROW_ARRAY)
    roundTrip(0 until 4999, DeletionFileType.ARROW_ARRAY)
    roundTrip((0 until 20000).filter(_ % 3 != 0), DeletionFileType.BITMAP)
  }

  test("a deletion file is read once in a process; every reader gets a copy of its own to change") {
    val dir = Files.createTempDirectory("del").toString
    val bitmap = RoaringBitmap.bitmapOf(3, 30, 300)
    val fragment = DataFragment.newBuilder().setId(2).setDeletionFile(DeletionFiles.write(LocalStorage, dir, 2, 1, bitmap)).build()
    var opened = 0
    val storage = new ForwardingStorage() {
      override def openInput(path: String): InputFile = { opened += 1; super.openInput(path) }
    }
    val first = DeletionFiles.read(storage, BasePaths.own(dir), fragment)
    first.add(7)
    assert(DeletionFiles.read(storage, BasePaths.own(dir), fragment) == bitmap)
    assert(opened == 1)
  }

  test("a fragment without a deletion file has no deleted rows") {
    assert(DeletionFiles.read(LocalStorage, BasePaths.own("/nonexistent"), DataFragment.newBuilder().setId(1).build()).isEmpty)
  }

  test("a deletion file whose count disagrees with the manifest is corrupt") {
    val dir = Files.createTempDirectory("del").toString
    val file = DeletionFiles.write(LocalStorage, dir, 1, 1, RoaringBitmap.bitmapOf(1, 2, 3))
    val wrong = DataFragment.newBuilder().setId(1).setDeletionFile(file.toBuilder.setNumDeletedRows(4)).build()
    intercept[CorruptFileException](DeletionFiles.read(LocalStorage, BasePaths.own(dir), wrong))
    Files.write(java.nio.file.Paths.get(Storage.join(dir, DeletionFiles.relativePath(1, file))), Array[Byte](1, 2, 3))
    intercept[CorruptFileException](DeletionFiles.read(LocalStorage, BasePaths.own(dir),
      DataFragment.newBuilder().setId(1).setDeletionFile(file).build()))
  }

  test("deleted rows come from the manifest when it counts them, else from the file") {
    val dir = Files.createTempDirectory("del").toString
    val file = DeletionFiles.write(LocalStorage, dir, 1, 1, RoaringBitmap.bitmapOf(1, 2, 3))
    val unknown = DataFragment.newBuilder().setId(1).setDeletionFile(file.toBuilder.setNumDeletedRows(0)).build()
    assert(DeletionFiles.deletedRows(LocalStorage, BasePaths.own(dir), unknown) == 3)
    // A known count is metadata only: the file is not opened (here it no longer exists).
    Files.delete(java.nio.file.Paths.get(Storage.join(dir, DeletionFiles.relativePath(1, file))))
    assert(DeletionFiles.deletedRows(LocalStorage, BasePaths.own(dir), DataFragment.newBuilder().setId(1).setDeletionFile(file).build()) == 3)
    assert(DeletionFiles.deletedRows(LocalStorage, BasePaths.own(dir), DataFragment.newBuilder().setId(1).build()) == 0)
  }
}
