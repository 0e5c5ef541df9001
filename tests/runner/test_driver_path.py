"""Which pyspark a driver imports: spark-submit's zips, or the pyspark this Python has installed
where SPARK_HOME is that install (runner/job_runner.py, `installed_over_zips`)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from runner.job_runner import installed_over_zips

VERSION = b'__version__: str = "4.3.0"\n'
PY4J = b"__version__ = '0.10.9.9'\n"


def package(root: Path, name: str, version: bytes) -> Path:
    """An installed package `name` under `root` (a site-packages), with its version.py."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "version.py").write_bytes(version)
    return folder


def zipped(path: Path, name: str, version: bytes) -> str:
    """A zip at `path` holding package `name` as spark-submit's zips hold it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name}/__init__.py", "")
        archive.writestr(f"{name}/version.py", version)
    return str(path)


def pip_install(tmp_path: Path, zip_version: bytes = VERSION, py4j_version: bytes = PY4J):
    """A site-packages with pyspark and py4j as pip installs them: the zips in pyspark's own
    python/lib/ folder (SPARK_HOME). Returns (site, the pyspark zip, the py4j zip)."""
    site = tmp_path / "site-packages"
    pyspark = package(site, "pyspark", VERSION)
    package(site, "py4j", PY4J)
    lib = pyspark / "python" / "lib"
    return (
        str(site),
        zipped(lib / "pyspark.zip", "pyspark", zip_version),
        zipped(lib / "py4j-0.10.9.9-src.zip", "py4j", py4j_version),
    )


def test_the_zips_of_the_installed_pyspark_give_way_to_its_modules(tmp_path: Path) -> None:
    site, pyspark_zip, py4j_zip = pip_install(tmp_path)
    path = ["/jobs/runner", pyspark_zip, py4j_zip, "/usr/lib/python3.11", site]
    assert installed_over_zips(path) == ["/jobs/runner", "/usr/lib/python3.11", site]


def test_a_zip_of_another_release_than_the_installed_one_stays(tmp_path: Path) -> None:
    site, pyspark_zip, py4j_zip = pip_install(tmp_path, zip_version=b'__version__ = "4.2.0"\n')
    path = [pyspark_zip, py4j_zip, site]
    assert installed_over_zips(path) == [pyspark_zip, site], "py4j is the same: it gives way"
    site, pyspark_zip, py4j_zip = pip_install(tmp_path / "b", py4j_version=b"'0.10.9.7'\n")
    assert installed_over_zips([pyspark_zip, py4j_zip, site]) == [py4j_zip, site]


def test_a_spark_distribution_s_zips_stay_though_pyspark_is_installed(tmp_path: Path) -> None:
    site, _, _ = pip_install(tmp_path)
    home = tmp_path / "spark-4.3.0-bin-hadoop3" / "python" / "lib"
    path = [zipped(home / "pyspark.zip", "pyspark", VERSION)]
    path += [zipped(home / "py4j-0.10.9.9-src.zip", "py4j", PY4J), site]
    assert installed_over_zips(list(path)) == path  # a copy: the list given is never edited


def test_without_an_installed_pyspark_the_zips_stay(tmp_path: Path) -> None:
    home = tmp_path / "spark" / "python" / "lib"
    path = [zipped(home / "pyspark.zip", "pyspark", VERSION), str(tmp_path / "empty")]
    assert installed_over_zips(list(path)) == path  # a copy: the list given is never edited
    assert installed_over_zips(["/a", "/b"]) == ["/a", "/b"]


def test_a_zip_that_cannot_be_read_stays(tmp_path: Path) -> None:
    site, pyspark_zip, py4j_zip = pip_install(tmp_path)
    Path(pyspark_zip).write_bytes(b"not a zip")
    assert installed_over_zips([pyspark_zip, py4j_zip, site]) == [pyspark_zip, site]


def test_another_spark_s_zips_later_on_the_path_keep_pip_s_zips_first(tmp_path: Path) -> None:
    """PYTHONPATH comes after spark-submit's zips: a profile's old Spark must not win once
    pip's zips are gone (found by a hostile review)."""
    site, pyspark_zip, py4j_zip = pip_install(tmp_path)
    old = tmp_path / "spark-3.5.1-bin-hadoop3" / "python" / "lib"
    other_pyspark = zipped(old / "pyspark.zip", "pyspark", b'__version__ = "3.5.1"\n')
    other_py4j = zipped(old / "py4j-0.10.9.7-src.zip", "py4j", b"'0.10.9.7'\n")
    path = [pyspark_zip, py4j_zip, other_pyspark, other_py4j, site]
    assert installed_over_zips(list(path)) == path  # a copy: the list given is never edited
    assert installed_over_zips([pyspark_zip, py4j_zip, other_py4j, site]) == [
        pyspark_zip, py4j_zip, other_py4j, site
    ]  # fmt: skip


def test_a_linked_spark_home_is_the_install_it_links_to(tmp_path: Path) -> None:
    site, pyspark_zip, py4j_zip = pip_install(tmp_path)
    home = tmp_path / "spark-home"
    home.symlink_to(Path(site) / "pyspark")
    linked = [str(home / "python" / "lib" / Path(z).name) for z in (pyspark_zip, py4j_zip)]
    assert installed_over_zips([*linked, site]) == [site]
