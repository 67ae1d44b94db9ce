"""akka and pekko are the same server on the renamed library: the test keeps them from drifting apart."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def as_akka(text: str) -> str:
    """Pekko's names mapped back to Akka's: packages, config roots, class and server names."""
    return text.replace("org.apache.pekko", "akka").replace("pekko", "akka").replace("Pekko", "Akka")


def without_default_port(text: str) -> str:
    return re.sub(r"new ServerEnv\(\d+\)", "new ServerEnv(PORT)", text)


@pytest.mark.parametrize(
    "akka_file, pekko_file",
    [
        ("src/main/scala/bench/AkkaServer.scala", "src/main/scala/bench/PekkoServer.scala"),
        ("src/main/resources/application.conf", "src/main/resources/application.conf"),
    ],
)
def test_pekko_is_akka_renamed(akka_file, pekko_file):
    akka = (ROOT / "akka" / akka_file).read_text()
    pekko = (ROOT / "pekko" / pekko_file).read_text()
    assert without_default_port(as_akka(pekko)).splitlines() == without_default_port(akka).splitlines()


def test_the_twins_differ_in_what_they_should():
    akka = (ROOT / "akka/src/main/scala/bench/AkkaServer.scala").read_text()
    pekko = (ROOT / "pekko/src/main/scala/bench/PekkoServer.scala").read_text()
    assert "org.apache.pekko" in pekko and "org.apache.pekko" not in akka
    assert "new ServerEnv(8081)" in akka and "new ServerEnv(8087)" in pekko
