"""The calibrated server (calibrated/) on loopback: its known answers, as a plain client sees them. Its settings are
lower bounds by construction (a request is never answered before its service time, a delayed one before its delay,
the CPU it burns is at least what was asked): these tests check them and the exact 1-in-k pattern, and no speed.
Builds the server when `make build` has not (cargo, offline, a few seconds)."""
import subprocess
import time

import psutil
import pytest

from harness.basics.cpus import plan
from harness.basics.httpclient import Connection, request_bytes
from harness.config.manifest import by_default, discover
from harness.measuring import verification as contract
from harness.runtime.local import LocalRuntime, port_owner

SERVERS = discover()
SERVER = SERVERS["calibrated"]
PORT = 9411  # this test's own, in the range of the calibration's tests


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
    runtime, running = server
    processes = [psutil.Process(pid) for pid in runtime.pids(running)]

    def cpu_s() -> float:
        return sum(sum(p.cpu_times()[:2]) for p in processes)

    before = cpu_s()
    timed_requests(running, "/hello?burn_us=20000", 20)
    burned = cpu_s() - before
    assert burned >= 20 * 0.020 - 0.02  # 400 ms asked; the kernel's accounting ticks may lag by one
    assert burned < 2 * 20 * 0.020  # the burn is measured on the thread's clock: it does not overshoot by a request's worth


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
