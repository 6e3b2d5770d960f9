package sparklance.hadoop

import java.io.{EOFException, FileNotFoundException, IOException, ObjectInputStream, ObjectOutputStream, OutputStream}
import java.util.{Locale, UUID}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataInputStream, FileAlreadyExistsException, FileStatus, FileSystem, Options, Path}
import org.apache.hadoop.hdfs.DistributedFileSystem
import org.apache.hadoop.ipc.RemoteException
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.{LanceException, UnsupportedFeatureException}
import sparklance.format.io.{Background, FileEntry, InputFile, LocalStorage, Storage}

/**
 * Storage over Hadoop's `FileSystem` (the client Spark ships): HDFS, and through their connectors
 * S3A, GCS, ABFS. Paths are URIs (`hdfs://nn:8020/warehouse/t.lance`); a path without a scheme is
 * resolved against `fs.defaultFS`. The configuration travels with the storage when it is
 * serialized (to executors), so connector settings and credentials set on the driver apply there.
 *
 * == Put-if-absent, per store ==
 * A Lance commit is the put-if-absent of the next manifest, and two writers racing for one
 * version must not both win. How that is made atomic depends on the store (the scheme of the
 * path), and `sparklance.storage.<scheme>.putIfAbsent` overrides the default with one of the
 * modes below:
 *  - `hdfs`, `viewfs`, `webhdfs`, `swebhdfs` (mode `rename`, the default): the bytes go to a hidden
 *    temporary file next to the target, which is then renamed onto the target without overwrite.
 *    The NameNode checks and renames under its namespace lock, so exactly one racer wins, and a
 *    reader listing `_versions` never sees a half-written manifest (which a direct
 *    `create(overwrite = false)` would expose while it is being written, and would leave behind
 *    if the writer died). Mode `create` writes the target directly with `create(overwrite = false)`,
 *    which on HDFS is also atomic with respect to existence.
 *  - `file` (local, or a locally mounted file system): as [[LocalStorage]], a private temporary
 *    file hard-linked to the target (link creation fails atomically if the name exists).
 *  - Object stores have no atomic rename; they need a conditional PUT:
 *    - S3 (`s3a`): `PutObject` / `CompleteMultipartUpload` with `If-None-Match: *` (412 or 409 for
 *      the loser). Hadoop 3.4.2+ exposes it as the create option
 *      `fs.option.create.conditional.overwrite`; when the connector declares that path capability
 *      (S3A with `fs.s3a.create.conditional.enabled`, the default) the mode is `conditional`
 *      automatically.
 *    - GCS (`gs`): an insert with `ifGenerationMatch=0`, which the GCS connector issues for
 *      `create(overwrite = false)`; ABFS (`abfs`, `abfss`): a create with `If-None-Match: *`, which
 *      the ABFS connector sends for `create(overwrite = false)`. The connectors do not declare a
 *      capability for it, so opt in with `sparklance.storage.gs.putIfAbsent=create` (or `abfss`)
 *      after checking your connector version does so.
 *    - Anything else is refused with an [[UnsupportedFeatureException]] that says what to set,
 *      unless the user opts in to an external lock with `sparklance.storage.commitLock.class`
 *      (mode `lock`, see [[CommitLock]]): the put then checks existence and writes while holding
 *      the lock, which is safe only if every writer of the table uses the same lock.
 */
final class HadoopStorage(conf: Configuration) extends Storage with Serializable {
  private val wrapped = new HadoopStorage.SerializableConfiguration(new Configuration(conf))
  @transient private lazy val lock: Option[CommitLock] =
    Option(wrapped.value.getTrimmed(CommitLock.ClassKey)).filter(_.nonEmpty).map(CommitLock.load)

  /** A copy of the configuration this storage uses. */
  def configuration: Configuration = new Configuration(wrapped.value)

  private def path(p: String): Path = new Path(p)
  private def fs(p: Path): FileSystem = HadoopStorage.fileSystem(p.toUri, wrapped.value, fingerprint)
  /** Identifies the configuration among those file systems are cached for (see [[HadoopStorage.fileSystem]]). */
  @transient private lazy val fingerprint: String = {
    val entries = wrapped.value.iterator().asScala.map(e => e.getKey + "=" + e.getValue).toSeq.sorted
    val digest = java.security.MessageDigest.getInstance("SHA-256")
    entries.foreach(e => digest.update((e + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8)))
    java.util.HexFormat.of().formatHex(digest.digest())
  }
  private def schemeOf(fs: FileSystem): String =
    Option(fs.getUri.getScheme).getOrElse("file").toLowerCase(Locale.ROOT)

  /**
   * `aside`, where the store is remote, opens another stream on the file: bytes prefetched for a
   * reader ([[InputFile.prefetch]]) are fetched through it on a background thread.
   */
  private final class HadoopInputFile(val path: String, val length: Long, in: FSDataInputStream,
      aside: Option[() => FSDataInputStream]) extends InputFile {
    private val prefetches = aside.map(open => new Prefetches((position, n) => {
      val s = open()
      try { val buf = new Array[Byte](n); s.readFully(position, buf); buf } finally s.close()
    }))
    def read(position: Long, len: Int): Array[Byte] = {
      val buf = new Array[Byte](len)
      readInto(position, java.nio.ByteBuffer.wrap(buf))
      buf
    }
    override def prefetch(stream: Int, position: Long, n: Int): Unit =
      if (position >= 0 && position + n <= length) prefetches.foreach(_.start(stream, position, n))
    // Heap buffers are read into directly: readers reuse their arrays, and go through here.
    override def readInto(position: Long, target: java.nio.ByteBuffer): Unit =
      if (prefetches.exists(_.serve(position, target))) ()
      else if (!target.hasArray) super.readInto(position, target)
      else {
        val len = target.remaining
        if (position < 0 || position + len > length)
          throw new EOFException(s"$path: wanted $len bytes at $position, file has $length")
        in.readFully(position, target.array, target.arrayOffset + target.position, len) // positioned read: safe for concurrent callers
        target.position(target.position + len)
      }
    def close(): Unit = try prefetches.foreach(_.close()) finally in.close()
  }

  /**
   * Another stream on a file in an object store, for prefetches. None for local files and HDFS,
   * whose reads answer in milliseconds, and where each stream opened asks the NameNode for its blocks.
   */
  private def aside(f: FileSystem, hp: Path, length: Long): Option[() => FSDataInputStream] =
    if (answersAtOnce(f)) None else Some(() => ofLength(f, hp, length))

  /** A local file system, or HDFS-like (a NameNode); not an object store, where every request waits tens of milliseconds. */
  private def answersAtOnce(f: FileSystem): Boolean = schemeOf(f) == "file" || HadoopStorage.NameNodeSchemes(schemeOf(f))

  // On the fetching threads: a store's requests wait side by side there.
  override def inBackground[T](p: String)(work: () => T): Background[T] =
    if (answersAtOnce(fs(path(p)))) super.inBackground(p)(work) else Prefetches.inBackground(work)

  private def ofLength(f: FileSystem, hp: Path, length: Long): FSDataInputStream =
    HadoopStorage.opened(f.openFile(hp).optLong(Options.OpenFileOptions.FS_OPTION_OPENFILE_LENGTH, length))

  // Opened with openFile: given the status or the length, S3A and ABFS send no HEAD of their own.
  def openInput(p: String): InputFile = {
    val hp = path(p)
    val f = fs(hp)
    val status = f.getFileStatus(hp)
    new HadoopInputFile(p, status.getLen, HadoopStorage.opened(f.openFile(hp).withFileStatus(status)), aside(f, hp, status.getLen))
  }

  override def openInput(p: String, length: Long): InputFile = {
    val hp = path(p)
    val f = fs(hp)
    new HadoopInputFile(p, length, ofLength(f, hp, length), aside(f, hp, length))
  }

  // Every file written is new (a fresh name, or a put-if-absent), so the checks an object store's
  // create makes first (a HEAD and a LIST: is there a directory, or a file above?) are skipped.
  def create(p: String): OutputStream = {
    val hp = path(p)
    HadoopStorage.fast(fs(hp).createFile(hp).overwrite(false)).build() // creates missing parents
  }

  def putIfAbsent(p: String, bytes: Array[Byte]): Boolean = {
    val hp = path(p)
    val f = fs(hp)
    HadoopStorage.modeFor(this, f, hp) match {
      case HadoopStorage.Mode.Local => LocalStorage.putIfAbsent(f.makeQualified(hp).toUri.toString, bytes)
      case HadoopStorage.Mode.Rename => putByRename(f, hp, bytes)
      case HadoopStorage.Mode.Create => putByCreate(f, hp, bytes)
      case HadoopStorage.Mode.Conditional => putConditionally(f, hp, bytes)
      case HadoopStorage.Mode.Lock =>
        val l = lock.getOrElse(throw new LanceException(
          s"sparklance.storage.${schemeOf(f)}.putIfAbsent=lock needs ${CommitLock.ClassKey} to name a lock"))
        l.withLock(f.makeQualified(hp).toString) {
          if (f.exists(hp)) false else putByCreate(f, hp, bytes)
        }
    }
  }

  private def writeNew(f: FileSystem, hp: Path, bytes: Array[Byte]): Unit = {
    val out = HadoopStorage.fast(f.createFile(hp).overwrite(false)).build()
    try out.write(bytes) finally out.close()
  }

  private def putByCreate(f: FileSystem, hp: Path, bytes: Array[Byte]): Boolean =
    try { writeNew(f, hp, bytes); true }
    catch {
      case _: FileAlreadyExistsException => false
      // HDFS: another client (or thread) holds the lease of the same name, still writing it.
      case e: IOException if HadoopStorage.isBeingCreated(e) => false
    }

  private def tempNext(hp: Path): Path = new Path(hp.getParent, s".tmp-${UUID.randomUUID()}.partial")

  private def putByRename(f: FileSystem, hp: Path, bytes: Array[Byte]): Boolean = {
    val tmp = tempNext(hp)
    writeNew(f, tmp, bytes)
    try f match {
      case dfs: DistributedFileSystem =>
        try { dfs.rename(tmp, hp, Options.Rename.NONE); true }
        catch { case _: FileAlreadyExistsException => false }
      case _ =>
        // The two-argument rename refuses an existing target file atomically on a NameNode; it
        // only says false, so tell "lost the race" from other failures by looking.
        if (f.rename(tmp, hp)) true
        else if (f.exists(hp) && f.exists(tmp)) false
        else throw new IOException(s"Cannot rename $tmp to $hp")
    } finally {
      try f.delete(tmp, false) catch { case NonFatal(_) => }
    }
  }

  private def putConditionally(f: FileSystem, hp: Path, bytes: Array[Byte]): Boolean =
    try {
      val out = HadoopStorage.fast(f.createFile(hp).overwrite(false))
        .must(Options.CreateFileOptionKeys.FS_OPTION_CREATE_CONDITIONAL_OVERWRITE, true).build()
      try out.write(bytes) finally out.close() // the conditional PUT happens on close
      true
    } catch {
      case _: FileAlreadyExistsException => false
      case e: IOException if HadoopStorage.isPreconditionFailure(e) => false
    }

  def overwrite(p: String, bytes: Array[Byte]): Unit = {
    val hp = path(p)
    fs(hp) match {
      case dfs: DistributedFileSystem =>
        // Readers of the hint never see it half written: replace it by an atomic rename.
        val tmp = tempNext(hp)
        writeNew(dfs, tmp, bytes)
        try dfs.rename(tmp, hp, Options.Rename.OVERWRITE)
        finally try dfs.delete(tmp, false) catch { case NonFatal(_) => }
      case f =>
        // Object stores publish a PUT atomically on close; elsewhere this is a hint only.
        val out = HadoopStorage.fast(f.createFile(hp).overwrite(true)).build()
        try out.write(bytes) finally out.close()
    }
  }

  def exists(p: String): Boolean = {
    val hp = path(p)
    fs(hp).exists(hp)
  }

  private def children(dir: String): Seq[FileStatus] = {
    val hp = path(dir)
    try fs(hp).listStatus(hp).toSeq
    catch { case _: FileNotFoundException => Seq.empty }
  }

  def list(dir: String): Seq[FileEntry] =
    children(dir).filter(_.isFile).map(s => FileEntry(s.getPath.getName, s.getLen, s.getModificationTime))

  def listDirectories(dir: String): Seq[String] =
    children(dir).filter(_.isDirectory).map(_.getPath.getName)

  def mkdirs(dir: String): Unit = {
    val hp = path(dir)
    if (!fs(hp).mkdirs(hp)) throw new IOException(s"Cannot create directory $dir")
  }

  def delete(p: String): Unit = {
    val hp = path(p)
    fs(hp).delete(hp, false)
  }

  def deleteRecursively(p: String): Unit = {
    val hp = path(p)
    fs(hp).delete(hp, true)
  }

  def rename(from: String, to: String): Unit = {
    val (src, dst) = (path(from), path(to))
    val f = fs(dst)
    if (dst.getParent != null) f.mkdirs(dst.getParent)
    f match {
      case dfs: DistributedFileSystem => dfs.rename(src, dst, Options.Rename.NONE) // atomic, fails if dst exists
      case _ =>
        if (f.exists(dst)) throw new FileAlreadyExistsException(s"Cannot rename $from to $to: the target exists")
        if (!f.rename(src, dst)) throw new IOException(s"Cannot rename $from to $to")
    }
  }

  /** On a local file system and HDFS-like stores (a NameNode renames under its lock); not on object stores. */
  def renamesAtomically(p: String): Boolean = answersAtOnce(fs(path(p)))

  override def toString: String = s"HadoopStorage(fs.defaultFS=${wrapped.value.get("fs.defaultFS")})"
}

object HadoopStorage {
  /** Prefix of a per-scheme put-if-absent mode key: `sparklance.storage.<scheme>.putIfAbsent`. */
  def modeKey(scheme: String): String = s"sparklance.storage.${scheme.toLowerCase(Locale.ROOT)}.putIfAbsent"

  /**
   * A storage for executors and other places that carry the configuration as strings: starts
   * from Hadoop's defaults (core-site.xml and the like on the classpath) and sets `entries` on top.
   * Keys prefixed `spark.hadoop.` (as in a Spark conf) are set without the prefix. One storage
   * per distinct `entries` is kept ([[KeptStorages]] of them, the least recently asked for out
   * first): building one parses Hadoop's default resources, milliseconds of XML that every split a
   * task read paid, a seventh of a scan's samples on S3 (JFR).
   */
  def fromConf(entries: Map[String, String]): HadoopStorage = built.synchronized {
    val known = built.get(entries)
    if (known != null) known
    else {
      val conf = new Configuration()
      entries.foreach { case (k, v) => conf.set(k, v) }
      entries.foreach { case (k, v) if k.startsWith("spark.hadoop.") => conf.set(k.stripPrefix("spark.hadoop."), v); case _ => }
      val storage = new HadoopStorage(conf)
      built.put(entries, storage)
      storage
    }
  }

  private val KeptStorages = 64

  private val built = new java.util.LinkedHashMap[Map[String, String], HadoopStorage](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[Map[String, String], HadoopStorage]): Boolean = size() > KeptStorages
  }

  /**
   * sparklance's own cache of file systems, by store, configuration and user. Hadoop's cache keys
   * on the store and user only, so a file system Spark created first would bring its settings;
   * ours are the user's plus [[Overrides]].
   */
  private val fileSystems = new java.util.concurrent.ConcurrentHashMap[(String, String, String, String), FileSystem]()

  /**
   * Settings sparklance needs whatever the user set. S3A's default input stream in Hadoop 3.5
   * ("analytics") caches objects and their ETags across opens; Lance rewrites a few names in
   * place (a schema-evolving commit's transaction file, a manifest of a table purged and created
   * again), and the stale copy then fails with 412 or reads old bytes. The classic stream reads
   * exactly the ranges asked for, one GET each, and caches nothing.
   */
  private val Overrides = Map("fs.s3a.input.stream.type" -> "classic")

  private def fileSystem(uri: java.net.URI, conf: Configuration, fingerprint: String): FileSystem = {
    val target = if (uri.getScheme == null) FileSystem.getDefaultUri(conf) else uri
    val user = org.apache.hadoop.security.UserGroupInformation.getCurrentUser
    val key = (target.getScheme.toLowerCase(Locale.ROOT), Option(target.getAuthority).getOrElse("").toLowerCase(Locale.ROOT),
      fingerprint, user.toString)
    fileSystems.computeIfAbsent(key, _ => {
      val c = new Configuration(conf)
      Overrides.foreach { case (k, v) => c.set(k, v) }
      user.doAs(new java.security.PrivilegedExceptionAction[FileSystem] {
        def run(): FileSystem = FileSystem.newInstance(target, c)
      })
    })
  }

  /** S3A's option to create without first looking for a directory or a file at or above the path. */
  private val CreatePerformance = "fs.s3a.create.performance"

  private def fast[B <: org.apache.hadoop.fs.FSDataOutputStreamBuilder[_, B]](b: B): B =
    b.recursive().opt(CreatePerformance, true) // opt: a store that does not know it ignores it

  /** A stream read in ranges (the pages a scan needs), not sequentially from the start. */
  private def opened(b: org.apache.hadoop.fs.FutureDataInputStreamBuilder): FSDataInputStream =
    org.apache.hadoop.util.functional.FutureIO.awaitFuture(
      b.opt(Options.OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY, Options.OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_RANDOM).build())

  private[hadoop] sealed trait Mode
  private[hadoop] object Mode {
    case object Local extends Mode
    case object Rename extends Mode
    case object Create extends Mode
    case object Conditional extends Mode
    case object Lock extends Mode
  }

  private val NameNodeSchemes = Set("hdfs", "viewfs", "webhdfs", "swebhdfs")

  private def modeFor(storage: HadoopStorage, f: FileSystem, hp: Path): Mode = {
    val conf = storage.wrapped.value
    val scheme = storage.schemeOf(f)
    Option(conf.getTrimmed(modeKey(scheme))).filter(_.nonEmpty).map(_.toLowerCase(Locale.ROOT)) match {
      case Some("rename") => Mode.Rename
      case Some("create") => Mode.Create
      case Some("conditional") => Mode.Conditional
      case Some("lock") => Mode.Lock
      case Some(other) =>
        throw new LanceException(s"${modeKey(scheme)}=$other: expected one of rename, create, conditional, lock")
      case None =>
        if (scheme == "file") Mode.Local
        else if (NameNodeSchemes(scheme)) Mode.Rename
        else if (conditionalCreate(f, hp)) Mode.Conditional
        else if (storage.lock.isDefined) Mode.Lock
        else throw new UnsupportedFeatureException(
          s"Cannot commit to $hp: the '$scheme' store offers no atomic put-if-absent, and without one two " +
            s"concurrent commits can overwrite each other's manifest. Use a store or connector with a conditional " +
            s"create (S3A in Hadoop 3.4.2+ with fs.s3a.create.conditional.enabled=true sends If-None-Match: *), set " +
            s"${modeKey(scheme)}=create if this connector's create(overwrite=false) is a conditional PUT (GCS: " +
            s"ifGenerationMatch=0, ABFS: If-None-Match: *), or opt in to an external lock that every writer uses " +
            s"with ${CommitLock.ClassKey} (\"jvm\" if one application is the only writer)")
    }
  }

  private def conditionalCreate(f: FileSystem, hp: Path): Boolean =
    try f.hasPathCapability(hp, Options.CreateFileOptionKeys.FS_OPTION_CREATE_CONDITIONAL_OVERWRITE)
    catch { case NonFatal(_) => false }

  /** HDFS refusing a create because another writer is creating the same file right now. */
  private def isBeingCreated(e: IOException): Boolean = e match {
    case r: RemoteException => r.getClassName.endsWith(".AlreadyBeingCreatedException")
    case other => other.getClass.getSimpleName == "AlreadyBeingCreatedException"
  }

  /** A conditional write that lost: S3A's RemoteFileChangedException (HTTP 412/409) and the like. */
  private def isPreconditionFailure(e: IOException): Boolean = {
    val name = e.getClass.getSimpleName
    name == "RemoteFileChangedException" || name == "PreconditionFailedException" ||
      Option(e.getMessage).exists(m => m.contains("412") || m.contains("PreconditionFailed") || m.contains("ConditionalRequestConflict"))
  }

  /** A Configuration that survives Java serialization (it is Writable, not Serializable). */
  private[hadoop] final class SerializableConfiguration(@transient var value: Configuration) extends Serializable {
    private def writeObject(out: ObjectOutputStream): Unit = {
      out.defaultWriteObject()
      value.write(out)
    }
    private def readObject(in: ObjectInputStream): Unit = {
      in.defaultReadObject()
      value = new Configuration(false)
      value.readFields(in)
    }
  }
}
