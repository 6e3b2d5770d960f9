package sparklance.spark

import java.net.URI
import java.nio.file.Paths
import org.apache.spark.sql.connector.catalog.Identifier
import sparklance.format.io.Storage

/**
 * A table named by its location instead of a name in the catalog: ``lance.`/data/t.lance` `` or
 * ``lance.`s3a://bucket/t.lance` `` in SQL, or the path given to `format("lance")`, as Delta and
 * Iceberg name tables by path. Only an identifier without a namespace whose name is an absolute
 * path or a URI names one: a table or namespace name of the catalog never holds a '/'.
 */
object TablePath {
  def of(ident: Identifier): Option[String] =
    if (ident.namespace().nonEmpty) None else absolute(ident.name())

  /** The location `name` gives, absolute and normalized, or None if it is neither an absolute path nor a URI. */
  def absolute(name: String): Option[String] = Storage.scheme(name) match {
    case Some("file") => Some(Paths.get(URI.create(name)).toAbsolutePath.normalize().toString)
    case Some(_) => Some(name.stripSuffix("/"))
    case None if name.startsWith("/") => Some(Paths.get(name).normalize().toString)
    case None => None
  }

  /** `location` as the reader and writer options give it: a relative local path is taken from the working directory. */
  def fromOption(location: String): String =
    absolute(location).getOrElse(Paths.get(location).toAbsolutePath.normalize().toString)

  /** `location` as one part of a multi-part name in SQL: between backquotes, a backquote doubled. */
  def quoted(location: String): String = "`" + location.replace("`", "``") + "`"
}
