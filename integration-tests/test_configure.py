"""sparklance.configure: the warehouse and spark.jars it sets on a SparkSession builder."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import warnings

import lance
import pytest
from pyspark.sql import SparkSession

import sparklance

# A catalog name of these tests' own: configure also registers the catalog on a session running in
# this process (the shared `spark` fixture's, when other modules run first).
NAME = "cfg"
WAREHOUSE = f"spark.sql.catalog.{NAME}.warehouse"


def _options(builder):
    return builder._options


@pytest.mark.parametrize("uri", ["hdfs://nn:8020/wh", "s3a://bucket/wh", "abfss://c@acct.dfs.core.windows.net/wh",
                                 "file:///tmp/wh", "file:/tmp/wh", "viewfs://cluster/wh"])
def test_uris_are_kept_as_given(uri):
    assert _options(sparklance.configure(SparkSession.builder, uri, name=NAME))[WAREHOUSE] == uri


def test_local_paths_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _options(sparklance.configure(SparkSession.builder, "wh", name=NAME))[WAREHOUSE] == str(tmp_path.resolve() / "wh")
    assert _options(sparklance.configure(SparkSession.builder, tmp_path / "x", name=NAME))[WAREHOUSE] == str(tmp_path.resolve() / "x")
    home = _options(sparklance.configure(SparkSession.builder, "~/wh", name=NAME))[WAREHOUSE]
    assert home == str(Path(os.path.expanduser("~/wh")).resolve())
    # One letter before the colon is a Windows drive, not a URI scheme.
    assert _options(sparklance.configure(SparkSession.builder, "C:wh", name=NAME))[WAREHOUSE] == str(tmp_path.resolve() / "C:wh")


def test_the_jar_is_added_to_the_jars_already_set():
    jar = sparklance.jar_path()
    builder = SparkSession.builder.config("spark.jars", "/opt/a.jar, /opt/b.jar")
    sparklance.configure(builder, "hdfs://nn:8020/wh", name=NAME)
    assert _options(builder)["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{jar}"
    sparklance.configure(builder, "hdfs://nn:8020/wh", name="other")
    assert _options(builder)["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{jar}"
    assert _options(sparklance.configure(SparkSession.builder, "/tmp/wh", name=NAME))["spark.jars"] == jar


# Run in a process of its own: a JVM reads spark.jars and spark.jars.packages only at launch, and
# this test process already runs one. The CTAS calls a class of the user's jar and one of the
# user's package in the rows it writes into a sparklance table.
CHILD = '''
import json, sys
from pyspark.sql import SparkSession
import sparklance

warehouse, user_jar, repo, ivy = sys.argv[1:]
builder = (SparkSession.builder.master("local[2]")
           .config("spark.jars", user_jar)
           .config("spark.jars.packages", "org.sparklance.test:marker:1.0")
           .config("spark.jars.repositories", repo)
           .config("spark.jars.ivy", ivy))
spark = sparklance.configure(builder, warehouse).getOrCreate()
spark.sql("CREATE NAMESPACE lance.db")
spark.sql("""CREATE TABLE lance.db.t AS SELECT id,
    reflect('org.sparklance.test.FromJar', 'tag', CAST(id AS STRING)) AS from_jar,
    reflect('org.sparklance.test.FromPackage', 'tag', CAST(id AS STRING)) AS from_package
  FROM range(3)""")
print(json.dumps({
    "jars": spark.sparkContext._jsc.sc().listJars().mkString(",").split(","),
    "rows": [list(r) for r in spark.table("lance.db.t").orderBy("id").collect()],
}))
'''


def _class_jar(tmp_path, name, jar):
    """`jar` holding the class org.sparklance.test.<name>, whose static tag(s) returns "<name>:<s>"."""
    source = tmp_path / "src" / f"{name}.java"
    source.parent.mkdir(exist_ok=True)
    source.write_text(f"package org.sparklance.test; public class {name} "
                      f'{{ public static String tag(String s) {{ return "{name}:" + s; }} }}')
    subprocess.run(["javac", "--release", "17", "-d", str(tmp_path / "classes"), str(source)], check=True)
    jar.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(jar, "w") as z:
        z.write(tmp_path / "classes" / "org" / "sparklance" / "test" / f"{name}.class",
                f"org/sparklance/test/{name}.class")
    return jar


def test_the_users_jars_and_packages_are_kept(tmp_path):
    builder = SparkSession.builder.config("spark.jars.packages", "org.example:a:1.0,org.example:b:2.0")
    assert _options(sparklance.configure(builder, "/tmp/wh", name=NAME))["spark.jars.packages"] == "org.example:a:1.0,org.example:b:2.0"

    user_jar = _class_jar(tmp_path, "FromJar", tmp_path / "user.jar")
    # A one-artifact Maven repository: org.sparklance.test:marker:1.0.
    artifact = tmp_path / "repo" / "org" / "sparklance" / "test" / "marker" / "1.0"
    _class_jar(tmp_path, "FromPackage", artifact / "marker-1.0.jar")
    (artifact / "marker-1.0.pom").write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>org.sparklance.test</groupId><artifactId>marker</artifactId><version>1.0</version></project>")
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "wh"), str(user_jar),
                           (tmp_path / "repo").as_uri(), str(tmp_path / "ivy")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["rows"] == [[i, f"FromJar:{i}", f"FromPackage:{i}"] for i in range(3)]
    # The jars SparkContext ships to executors. PySpark 4.3 replaces the list spark-submit built
    # from spark.jars and the resolved packages by the builder's spark.jars, so the package's jar
    # is not among them (see docs/configuration.md): it is on the driver's class path, which serves local mode.
    shipped = {j.rsplit("/", 1)[1] for j in out["jars"]}
    assert {"sparklance.jar", "user.jar"} <= shipped, out["jars"]


def test_configure_on_a_running_session_registers_the_catalog_now(spark, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fixture's session has the jar and the extension
        sparklance.configure(SparkSession.builder, tmp_path / "late", name="late")
    spark.sql("CREATE NAMESPACE late.db")
    spark.sql("CREATE TABLE late.db.t AS SELECT id FROM range(3)")
    assert lance.dataset(str(tmp_path / "late" / "db" / "t.lance")).count_rows() == 3


# A notebook's Spark, started before sparklance.configure. Without the jar: a JVM launched by
# PySpark with no SparkContext, the state after spark.stop() and, as far as configure can tell, the
# same as under a running session (the JVM's classpath is what counts) at a fraction of the start-up
# time; configure must refuse it. With the jar but without the extension: a session, for which
# configure warns and registers the catalog, which then works.
RUNNING = """
import sys, warnings
from pyspark import SparkContext
from pyspark.sql import SparkSession
import sparklance
warehouse, with_jar = sys.argv[1], sys.argv[2] == "jar"
if not with_jar:
    SparkContext._ensure_initialized()
    try:
        sparklance.configure(SparkSession.builder, warehouse)
        print("NOT REFUSED")
    except sparklance.JarNotLoadedError as e:
        print("REFUSED", str(e).replace("\\n", " "))
    sys.exit(0)
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.jars", sparklance.jar_path()).getOrCreate())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sparklance.configure(SparkSession.builder, warehouse)
print("WARNED", [str(w.message) for w in caught if issubclass(w.category, sparklance.ExtensionMissingWarning)])
spark.sql("CREATE NAMESPACE lance.db")
spark.sql("CREATE TABLE lance.db.t AS SELECT id FROM range(3)")
print("ROWS", spark.table("lance.db.t").count())
"""


def test_configure_on_a_running_session_without_the_jar_or_the_extension(tmp_path):
    children = {kind: subprocess.Popen([sys.executable, "-c", RUNNING, str(tmp_path / kind), kind],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
                for kind in ("jar", "nojar")}
    out = {}
    for kind, child in children.items():
        stdout, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stdout + stderr
        out[kind] = stdout
    refused = [line for line in out["nojar"].splitlines() if "REFUSED" in line]
    assert len(refused) == 1 and refused[0].startswith("REFUSED"), out["nojar"]
    assert "Restart the Python process" in refused[0] and sparklance.jar_path() in refused[0]
    warned = next(line for line in out["jar"].splitlines() if line.startswith("WARNED"))
    assert sparklance.EXTENSIONS_CLASS in warned and "rewrite whole rows" in warned and "blob" in warned, warned
    assert "ROWS 3" in out["jar"], out["jar"]
