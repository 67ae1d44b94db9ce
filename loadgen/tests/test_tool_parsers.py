"""The tool adapters parse real outputs of ab, wrk and httperf (saved under fixtures/, some from the seeds)."""

import shutil
from pathlib import Path

import pytest

from harness.tools import LoadSpec, ToolFailed
from harness.tools.ab import PER_REQUEST, SLOWEST, ApacheBench
from harness.tools.adapter import ParseError
from harness.tools.httperf import Httperf
from harness.tools.output import Errors, merge
from harness.tools.wrk import Wrk

FIXTURES = Path(__file__).parent / "fixtures"


def ab(name):
    folder = FIXTURES / name
    if folder.is_dir():
        return ApacheBench().parse((folder / "output.txt").read_text(), folder)
    return ApacheBench().parse((FIXTURES / name).read_text(), FIXTURES)


def fixture(name):
    return (FIXTURES / name).read_text()


def test_ab_success_with_percentile_csv():
    m = ab("ab_ok")
    assert m.requests == 2000
    assert m.errors == Errors()
    assert m.rps == 15133.40
    assert m.duration_s == pytest.approx(2000 / 15133.40, rel=0.01)
    # from the -e CSV at microseconds, not the text table's whole milliseconds (3, 5, 6, 6)
    assert (m.latency_ms["p50"], m.latency_ms["p90"], m.latency_ms["p99"]) == (2.946, 4.510, 5.604)
    assert m.latency_ms["max"] == 5.777
    assert len(m.quantiles) == 100 and m.quantiles[0][0] == 1.0


def test_ab_distribution_is_its_hundred_slices_at_microseconds():
    """ab -e's 100 rows make the attempt's histogram: its p50/p90/p99 are the CSV's to the µs; without its -g file
    p99.9 lies somewhere in the top slice with the max, so neither one process nor a merge of processes claims one."""
    m = ab("ab_ok")
    d = m.distribution
    assert d.count == 2000
    assert [d.percentile_ms(p) for p in (1, 50, 90, 99, 100)] == [2.38, 2.946, 4.510, 5.604, 5.777]
    assert "p99.9" not in m.latency_ms
    merged = merge([m, ab("ab_ok")])
    assert merged.distribution.count == 4000 and "p99.9" not in merged.latency_ms
    assert (merged.latency_ms["p50"], merged.latency_ms["p99"], merged.latency_ms["max"]) == (2.946, 5.604, 5.777)


def test_ab_p99_9_is_its_top_slice_request_by_request_from_its_per_request_file(tmp_path):
    """ab -n 3000 -c 50 -e -g against the calibrated server (200 µs burned a request, 1 in 300 held 20 ms more): its
    top 1 % (the 30 requests from -e's row 99, 11.400 ms, up) are read from -g's whole ms, 11 to 31 ms, so p99.9
    (rank 2,997) is 31 ms where -e alone put it anywhere from 11.400 to the max, 31.381. The file is then cut to those
    30 requests, and reads the same again."""
    folder = tmp_path / "ab"
    shutil.copytree(FIXTURES / "ab_per_request", folder)
    output = (folder / "output.txt").read_text()
    m = ApacheBench().parse(output, folder)
    assert m.requests == 3000 and m.distribution.count == 3000
    assert (m.latency_ms["p50"], m.latency_ms["p99"], m.latency_ms["max"]) == (11.284, 11.4, 31.381)
    assert m.latency_ms["p99.9"] == 31.0
    assert m.distribution.percentile_ms(99.5) == 12.0  # rank 2,985: the 15th of the slice, -g's 12 ms
    assert not (folder / PER_REQUEST).exists()
    kept = (folder / SLOWEST).read_text().splitlines()
    assert kept[0].startswith("starttime") and len(kept) == 1 + 30
    assert sorted(int(line.split("\t")[4]) for line in kept[1:]) == [11] * 8 + [12] * 8 + [13] * 4 + [31] * 10
    assert ApacheBench().parse(output, folder).latency_ms == m.latency_ms


def test_ab_parts_merge_their_p99_9_only_where_every_part_has_one(tmp_path):
    parts = []
    for n in (1, 2):
        shutil.copytree(FIXTURES / "ab_per_request", tmp_path / str(n))
        parts.append(ApacheBench().parse((tmp_path / str(n) / "output.txt").read_text(), tmp_path / str(n)))
    merged = merge(parts)
    assert merged.distribution.count == 6000 and merged.latency_ms["p99.9"] == 31.0
    assert "p99.9" not in merge([parts[0], ab("ab_ok")]).latency_ms  # ab_ok has no -g file: its top slice is unknown


def test_ab_percentiles_past_the_end_of_a_small_run_are_its_slowest_request():
    # a real high-compute attempt: 40 requests; ab's CSV gives 0.257 ms for row 99 (index 40 of 40) beside 386.495
    m = ab("ab_small_n")
    assert m.requests == 40
    assert m.latency_ms["p99"] == m.latency_ms["max"] == 386.495
    assert [ms for _, ms in m.quantiles] == sorted(ms for _, ms in m.quantiles)  # never falls
    # read off the histogram, which keeps values above 32 ms to 4 significant digits (here 16 µs): 353.589 -> 353.599
    assert (
        m.latency_ms["p50"] == pytest.approx(dict(m.quantiles)[50.0], rel=1 / 16384) and m.latency_ms["p50"] < 386.495
    )


def test_ab_keepalive():
    m = ab("ab_keepalive")
    assert m.requests == 5000 and m.errors.total == 0 and m.rps == 58876.17


def test_ab_non_2xx_are_errors():
    m = ab("ab_non2xx")
    assert m.requests == 500
    assert m.errors.non_2xx == 500
    assert m.good_requests == 0


def test_ab_refused_prints_a_rate_over_nothing_but_we_count_no_good_request():
    m = ab("ab_refused")
    assert m.rps == 47058.82  # what ab claims
    assert m.errors.read == 100 and m.errors.other == 50
    assert m.good_requests == 0


def test_ab_timeout_aborts_without_summary():
    with pytest.raises(ToolFailed, match="timeout specified has expired"):
        ab("ab_timeout")


def test_seed_ab_long_runs_with_failures():
    node = ab("seed001_ab_long_node.txt")
    assert node.requests == 1_000_000
    assert node.errors.length == 23791 and node.errors.total == 23791
    assert node.latency_ms == {"p50": 1584, "p90": 2550, "p99": 8599, "max": 17130, "mean": 1893.179}
    akka = ab("seed001_ab_long_akka.txt")
    assert akka.errors == Errors(read=35959, length=833207, other=35962, non_2xx=437974)
    assert akka.good_requests == 0
    assert akka.rps == 1149.15


def test_ab_command_caps_concurrency_and_keeps_flags(tmp_path):
    spec = LoadSpec(
        url="http://127.0.0.1:8080/x",
        concurrency=50,
        requests=10,
        keepalive=True,
        timeout_s=10000,
        continue_on_error=True,
    )
    argv = ApacheBench().command(spec, tmp_path)
    assert argv[:8] == ["ab", "-k", "-r", "-s", "10000", "-n", "10", "-c"]
    assert argv[8] == "10"
    assert argv[-1] == "http://127.0.0.1:8080/x"


def test_wrk_json_report():
    m = Wrk().parse(fixture("wrk_ok.txt"), FIXTURES)
    assert m.requests == 55038
    assert m.duration_s == pytest.approx(2.003196)
    assert m.rps == pytest.approx(55038 / 2.003196)
    assert m.latency_ms["max"] == pytest.approx(5.172)
    assert m.latency_ms["p50"] == pytest.approx(0.335, abs=0.01)
    assert len(m.quantiles) == 100
    assert m.distribution is None  # written by the report script before it wrote spectrum_us


def test_wrk_distribution_from_its_spectrum():
    """wrk -t 1 -c 8 -d 1s --latency -s harness/tools/wrk_report.lua against nginx on loopback: the histogram made of
    the script's 1,098 levels gives wrk's own percentiles (its text table: 336 µs, 2.80 ms, 5.74 ms) and p99.9."""
    m = Wrk().parse(fixture("wrk_spectrum.txt"), FIXTURES)
    assert m.requests == 15032 and m.distribution.count == 15032
    assert m.latency_ms == {"p50": 0.336, "p90": 2.803, "p99": 5.739, "p99.9": 8.132, "max": 9.131, "mean": 0.954}
    assert dict(m.quantiles)[99.0] == m.latency_ms["p99"]


def test_wrk_non_2xx():
    m = Wrk().parse(fixture("wrk_non2xx.txt"), FIXTURES)
    assert m.errors.non_2xx == m.requests == 90661
    assert m.good_requests == 0


def test_wrk_refused_connection_has_no_summary():
    with pytest.raises(ToolFailed, match="Connection refused"):
        Wrk().parse(fixture("wrk_connect_errors.txt"), FIXTURES)


def test_wrk_silent_server_gives_zero_requests():
    m = Wrk().parse(fixture("wrk_timeout.txt"), FIXTURES)
    assert m.requests == 0 and m.rps == 0


def test_wrk_text_output_from_seeds():
    play = Wrk().parse(fixture("seed002_wrk_play_c128_timeouts.txt"), FIXTURES)
    assert play.requests == 5751009 and play.duration_s == 120
    assert play.errors == Errors(timeout=30)
    assert play.latency_ms["p99"] == pytest.approx(921.08) and play.latency_ms["max"] == pytest.approx(1840)
    spray = Wrk().parse(fixture("seed002_wrk_spray_c128_non2xx.txt"), FIXTURES)
    assert spray.errors == Errors(non_2xx=2) and spray.rps == 45976.17
    hello = Wrk().parse(fixture("seed003_wrk_akka_hello.txt"), FIXTURES)
    assert hello.requests == 1248199 and hello.latency_ms["p50"] is None
    assert hello.latency_ms["mean"] == pytest.approx(3.88)


def test_wrk_command_never_asks_more_threads_than_connections(tmp_path):
    argv = Wrk().command(LoadSpec(url="http://127.0.0.1:1/", concurrency=1, threads=8, duration_s=2), tmp_path)
    assert argv[:5] == ["wrk", "-t", "1", "-c", "1"]


def test_httperf_success():
    m = Httperf().parse(fixture("httperf_ok.txt"), FIXTURES)
    assert m.requests == 10000 and m.duration_s == 0.540 and m.errors.total == 0
    assert m.rps == pytest.approx(10000 / 0.540)
    assert m.latency_ms["mean"] == 1.0 and m.latency_ms["p99"] is None


def test_httperf_errors():
    assert Httperf().parse(fixture("httperf_non2xx.txt"), FIXTURES).errors == Errors(non_2xx=1000)
    refused = Httperf().parse(fixture("httperf_refused.txt"), FIXTURES)
    assert refused.errors == Errors(connect=10) and refused.requests == 0
    assert Httperf().parse(fixture("httperf_timeout.txt"), FIXTURES).errors == Errors(timeout=5)


def test_httperf_stays_under_select_limit():
    assert Httperf().max_connections_per_process(20000) < 1024


def test_wrk_refuses_a_timeout_it_cannot_allocate_a_histogram_for(tmp_path):
    with pytest.raises(ValueError, match="above 600 s"):
        Wrk().command(LoadSpec(url="http://127.0.0.1:1/", concurrency=1, duration_s=1, timeout_s=10000), tmp_path)


def test_a_summary_missing_a_line_the_parser_reads_is_a_parse_error_naming_it(tmp_path):
    """An ab summary without its "Time taken for tests" line (an ab the parser did not foresee), or an httperf one
    without its "Total: connections ... replies ..." line: ParseError naming the line, not AttributeError on None."""
    cut = "\n".join(line for line in fixture("ab_ok/output.txt").splitlines() if not line.startswith("Time taken"))
    with pytest.raises(ParseError, match=r"^ab's summary lacks a line matching \^Time taken for tests:"):
        ApacheBench().parse(cut, tmp_path)
    odd = fixture("httperf_ok.txt").replace(" test-duration ", " duration ")
    with pytest.raises(ParseError, match=r"^httperf's summary lacks a line matching Total: connections"):
        Httperf().parse(odd, tmp_path)


@pytest.mark.parametrize("tool", [ApacheBench(), Wrk(), Httperf()])
def test_a_load_without_connections_is_refused_naming_the_tool(tool, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:1/hello", requests=100, duration_s=1.0, rate=10.0, calls_per_connection=1)
    with pytest.raises(ValueError, match=f"^{tool.name} needs a concurrency"):
        tool.command(spec, tmp_path)
