"""Shared pieces of the benchmarks: timing with warm-up and medians, and the Spark session."""
import atexit
import shutil
import tempfile
import statistics
import time
from pathlib import Path


def scratch_dir(prefix):
    """A temporary directory for a benchmark's tables, removed when the benchmark exits (runs of
    10M rows leave gigabytes, which filled the disk of a machine running tests after them)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, True)
    return path


def timed(fn, prepare=None, runs=5, warmup=1):
    """Median wall time of `fn` over `runs` timed calls after `warmup` untimed ones.
    `prepare` runs before every call, untimed (e.g. restoring the table)."""
    samples = []
    for i in range(warmup + runs):
        if prepare:
            prepare()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        if i >= warmup:
            samples.append(elapsed)
    return statistics.median(samples), samples


def timed_in_turns(fns, runs=5, warmup=1):
    """{name: median wall time} of the callables in `fns` ({name: fn}), which take turns call by
    call: `warmup` untimed rounds, then `runs` timed ones. Timing one system's runs after the
    other's handed the later one a JIT the earlier had warmed up (a range query's first runs took
    twice the time of its tenth), and a busy machine slows the systems alike this way."""
    samples = {name: [] for name in fns}
    for i in range(warmup + runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - start
            if i >= warmup:
                samples[name].append(elapsed)
    return {name: statistics.median(xs) for name, xs in samples.items()}


def restore(base: Path, work: Path):
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work)


def spark_session(warehouse, with_delta=False, memory="8g", jars=()):
    from pyspark.sql import SparkSession
    import sparklance
    builder = (SparkSession.builder.master("local[2]").appName("sparklance-bench")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", memory)
               .config("spark.sql.shuffle.partitions", "8"))
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    if with_delta:
        from delta import configure_spark_with_delta_pip
        builder = (builder
                   .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                   .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
        builder = configure_spark_with_delta_pip(builder)
    # After Delta's settings: sparklance adds its jar and session extension to theirs.
    builder = sparklance.configure(builder, warehouse=str(warehouse))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def print_table(title, header, rows):
    print(f"\n== {title}")
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for r in [header] + rows:
        print("  ".join(str(x).rjust(w) for x, w in zip(r, widths)))


class PeakMemory:
    """Peak memory per operation, in MiB: the Spark JVM's old generation (what survives young
    collections: the memory an operation holds on to, not its garbage), through the JVM's memory
    pool beans, and the Python process's resident set, where pylance runs (VmHWM, reset through
    /proc/self/clear_refs)."""

    def __init__(self, jvm):
        beans = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
        self.heap = [p for p in beans if str(p.getType()) == "Heap memory"]
        self.pools = [p for p in self.heap if "Old Gen" in str(p.getName())]

    def reset(self):
        for p in self.heap:
            p.resetPeakUsage()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    def read(self):
        with open("/proc/self/status") as f:
            hwm = next(line for line in f if line.startswith("VmHWM"))
        return {"jvm old gen": sum(p.getPeakUsage().getUsed() for p in self.pools) // 2**20,
                # Every heap pool's own peak, added: an upper bound of the heap in use at any moment.
                "jvm heap": sum(p.getPeakUsage().getUsed() for p in self.heap) // 2**20,
                "python rss": int(hwm.split()[1]) // 1024}
