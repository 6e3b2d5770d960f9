package sparklance.format.commit

import java.nio.file.Files
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.TxnAlreadyAppliedException
import sparklance.format.io.LocalStorage
import sparklance.format.table.{Dataset, LanceSchema}

/** Idempotent writers' markers: the manifest watermark, the transaction walk without it, and the committer's duplicate check. */
class AppTxnLookupSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  private def newTable(path: String = Files.createTempDirectory("txn").resolve("t.lance").toString): Dataset = {
    val ds = new Dataset(LocalStorage, path)
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema))
    ds
  }
  private def marker(app: String, v: Long) = Some(TxnMarker(app, v, TxnMarker.Kind.Write))

  test("the watermark names the newest version; without it the transactions are read back") {
    val ds = newTable()
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Nil), appTxn = marker("a", 3))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Nil), appTxn = marker("b", 9))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Nil))
    val latest = ds.snapshot()
    assert(latest.manifest.getTableMetadataMap.asScala.keySet == Set(TxnMarker.watermarkKey("a"), TxnMarker.watermarkKey("b")))
    assert(latest.manifest.getTableMetadataMap.get(TxnMarker.watermarkKey("a")).startsWith("3@2@"))
    assert(AppTxnLookup.lastVersion(ds, "a", latest).contains(3L) && AppTxnLookup.lastVersion(ds, "b", latest).contains(9L))
    assert(AppTxnLookup.lastVersion(ds, "c", latest).isEmpty)
    // A writer that replaced the table metadata: the walk finds the markers in the transactions.
    new Committer(ds).commit(Some(latest), Operation.UpdateConfig(Map.empty, Set.empty, Map.empty,
      Set(TxnMarker.watermarkKey("a"), TxnMarker.watermarkKey("b"))))
    assert(AppTxnLookup.lastVersion(ds, "a", ds.snapshot()).contains(3L))
    assert(AppTxnLookup.lastVersion(ds, "b", ds.snapshot()).exists(TxnMarker("b", 9, TxnMarker.Kind.Write).coveredBy))
    assert(!AppTxnLookup.lastVersion(ds, "b", ds.snapshot()).exists(TxnMarker("b", 10, TxnMarker.Kind.Write).coveredBy))
  }

  test("what the walk remembered is dropped when the table at the path is a new one") {
    val dir = Files.createTempDirectory("txn")
    val path = dir.resolve("t.lance").toString
    val ds = newTable(path)
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Nil),
      properties = TxnMarker("w", 5, TxnMarker.Kind.Write).properties) // a marker without a watermark
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Nil))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Nil))
    assert(AppTxnLookup.lastVersion(ds, "w", ds.snapshot()).contains(5L))
    LocalStorage.deleteRecursively(path)
    val again = newTable(path)
    for (_ <- 0 until 4) new Committer(again).commit(Some(again.snapshot()), Operation.Append(Nil))
    assert(AppTxnLookup.lastVersion(again, "w", again.snapshot()).isEmpty)
  }

  test("a commit that lost the race to the same application's transaction is refused, not rebased") {
    val ds = newTable()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Append(Nil), appTxn = marker("s", 4))
    val versions = ds.versions
    val e = intercept[TxnAlreadyAppliedException](new Committer(ds).commit(Some(read), Operation.Append(Nil), appTxn = marker("s", 4)))
    assert(e.committedVersion == 2 && e.committedTxnVersion == 4 && ds.versions == versions)
    intercept[TxnAlreadyAppliedException](new Committer(ds).commit(Some(read), Operation.Append(Nil), appTxn = marker("s", 3)))
    // A later transaction of it, or another application, rebases as usual.
    assert(new Committer(ds).commit(Some(read), Operation.Append(Nil), appTxn = marker("s", 5)).version == 3)
    assert(new Committer(ds).commit(Some(read), Operation.Append(Nil), appTxn = marker("t", 4)).version == 4)
  }
}
