package sparklance.spark.streaming

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.streaming.{CompositeReadLimit, ReadLimit, ReadMaxFiles, ReadMaxRows}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.spark.LanceDataSource

/**
 * The read options of a stream of a Lance table (`spark.readStream.option(...)`), checked when the
 * query starts; a bad value is an IllegalArgumentException naming the option (LANCE_INVALID_OPTION
 * once converted). Names follow Delta's source.
 */
final case class LanceSourceOptions(start: SourceStart, maxFilesPerTrigger: Option[Int], maxRowsPerTrigger: Option[Long],
    skipChangeCommits: Boolean, readChangeFeed: Boolean) {
  /** A micro-batch's limit (`getDefaultReadLimit`): the ones given, else Delta's default of files. */
  def readLimit: ReadLimit = maxFilesPerTrigger.map(ReadLimit.maxFiles).toSeq ++ maxRowsPerTrigger.map(ReadLimit.maxRows) match {
    case Seq() => ReadLimit.maxFiles(LanceSourceOptions.DefaultMaxFilesPerTrigger)
    case Seq(one) => one
    case both => ReadLimit.compositeLimit(both.toArray)
  }
}

object LanceSourceOptions {
  val StartingVersion = "startingVersion"
  val StartingTimestamp = "startingTimestamp"
  val MaxFilesPerTrigger = "maxFilesPerTrigger"
  val MaxRowsPerTrigger = "maxRowsPerTrigger"
  val SkipChangeCommits = "skipChangeCommits"
  val ReadChangeFeed = "readChangeFeed"
  /** Fragments per micro-batch when neither limit is given (Delta's default of files per trigger). */
  val DefaultMaxFilesPerTrigger = 1000

  /** The most fragments and rows `limit` lets a micro-batch read (Long.MaxValue: no limit). */
  def bounds(limit: ReadLimit): (Long, Long) = limit match {
    case f: ReadMaxFiles => (f.maxFiles.toLong, Long.MaxValue)
    case r: ReadMaxRows => (Long.MaxValue, r.maxRows)
    case c: CompositeReadLimit =>
      c.getReadLimits.map(bounds).foldLeft((Long.MaxValue, Long.MaxValue)) { case ((f, r), (f2, r2)) => (f min f2, r min r2) }
    case _ => (Long.MaxValue, Long.MaxValue)
  }

  /** Options of a batch read that pick one version; a stream reads every new version instead. */
  private val BatchOnly = Seq(LanceDataSource.VersionAsOf, LanceDataSource.TimestampAsOf, LanceDataSource.Tag)

  def parse(options: CaseInsensitiveStringMap, session: SparkSession = SparkSession.active): LanceSourceOptions = {
    def option(key: String): Option[String] = Option(options.get(key)).map(_.trim).filter(_.nonEmpty)
    def bad(key: String, why: String) = new IllegalArgumentException(s"Option $key: '${options.get(key)}' $why")
    BatchOnly.find(k => option(k).isDefined).foreach { k =>
      throw new IllegalArgumentException(s"Option $k: a stream reads the versions committed from where it starts on; " +
        s"give $StartingVersion or $StartingTimestamp instead")
    }
    val start = (option(StartingVersion), option(StartingTimestamp)) match {
      case (Some(_), Some(_)) =>
        throw new IllegalArgumentException(s"Options $StartingVersion and $StartingTimestamp: give one of them only")
      case (Some(v), None) if v.equalsIgnoreCase("latest") => SourceStart.Latest
      case (Some(v), None) => SourceStart.Version(v.toLongOption.filter(_ >= 0).getOrElse(
        throw bad(StartingVersion, "is neither a table version (a number >= 0) nor 'latest'")))
      case (None, Some(t)) => SourceStart.Timestamp(LanceDataSource.micros(session, StartingTimestamp, t), t)
      case (None, None) => SourceStart.InitialSnapshot
    }
    def positive[T](key: String, parse: String => Option[T], ok: T => Boolean): Option[T] = option(key).map { v =>
      parse(v).filter(ok).getOrElse(throw bad(key, "is not a positive whole number"))
    }
    def flag(key: String): Boolean = option(key).fold(false) { v =>
      v.toBooleanOption.getOrElse(throw bad(key, "is neither true nor false"))
    }
    LanceSourceOptions(start,
      positive[Int](MaxFilesPerTrigger, _.toIntOption, _ > 0),
      positive[Long](MaxRowsPerTrigger, _.toLongOption, _ > 0),
      flag(SkipChangeCommits), flag(ReadChangeFeed))
  }
}
