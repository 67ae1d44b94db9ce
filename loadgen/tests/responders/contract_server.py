"""A server that keeps CONTRACT.md for the routes id, hello, backend, tweets, factorial and fibonacci (and weather, with
--upstream URL), for tests of the harness itself:
`python contract_server.py PORT NAME [--break RULE] [--start-delay S] [--upstream URL]`.

`--break` breaks one rule, so a test can assert the contract check reports it: body-byte (/hello's last byte),
content-type (/hello as text/html), no-date (no Date header), http10-open (an HTTP/1.0 connection without keep-alive
left open), pipeline-order (pipelined requests answered last first), tweet-counter (the tweet id does not grow),
bad-length (/hello's Content-Length not a number), bad-chunk (/hello chunked, its chunk size not hexadecimal),
weather-cache (/weather/{city} fetches the upstream's document once and answers from that copy ever after).
`--start-delay` waits that long before it listens (a server slow to start). One asyncio loop; HTTP/1.0 and 1.1,
keep-alive and pipelining as the contract says."""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import json
import math
import sys
import urllib.request
from urllib.parse import parse_qs, urlsplit

sys.set_int_max_str_digits(0)
BREAKS = (
    "body-byte",
    "content-type",
    "no-date",
    "http10-open",
    "pipeline-order",
    "tweet-counter",
    "bad-length",
    "bad-chunk",
    "weather-cache",
)


class Contract:
    def __init__(self, name: str, broken: str | None, upstream: str | None = None):
        self.name, self.broken, self.tweets, self.upstream = name, broken, 1_000_000, upstream
        self.cached: bytes | None = None

    async def respond(self, target: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of `target`, /weather/{city} from the upstream's document."""
        if not (self.upstream and urlsplit(target).path.startswith("/weather/")):
            return self.answer(target)
        if self.cached is None or self.broken != "weather-cache":
            self.cached = await asyncio.to_thread(lambda: urllib.request.urlopen(self.upstream, timeout=5).read())
        document = json.loads(self.cached)
        body = json.dumps(
            {"code": document["weather"][0]["id"], "temp": int(document["main"]["temp"])}, separators=(",", ":")
        )
        return 200, "application/json", body.encode()

    def answer(self, target: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of `target`."""
        url = urlsplit(target)
        if url.path == "/id":
            return 200, "text/plain", self.name.encode()
        if url.path == "/hello":
            body = "Hello Worle" if self.broken == "body-byte" else "Hello World"
            kind = "text/html; charset=utf-8" if self.broken == "content-type" else "text/plain; charset=utf-8"
            return 200, kind, body.encode()
        if url.path == "/backend":
            return 200, "text/html; charset=utf-8", b"<h1>Say hello to akka-http</h1>"
        if url.path == "/v1/tweets":
            if self.broken != "tweet-counter":
                self.tweets += 1
            body = json.dumps(
                [{"id": self.tweets, "author": "author1", "content": "Hello, World!"}], separators=(",", ":")
            )
            return 200, "application/json", body.encode()
        if url.path in ("/factorial", "/fibonacci"):
            limit = 5000 if url.path == "/factorial" else 45
            param = parse_qs(url.query).get("param", [""])[0]
            if not param.isdigit() or int(param) > limit:
                return 400, "text/plain", b"param must be an integer from 0 to %d" % limit
            n = int(param)
            value = math.factorial(n) if url.path == "/factorial" else fibonacci(n)
            return 200, "text/plain", str(value).encode()
        return 404, "text/plain", b"not found"


def fibonacci(n: int) -> int:
    a, b = 1, 1
    for _ in range(n - 1):
        a, b = b, a + b
    return b if n > 0 else 1


def broken_framing(broken: str | None, target: str, head: list[str], body: bytes) -> bytes:
    """/hello's framing broken as `broken` says (its head's Content-Length line changed in place); the body to send."""
    if target != "/hello" or broken not in ("bad-length", "bad-chunk"):
        return body
    if broken == "bad-length":
        head[2] = "Content-Length: eleven"
        return body
    head[2] = "Transfer-Encoding: chunked"
    return b"zz\r\n" + body + b"\r\n0\r\n\r\n"


async def serve(contract: Contract, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    buffer = b""
    try:
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                buffer += chunk
            heads = []
            while b"\r\n\r\n" in buffer:  # every request already written: pipelined ones are answered together
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                heads.append(head)
            answers, close = [], False
            for head in heads:
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                if len(parts) != 3 or parts[0] != "GET" or not parts[2].startswith("HTTP/1."):
                    answers.append(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    close = True
                    break
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
                keep = headers.get("connection", "").lower()
                http10 = parts[2] == "HTTP/1.0"
                status, kind, body = await contract.respond(parts[1])
                out = [
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}",
                    f"Content-Type: {kind}",
                    f"Content-Length: {len(body)}",
                    "Server: contract-server",
                ]
                body = broken_framing(contract.broken, parts[1], out, body)
                if contract.broken != "no-date":
                    out.append("Date: " + email.utils.formatdate(usegmt=True))
                if http10 and keep == "keep-alive":
                    out.append("Connection: keep-alive")
                elif (http10 and contract.broken != "http10-open") or keep == "close":
                    close = True
                    if not http10:
                        out.append("Connection: close")  # RFC 9112 §9.6: the server says it closes
                answers.append(("\r\n".join(out) + "\r\n\r\n").encode() + body)
                if close:
                    break
            if contract.broken == "pipeline-order":
                answers.reverse()
            writer.write(b"".join(answers))
            await writer.drain()
            if close:
                return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("name")
    parser.add_argument("--break", dest="broken", choices=BREAKS)
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--upstream", help="the upstream document's URL, for /weather/{city}")
    args = parser.parse_args()
    await asyncio.sleep(args.start_delay)
    contract = Contract(args.name, args.broken, args.upstream)
    server = await asyncio.start_server(
        lambda r, w: serve(contract, r, w), "127.0.0.1", args.port, backlog=4096, reuse_address=True
    )
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
