package sparklance.spark

import java.nio.file.{Files, Path}
import org.apache.hadoop.fs.{Path => HadoopPath}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.Pylance
import sparklance.format.deletion.DeletionFiles
import sparklance.format.index.Indices
import sparklance.format.io.{LocalStorage, Storage}
import sparklance.format.table.Dataset

/**
 * A throwable out of the work after a commit landed (compaction, zone map segments, cleanup): an
 * interrupt, an OutOfMemoryError, a linkage error. The statement's version and every later one
 * keep every file they name, Spark and pylance read the table whole, and only an interrupt may
 * still fail the statement (after it committed), nothing else.
 */
class PostCommitFaultSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val root: Path = Files.createTempDirectory("post-commit-faults")
  private lazy val spark = TestFileSystemCatalog.builder("post-commit-faults", "lance", "inject", classOf[InjectingFileSystem], root)
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.extensions", classOf[LanceSparkSessionExtensions].getName)
    .getOrCreate()

  override def afterAll(): Unit = try spark.stop() finally try LocalStorage.deleteRecursively(root.toString) finally super.afterAll()

  /**
   * A step of the work after a commit, by a file operation it does: the `skip`+1-th the trigger
   * accepts after the statement's commit.
   */
  private final case class Step(name: String, trigger: (InjectingFileSystem.Operation, HadoopPath) => Boolean, skip: Int = 0)
  private val steps = Seq(
    // The first listing after the put is the committer's own look for newer versions.
    Step("maintenance looks at the table", (op, p) => op == InjectingFileSystem.List && p.getName == "_versions", skip = 1),
    Step("a maintenance commit writes its transaction", (op, p) => op == InjectingFileSystem.Create && p.getName.endsWith(".txn")),
    Step("a zone map segment is written", (op, p) => op == InjectingFileSystem.Create && p.getName == "zonemap.lance"),
    Step("cleanup lists the table's branches", (op, p) => op == InjectingFileSystem.List && p.getName == "branches"))

  private val failures: Seq[(String, () => Throwable)] = Seq(
    "an interrupt" -> (() => new InterruptedException("injected: the statement was cancelled")),
    "an OutOfMemoryError" -> (() => new OutOfMemoryError("injected: Java heap space")),
    "a linkage error" -> (() => new NoClassDefFoundError("injected/Missing")))

  private def dataset(table: String) = new Dataset(LocalStorage, root.resolve(s"wh/db/$table.lance").toString)

  /** Every version the table still has names only files that exist. */
  private def assertWhole(table: String): Unit = {
    val ds = dataset(table)
    for (v <- ds.versions) {
      val s = ds.snapshot(Some(v))
      val named = s.fragments.flatMap(_.getFilesList.asScala.map(f => s"data/${f.getPath}")) ++
        s.fragments.filter(_.hasDeletionFile).map(f => DeletionFiles.relativePath(f.getId, f.getDeletionFile)) ++
        Indices.parse(s.file.indexSection, table).map(i => s"_indices/${Indices.directory(i)}")
      val missing = named.filterNot(p => LocalStorage.exists(Storage.join(ds.path, p)))
      assert(missing.isEmpty, s"version $v of $table names files that are gone: ${missing.mkString(", ")}")
    }
  }

  /** (count, sum of v) as pylance reads the latest version. */
  private def pylanceSums(table: String): (Long, Long) = {
    val script = Files.createTempFile(root, "read", ".py")
    Files.writeString(script,
      """import sys, lance
        |t = lance.dataset(sys.argv[1]).to_table(columns=["v"])
        |print(t.num_rows, sum(x for x in t.column("v").to_pylist()))
        |""".stripMargin)
    val Array(n, sum) = Pylance.run(script, dataset(table).path).trim.linesIterator.toSeq.last.split(' ')
    n.toLong -> sum.toLong
  }

  /**
   * Runs `statement` with `failure` thrown at `step` once the statement created `manifests`
   * manifests (its commit); returns whether the injection fired.
   */
  private def inject(statement: String, manifests: Int, step: Step, failure: () => Throwable): Boolean = {
    var skipped = 0
    val trigger = (op: InjectingFileSystem.Operation, p: HadoopPath) => step.trigger(op, p) && { skipped += 1; skipped > step.skip }
    val injection = InjectingFileSystem.Injection(Thread.currentThread(), manifests, trigger, failure)
    InjectingFileSystem.arm(injection)
    val outcome = try { spark.sql(statement); None } catch { case e: Throwable => Some(e) } finally InjectingFileSystem.disarm()
    val interrupted = Thread.interrupted() // the test thread goes on
    outcome.foreach { e =>
      val chain = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).toSeq
      assert(chain.exists(c => c.isInstanceOf[InterruptedException]) || interrupted,
        s"$statement failed after it committed, by ${step.name}: ${chain.mkString(" <- ")}")
    }
    injection.fired
  }

  /** Each statement kind, its i-th statement on table t, and how many manifests its own commit puts. */
  private val statements = Seq(
    ("INSERT", (t: String, i: Int) => s"INSERT INTO lance.db.$t VALUES (${1000 + i}, 'k${i % 3}', 1)", 1),
    ("UPDATE", (t: String, i: Int) => s"UPDATE lance.db.$t SET v = v + 1 WHERE id % 4 = ${i % 4}", 1),
    ("MERGE", (t: String, i: Int) => s"MERGE INTO lance.db.$t d USING (SELECT id, 'k9' AS k FROM range(${i * 3}, ${i * 3 + 6})) s " +
      "ON d.id = s.id WHEN MATCHED THEN UPDATE SET v = d.v + 10, k = s.k WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (s.id + 500, s.k, 0)", 1),
    // A compaction commits a ReserveFragments, then its Rewrite.
    ("CALL compact", (t: String, _: Int) => s"CALL lance.system.compact(table => 'db.$t')", 2))

  /** What `kind`'s i-th statement does to (count, sum of v), from the rows before it, as plain Spark computes it. */
  private def expected(kind: String, table: String, i: Int): (Long, Long) = {
    val rows = spark.table(s"lance.db.$table").selectExpr("id", "v").collect().map(r => r.getLong(0) -> r.getInt(1).toLong)
    val (count, sum) = (rows.length.toLong, rows.map(_._2).sum)
    kind match {
      case "INSERT" => (count + 1, sum + 1)
      case "UPDATE" => (count, sum + rows.count(_._1 % 4 == i % 4))
      case "MERGE" =>
        val source = (i * 3L until i * 3L + 6).toSet
        val matched = rows.count(r => source(r._1))
        val inserted = source.count(id => !rows.exists(_._1 == id + 500) && !rows.exists(_._1 == id))
        (count + inserted, sum + 10L * matched)
      case _ => (count, sum)
    }
  }

  /**
   * A table of 30 rows in three fragments without zone maps, then with a zone map on `k` for what
   * is written next: so the statement's commit leaves fragments to compact, and the compaction
   * writes a zone map segment. For a compaction, two writes of fragments with their segments,
   * which the compaction folds into one in its Rewrite's version: after its commits only the
   * look at the table and the cleanup are left to fail.
   */
  private def table(name: String, kind: String): Unit = {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    spark.sql(s"CREATE TABLE lance.db.$name (id BIGINT NOT NULL, k STRING, v INT) TBLPROPERTIES ('max_rows_per_file' = '10', " +
      "'auto_compact.min_fragments' = '2', 'lance.auto_cleanup.interval' = '1', 'lance.auto_cleanup.retain_versions' = '1000')")
    val rows = "SELECT /*+ COALESCE(1) */ id, concat('k', id % 3), 0 FROM range"
    if (kind == "CALL compact") {
      spark.sql(s"ALTER TABLE lance.db.$name SET TBLPROPERTIES ('zonemap_columns' = 'k')")
      spark.sql(s"INSERT INTO lance.db.$name $rows(0, 20)")
      spark.sql(s"INSERT INTO lance.db.$name $rows(20, 30)")
    } else {
      spark.sql(s"INSERT INTO lance.db.$name $rows(0, 30)")
      spark.sql(s"ALTER TABLE lance.db.$name SET TBLPROPERTIES ('zonemap_columns' = 'k', 'auto_compact' = 'true')")
    }
  }

  /** The steps of the work after `kind`'s commit: a compaction commits no more versions after its Rewrite. */
  private def stepsAfter(kind: String): Seq[Step] =
    if (kind != "CALL compact") steps
    else steps.filterNot(s => s.name == "a maintenance commit writes its transaction" || s.name == "a zone map segment is written")

  for (((kind, statement, manifests), n) <- statements.zipWithIndex)
    test(s"$kind: a throwable after the commit loses nothing the commit published and fails nothing") {
      var fired = Seq.empty[String]
      val steps = stepsAfter(kind)
      for ((step, i) <- steps.zipWithIndex) {
        val name = s"t${n}_$i"
        table(name, kind)
        val want = expected(kind, name, i)
        val (failureName, failure) = failures((n + i) % failures.size)
        if (inject(statement(name, i), manifests, step, failure)) fired :+= step.name
        withClue(s"$kind with $failureName when ${step.name}: ") {
          assertWhole(name)
          val got = spark.sql(s"SELECT count(*), coalesce(sum(v), 0) FROM lance.db.$name").collect().head
          assert((got.getLong(0), got.getLong(1)) == want)
          assert(pylanceSums(name) == want)
        }
      }
      assert(fired.size == steps.size, s"the injections reached only ${fired.mkString(", ")}")
    }
}
