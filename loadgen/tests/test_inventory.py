"""Artifact size and lines of code per server, on the repository's own servers and on a made-up one."""

from pathlib import Path

from harness.config.manifest import Server, discover
from harness.servers import inventory


def test_a_shared_folder_counts_each_servers_own_files():
    servers = discover()
    node = [str(p) for p in inventory.source_files(servers["node"], servers)]
    express = [str(p) for p in inventory.source_files(servers["express"], servers)]
    assert "node-server.js" in node and "express-server.js" not in node
    assert "express-server.js" in express and "node-server.js" not in express
    assert "package-lock.json" not in express and not any(p.startswith("node_modules") for p in express)


def test_served_documents_lockfiles_and_build_outputs_are_not_code():
    servers = discover()
    nginx = [str(p) for p in inventory.source_files(servers["nginx"], servers)]
    assert "run.sh" in nginx and "nginx.conf.template" in nginx and not any(p.startswith("static/") for p in nginx)
    rust = [str(p) for p in inventory.source_files(servers["rust"], servers)]
    assert "src/main.rs" in rust and "Cargo.lock" not in rust and "manifest.toml" not in rust
    assert not any(p.startswith("target/") for p in rust)


def test_lines_of_code_by_language():
    servers = discover()
    loc = inventory.lines_of_code(servers["nginx"], servers)
    assert loc["languages"]["configuration"] > 0 and loc["languages"]["Bash"] > 0  # nginx.conf.template, run.sh
    assert loc["code"] == loc["program"] + loc["config"] and loc["tool"].startswith("pygount")
    rust = inventory.lines_of_code(servers["rust"], servers)
    assert rust["languages"]["Rust"] > 100 and rust["program"] >= rust["languages"]["Rust"]


def test_artifact_bytes_files_and_folders(tmp_path: Path):
    (tmp_path / "bin").write_bytes(b"x" * 100)
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "a").write_bytes(b"y" * 20)
    (tmp_path / "static" / "b").write_bytes(b"z" * 3)
    server = Server(name="t", folder=tmp_path, port=1, routes=("id",), run=("./bin",), artifacts=("bin", "static"))
    assert inventory.artifact_bytes(server) == 123
    missing = Server(
        name="t", folder=tmp_path, port=1, routes=("id",), run=("./bin",), artifacts=("bin", "target/x.jar")
    )
    assert inventory.artifact_bytes(missing) is None  # not built: no partial figure
    assert inventory.artifact_bytes(Server(name="t", folder=tmp_path, port=1, routes=("id",), run=("x",))) is None


def test_a_folder_outside_git_is_walked(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("# comment\nprint('hello')\n\nx = 1\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "dep.js").write_text("var a = 1;\n" * 50)
    (tmp_path / "manifest.toml").write_text("[[server]]\n")
    server = Server(name="t", folder=tmp_path, port=1, routes=("id",), run=("python3", "src/main.py"))
    assert [str(p) for p in inventory.source_files(server, {"t": server})] == ["src/main.py"]
    loc = inventory.lines_of_code(server, {"t": server})
    assert loc["code"] == 2 and loc["comments"] == 1 and loc["languages"] == {"Python": 2}
