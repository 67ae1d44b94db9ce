"""The calibrated server (calibrated/) on loopback: its known answers, as a plain client sees them. Its settings are
lower bounds by construction (a request is never answered before its service time, a delayed one before its delay;
the CPU it burns is what was asked, less its thread's waits for a core): these tests check them and the exact 1-in-k
pattern, and no speed. Builds the server when `make build` has not (cargo, offline, a few seconds)."""

import json
import re
import selectors
import socket
import subprocess
import time
from pathlib import Path

import pytest
from ports import free_port

from harness.basics.cpus import plan
from harness.basics.httpclient import Connection, get, request_bytes
from harness.basics.sampling import steal_s
from harness.config.manifest import by_default, discover
from harness.conformance import verification as contract
from harness.runtime.local import LocalRuntime, port_owner
from harness.tools import LoadSpec
from harness.tools.ab import PER_REQUEST, SLOWEST, ApacheBench

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

SERVERS = discover()
SERVER = SERVERS["calibrated"]
PORT = free_port()  # the operating system's choice (ports.py)


@pytest.fixture(scope="module")
def server():
    if not (SERVER.folder / SERVER.artifacts[0]).exists():
        subprocess.run(SERVER.build, shell=True, cwd=SERVER.folder, check=True, timeout=600)
    runtime = LocalRuntime()
    running = runtime.start(SERVER, list(plan().server), PORT, {})
    try:
        yield runtime, running
    finally:
        runtime.stop(running)
    assert port_owner("127.0.0.1", PORT) is None, "the server outlived stop()"


def timed_requests(running, path: str, count: int) -> list[tuple[float, dict]]:
    """(seconds, the answer's Calibration header as a dict) of `count` requests, one after the other on one
    connection."""
    out = []
    with Connection(running.host, running.port) as conn:
        for _ in range(count):
            started = time.perf_counter()
            conn.send(request_bytes(path))
            response = conn.read_response()
            took = time.perf_counter() - started
            assert response.status == 200 and response.text == "Hello World"
            note = dict(part.strip().split("=") for part in response.header("calibration").split(";"))
            out.append((took, note))
    return out


def test_it_meets_the_contract_for_the_routes_it_lists(server):
    _, running = server
    report = contract.verify("calibrated", running.host, running.port, SERVER.routes)
    assert report.ok, "\n".join(report.failures)


def test_it_is_left_out_of_every_default_selection_and_never_ranked():
    assert SERVER.has_role("calibrated")
    assert "calibrated" not in [s.name for s in by_default(SERVERS)]
    assert len(by_default(SERVERS)) == len(SERVERS) - 1


def test_every_request_takes_at_least_its_service_time(server):
    _, running = server
    answers = timed_requests(running, "/hello?service_us=3000", 30)
    assert min(took for took, _ in answers) >= 0.003
    assert all(note["delayed"] == "0" for _, note in answers)


def test_exactly_one_request_in_k_is_held_for_the_delay(server):
    _, running = server
    k, service, delay = 5, 0.002, 0.030
    answers = timed_requests(running, f"/hello?service_us=2000&every={k}&delay_us=30000", 40)
    numbers = [int(note["request"]) for _, note in answers]
    assert numbers == list(range(numbers[0], numbers[0] + 40))  # one counter, one step per request
    delayed = [(took, n) for (took, note), n in zip(answers, numbers) if note["delayed"] == "1"]
    assert [n % k for _, n in delayed] == [k - 1] * len(delayed)
    assert len(delayed) == 40 // k
    assert min(took for took, _ in delayed) >= service + delay
    others = sorted(took for took, note in answers if note["delayed"] == "0")
    assert others[0] >= service
    assert others[len(others) // 2] < service + delay  # the others are not held: their median is below the delay


def test_the_cpu_burn_shows_in_the_process_cpu_time(server):
    """A burn spins on the wall clock (a busy loop answers one request every B): the server's threads run for it,
    except while another process held their core, which their run delay counts (/proc schedstat, in ns), or the
    hypervisor ran something else on its vCPU, which neither counts (steal: /proc/stat, in 10 ms ticks)."""
    runtime, running = server
    pids = runtime.pids(running)

    def ran_and_waited_s() -> tuple[float, float]:
        fields = [path.read_text().split() for pid in pids for path in Path(f"/proc/{pid}/task").glob("*/schedstat")]
        return sum(int(f[0]) for f in fields) / 1e9, sum(int(f[1]) for f in fields) / 1e9

    (ran_before, waited_before), stolen_before = ran_and_waited_s(), steal_s(running.cpus) or 0.0
    timed_requests(running, "/hello?burn_us=20000", 20)
    (ran_after, waited_after), stolen_after = ran_and_waited_s(), steal_s(running.cpus) or 0.0
    ran, waited, stolen = ran_after - ran_before, waited_after - waited_before, stolen_after - stolen_before
    # 400 ms asked, less a tenth: a request read while the loop was busy starts its B at the previous answer
    # (burn_deadline), up to a client's turnaround (< 0.1 ms) sooner; the steal is read in whole ticks; and a VM's vCPU
    # can stop without either count seeing it (CI, 2026-11-28: 380.7 ms ran and waited; the probe sees such stops of
    # 7-42 ms). A burn that sleeps instead of spinning would show next to nothing.
    assert ran + waited + stolen >= 0.9 * 20 * 0.020, (ran, waited, stolen)
    assert ran < 2 * 20 * 0.020  # the burn ends at its time: it does not overshoot by a request's worth


def test_the_cap_spaces_requests_at_least_one_slot_apart(server):
    _, running = server
    started = time.perf_counter()
    timed_requests(running, "/hello?cap=200", 21)
    assert time.perf_counter() - started >= 20 / 200  # 21 requests take 20 slots of 5 ms after the first


def test_a_bad_setting_is_answered_400_and_the_server_keeps_serving(server):
    _, running = server
    with Connection(running.host, running.port) as conn:
        conn.send(request_bytes("/hello?burn_us=lots"))
        response = conn.read_response()
    assert response.status == 400 and "burn_us" in response.text
    with Connection(running.host, running.port) as conn:
        conn.send(request_bytes("/id"))
        assert conn.read_response().text == "calibrated"


def test_a_closed_loop_is_served_first_come_first_served(server):
    """The closed loop's arithmetic (c connections burning B each: every answer takes c·B) holds only if the server
    answers requests in the order they arrived. Four connections, each asking again the moment its answer is in:
    first come, first served turns them in a fixed rotation, so each connection's requests are numbered 4 apart.
    (Level-triggered epoll broke the rotation: a connection kept its place in the ready list from the wait before,
    ahead of requests that had come earlier, and answers took 7 burns or 14 where 8 were due, wrk at 8 connections.)"""
    _, running = server
    ask = request_bytes("/hello?burn_us=5000")
    conns = [socket.create_connection((running.host, running.port)) for _ in range(4)]
    for conn in conns:  # each accepted and answered once, one at a time, before the rotation: a connection the server
        conn.sendall(ask)  # has not accepted yet has not "come" (CI saw two served after another's second request)
        answer_of(conn)
    numbers: dict[int, list[int]] = {i: [] for i in range(4)}
    buffers = {i: b"" for i in range(4)}
    with selectors.DefaultSelector() as sel:
        for i, conn in enumerate(conns):
            sel.register(conn, selectors.EVENT_READ, i)
            conn.sendall(ask)
        deadline = time.monotonic() + 30
        while sum(map(len, numbers.values())) < 60 and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                i = key.data
                buffers[i] += conns[i].recv(65536)
                head, sep, body = buffers[i].partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1)) if sep else -1
                if sep and len(body) >= length:
                    numbers[i].append(int(re.search(rb"(?i)calibration: *request=(\d+)", head).group(1)))
                    buffers[i] = body[length:]
                    conns[i].sendall(ask)
    for conn in conns:
        conn.close()
    steps = {i: [b - a for a, b in zip(n[1:], n[2:])] for i, n in numbers.items()}  # after the first lap
    assert all(step == [4] * len(step) for step in steps.values()), numbers


def answer_of(conn: socket.socket) -> bytes:
    """One whole answer read from a blocking connection (its head, and Content-Length bytes of body)."""
    data = b""
    while True:
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep and len(body) >= int(re.search(rb"(?i)content-length: *(\d+)", head).group(1)):
            return data
        chunk = conn.recv(65536)
        assert chunk, "the connection closed before its answer was whole"
        data += chunk


def test_ab_s_p99_9_is_the_known_tail_to_the_ms_from_its_per_request_file(server, tmp_path):
    """ab -g against a tail known by construction: 1,000 requests one after the other, 1 in 200 held 20 ms, so the
    5 slowest are the delayed ones: inside ab's top 1 % slice (the 10 above its row 99, which is a request without
    delay), and p99.9 (rank 999) is one of them: 20 ms, read to the ms from -g. From -e alone it was only known to lie
    between p99 and the max."""
    _, running = server
    ab = ApacheBench()
    spec = LoadSpec(
        url=f"http://{running.host}:{running.port}/hello?every=200&delay_us=20000",
        concurrency=1,
        requests=1000,
        keepalive=True,
    )
    out = subprocess.run(ab.command(spec, tmp_path), capture_output=True, text=True, timeout=60, check=True).stdout
    assert len((tmp_path / PER_REQUEST).read_text().splitlines()) == 1001  # ab's header and a line per request
    m = ab.parse(out, tmp_path)
    assert m.requests == 1000 and m.distribution.count == 1000
    assert m.latency_ms["p99"] < 20
    # -g's file is cut to the slice it was read for, and reads the same again
    assert not (tmp_path / PER_REQUEST).exists()
    kept = (tmp_path / SLOWEST).read_text().splitlines()
    assert kept[0].startswith("starttime") and len(kept) == 1 + 10
    times = [int(line.split("\t")[4]) for line in kept[1:]]  # ttime, slowest last
    assert times == sorted(times) and min(times[-5:]) >= 20  # the five held 20 ms among them
    # p99.9 is rank 999 of 1,000: the second slowest request, to the nearest ms (-g rounds to whole ms). Not bounded
    # above, nor the others below 20 ms: the host stops this VM's CPUs for 1-20 ms at times (a held request read 23 ms
    # in CI on 2 Dec, where this test had asked for at most 21.5)
    assert times[-2] >= 20 and abs(m.latency_ms["p99.9"] - times[-2]) <= 0.5
    assert m.latency_ms["p99.9"] <= m.latency_ms["max"]
    assert ab.parse(out, tmp_path).latency_ms == m.latency_ms


def test_exactly_one_answer_in_m_is_a_503_as_long_as_a_hello(server):
    """The error mode (fail_every): the request numbers 0 modulo m answered 503 "Unavailable" (11 bytes, like "Hello
    World": ab sees no length change), each saying so in its Calibration header; the rest 200."""
    _, running = server
    m = 5
    with Connection(running.host, running.port) as conn:
        answers = []
        for _ in range(40):
            conn.send(request_bytes(f"/hello?fail_every={m}"))
            response = conn.read_response()
            note = dict(part.strip().split("=") for part in response.header("calibration").split(";"))
            answers.append((response.status, response.text, note))
    failed = [(int(note["request"]), text) for status, text, note in answers if status == 503]
    assert all(n % m == 0 and text == "Unavailable" for n, text in failed) and len(failed) == 40 // m
    assert all(note.get("failed") == "1" for status, _, note in answers if status == 503)
    assert all(text == "Hello World" and "failed" not in note for status, text, note in answers if status == 200)


def test_connections_that_came_while_the_server_was_busy_are_served_in_the_order_they_came(server):
    """Three connections open, each sending its request, while another's 30 ms burn runs; that one asks again the
    moment its answer is in. First come, first served: the three first requests come before its second. (Taking one
    waiting connection per pass of the ready list served the 8th of 8 new connections 28 burns late: wrk read 52 ms
    for a 16 ms load.)"""
    _, running = server
    ask = request_bytes("/hello?burn_us=30000")
    first = socket.create_connection((running.host, running.port))
    first.sendall(ask)
    time.sleep(0.005)  # its burn has begun
    later = []
    for _ in range(3):
        conn = socket.create_connection((running.host, running.port))
        conn.sendall(ask)
        later.append(conn)
    number = re.compile(rb"(?i)calibration: *request=(\d+)")
    first_answer = answer_of(first)
    first.sendall(ask)
    again = int(number.search(answer_of(first)).group(1))
    came = [int(number.search(answer_of(conn)).group(1)) for conn in later]
    for conn in (first, *later):
        conn.close()
    assert int(number.search(first_answer).group(1)) < min(came)
    assert came == sorted(came) and max(came) < again, (came, again)


def stats(running, path: str = "/calibration/stats") -> dict:
    response = get(running.host, running.port, path)
    assert response.status == 200 and response.header("content-type") == "application/json"
    return json.loads(response.text)


def test_the_server_s_own_account_splits_each_cycle_and_a_reset_empties_it(server):
    """GET /calibration/stats: the /hello answers since GET /calibration/reset, the time each was held (its service
    time, and its delay when delayed: exact), how late it left, and on a kept-alive connection the time from one
    answer's write to the next request's read; the answers over the span from the first read to the last write.
    Requests for /id and for the account itself are not counted."""
    _, running = server
    assert stats(running, "/calibration/reset") == {"reset": True}
    answers = timed_requests(running, "/hello?service_us=3000&every=4&delay_us=5000", 8)
    get(running.host, running.port, "/id")
    account = stats(running)
    delayed = sum(note["delayed"] == "1" for _, note in answers)
    assert delayed == 2  # 1 in 4 of 8 consecutive request numbers
    assert (account["answers"], account["turnarounds"]) == (8, 7)  # one connection: 7 reads after an answer
    assert account["hold_mean_ms"] == pytest.approx((8 * 3 + delayed * 5) / 8, abs=1e-6)
    # the client's time for a request holds the server's hold and lateness: lateness is never more than the rest
    assert 0 <= account["late_mean_ms"] <= account["late_max_ms"] <= max(took for took, _ in answers) * 1000 - 3
    assert 0 < account["turnaround_mean_ms"] < max(took for took, _ in answers) * 1000
    cycles_ms = account["hold_mean_ms"] + account["late_mean_ms"] + account["turnaround_mean_ms"]
    # one connection: its span is its 8 holds and lateness and 7 turnarounds, to the ns
    assert account["span_s"] * 1000 == pytest.approx(8 * cycles_ms - account["turnaround_mean_ms"], abs=1e-3)
    assert account["rate"] == pytest.approx(8 / account["span_s"], rel=1e-4)  # the span is printed to the µs
    for _ in range(3):  # a connection per request: no turnaround the server can pair
        get(running.host, running.port, "/hello?service_us=1000")
    assert (stats(running)["answers"], stats(running)["turnarounds"]) == (11, 7)
    assert stats(running, "/calibration/reset") == {"reset": True}
    assert stats(running) == {
        "answers": 0,
        "span_s": 0.0,
        "rate": None,
        "hold_mean_ms": None,
        "late_mean_ms": None,
        "late_max_ms": None,
        "turnarounds": 0,
        "turnaround_mean_ms": None,
    }
