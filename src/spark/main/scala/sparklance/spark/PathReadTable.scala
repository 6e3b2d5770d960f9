package sparklance.spark

import java.util
import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * What `spark.read.format("lance").load(path)` and `df.write.format("lance").save(path)` get from
 * [[LanceDataSource]]: the table at `location` for reading, or nothing if there is none yet.
 *
 * It never offers writes. Spark hands a V2 source only two save modes (append and overwrite) and
 * refuses the others, but takes the V1 path, which hands over every mode, when the table cannot be
 * written; [[LanceDataSource]] then writes through the catalog with the semantics of each mode.
 */
final class PathReadTable(location: String, table: Option[LanceTable]) extends Table with SupportsRead
    with SupportsMetadataColumns {
  override def name(): String = table.fold(location)(_.name())
  override def columns(): Array[Column] = table.fold(Array.empty[Column])(_.columns())
  override def properties(): util.Map[String, String] = table.fold[util.Map[String, String]](new util.HashMap[String, String]())(_.properties())
  // Without BATCH_READ, Spark reads through LanceDataSource's V1 relation, which fails naming the path.
  override def capabilities(): util.Set[TableCapability] =
    if (table.isDefined) util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ) else util.EnumSet.noneOf(classOf[TableCapability])
  override def metadataColumns(): Array[MetadataColumn] = table.fold(Array.empty[MetadataColumn])(_.metadataColumns())
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder =
    table.getOrElse(throw new IllegalStateException(s"No Lance table at $location")).newScanBuilder(options)
}
