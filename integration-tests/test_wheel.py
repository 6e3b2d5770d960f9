"""The wheel of ./dev/wheel, as a user gets it: pip-installed into a fresh virtual environment and
run outside the repository with the README's Python quickstart and a MERGE."""
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import sparklance

REPO = Path(__file__).resolve().parents[1]

# Settings of this repository's environment that would leak it into the user's one.
_FOREIGN_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SPARK_HOME", "PYSPARK_PYTHON",
                "PYSPARK_DRIVER_PYTHON", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")

# Run after the quickstart, in the same script: where sparklance came from, its versions, a MERGE,
# and the table as Spark and pylance then see it. The last line printed is the JSON the test reads.
CHECKS = '''
import importlib.metadata, json, sys
spark.sql("""MERGE INTO lance.db.people t
  USING (SELECT * FROM VALUES (2L, 'Grace Hopper', 46), (200L, 'Alan', 41) AS s(id, name, age)) s
  ON t.id = s.id
  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
merged = lance.dataset(WAREHOUSE + "/db/people.lance").to_table().sort_by("id")
print(json.dumps({
    "file": sparklance.__file__, "sys_path": sys.path, "jar": sparklance.jar_path(),
    "version": sparklance.__version__, "dist_version": importlib.metadata.version("sparklance"),
    "spark_rows": spark.table("lance.db.people").count(),
    "pylance": [merged.column(c).to_pylist() for c in ("id", "name", "age")],
}))
'''


def _jar_version(jar):
    """Implementation-Version from the manifest of `jar` (a path or the jar's bytes)."""
    with zipfile.ZipFile(io.BytesIO(jar) if isinstance(jar, bytes) else jar) as z:
        manifest = z.read("META-INF/MANIFEST.MF").decode()
    return re.search(r"^Implementation-Version: *(\S+)", manifest, re.MULTILINE).group(1)


def _readme_quickstart():
    """The code block of the README's "Quickstart" / "Python" section."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## Quickstart\n", 1)[1].split("\n### Python\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def _run(args, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_package_carries_its_jars_version():
    assert sparklance.__version__ == _jar_version(sparklance.jar_path())


def test_the_wheel_runs_the_quickstart_in_a_fresh_environment(tmp_path):
    dist, venv, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    # ./dev/wheel's own build step, after the set-up the test run had: a wheel left in dist/ by an
    # earlier ./dev/wheel may be older than the code under test.
    _run([str(REPO / "dev" / "build-wheel"), str(dist)])
    wheels = os.listdir(dist)
    with zipfile.ZipFile(dist / wheels[0]) as wheel:
        version = _jar_version(wheel.read("sparklance/jars/sparklance.jar"))
    assert wheels == [f"sparklance-{version}-py3-none-any.whl"]

    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
    _run([sys.executable, "-m", "venv", str(venv)], env=env)
    python = str(venv / "bin" / "python")
    # The constraints pin pyspark, pylance and pyarrow to this repository's versions, which pip
    # then takes from its cache instead of downloading them again.
    _run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
          "-c", str(REPO / "dev" / "requirements.txt"), str(dist / wheels[0]), "pylance"], env=env)

    warehouse = str(work / "wh")
    quickstart = _readme_quickstart()
    assert quickstart.count('"/tmp/wh') == 2, quickstart
    script = work / "quickstart.py"
    work.mkdir()
    script.write_text(quickstart.replace('"/tmp/wh', f'"{warehouse}') + f"WAREHOUSE = {warehouse!r}\n" + CHECKS)
    done = _run([python, str(script)], cwd=work, env=env, timeout=600)
    *shown, last = done.stdout.splitlines()
    out = json.loads(last)

    assert Path(out["file"]).is_relative_to(venv), out["file"]
    assert Path(out["jar"]).is_relative_to(venv), out["jar"]
    assert not [p for p in out["sys_path"] if p and Path(p).resolve().is_relative_to(REPO)], out["sys_path"]
    assert out["version"] == out["dist_version"] == version == _jar_version(out["jar"])
    # The quickstart's show() of the rows with age > 40 printed Grace's row.
    assert [line for line in shown if re.fullmatch(r"\|\s*2\|\s*Grace\|\s*45\|", line)], shown
    ids = [1, 2] + list(range(3, 100)) + [200]
    names = ["Ada", "Grace Hopper"] + [f"user_{i}" for i in range(3, 100)] + ["Alan"]
    ages = [36, 46] + [i % 80 for i in range(3, 100)] + [41]
    assert out["spark_rows"] == len(ids)
    assert out["pylance"] == [ids, names, ages]


def test_the_connect_extra_pins_the_client_versions_the_tests_use():
    import tomllib
    extra = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())["project"]["optional-dependencies"]["connect"]
    tested = {}
    for line in (REPO / "dev" / "requirements.txt").read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            tested[name.lower()] = version
    pinned = {n.lower(): v for n, _, v in (r.partition("==") for r in extra) if v}
    assert pinned and all(tested.get(n) == v for n, v in pinned.items()), (pinned, tested)
    assert set(pinned) >= {"protobuf", "grpcio", "grpcio-status"}
    # pandas: the tests run pandas 2; pyspark's own extra would take pandas 3.
    assert "pandas>=2.2,<3" in extra and "pandas<3" in (REPO / "dev" / "requirements.txt").read_text()
    assert any(r.startswith("pyspark[connect]") for r in extra)
