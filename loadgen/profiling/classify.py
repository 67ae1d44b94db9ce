"""CPU per request by activity, from an async-profiler collapsed profile taken with `threads` (profile-jvm.sh).

Each sample goes to the first category of CATEGORIES that any frame of its stack matches: a sample under accept,
stream materialization or a socket call counts there whatever it runs below; the server's own code and the framework's
machinery (actors, streams, futures, Netty's pipeline) get what is left. JIT and GC go by thread name."""

from __future__ import annotations

import argparse
import re
from collections import Counter

BY_THREAD = [("JIT compiler", r"CompilerThre"), ("GC", r"GC Thread|VM Thread")]
CATEGORIES = [  # frames as the collapsed format writes them: packages with '/'
    (
        "thread park/unpark (hand-offs between threads)",
        r"Unsafe\.park|LockSupport\.park|awaitWork|Unsafe_Unpark|LockSupport\.unpark|futex_wake|signalWork|Parker::park|"
        r"pthread_cond_signal",
    ),
    ("accept", r"ServerSocketChannelImpl\.accept|acceptAllPending|TcpListener|accept4|AbstractEpollServerChannel"),
    ("per-connection stream materialization", r"materialize|PhasedFusing|GraphStageIsland|Materializer"),
    ("socket close", r"implCloseSelectableChannel|SocketChannelImpl\.close|doClose|__close|tcp_close|__x64_sys_close"),
    ("socket write", r"SocketChannelImpl\.write|IOUtil\.write|writev|__GI_write|sock_write_iter|writeBytes|sendmsg"),
    ("socket read", r"SocketChannelImpl\.read|IOUtil\.read|__GI_read|sock_read_iter|readBytes|recvmsg"),
    (
        "epoll / selector wait and registration",
        r"epoll_wait|epoll_ctl|EPoll\.|EPollSelectorImpl|Native\.epoll|SelectorImpl\.select|processReadyEvents|register",
    ),
    (
        "HTTP parse/render",
        r"HttpRequestParser|HttpResponseRenderer|parboiled|HttpMessageParser|HttpObjectDecoder|"
        r"HttpObjectEncoder|HttpServerCodec|HttpHeaderParser|spray/can/parsing|spray/can/rendering",
    ),
    ("the server's own code (routes)", r"^bench/"),
    (
        "framework machinery (actors, streams, futures, pipeline)",
        r"^(akka|pekko|play|spray|scala|com/twitter|io/netty|java/util/concurrent)/",
    ),
]


def category(frames: list[str]) -> str:
    for name, pattern in BY_THREAD:
        if re.search(pattern, frames[0]):
            return name
    for name, pattern in CATEGORIES:
        if any(re.search(pattern, frame) for frame in frames[1:]):
            return name
    return "other"


def summarize(path: str, requests: int, interval_us: float) -> str:
    total, shares, pools = 0, Counter(), Counter()
    with open(path) as f:
        for line in f:
            stack, count = line.rsplit(" ", 1)
            frames, n = stack.split(";"), int(count)
            total += n
            shares[category(frames)] += n
            pools[re.sub(r"\d+", "N", frames[0].split(" tid=")[0].strip("["))] += n
    if not total:
        return f"{path}: no samples"
    lines = [
        f"{total} samples of {interval_us:g} us over {requests} requests: "
        f"{total * interval_us / requests:.1f} us of CPU per request"
    ]
    lines += [
        f"  {100 * n / total:5.1f} %  {n * interval_us / requests:6.1f} us  {name}" for name, n in shares.most_common()
    ]
    lines.append("  by thread: " + ", ".join(f"{name} {100 * n / total:.0f} %" for name, n in pools.most_common(5)))
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profile", help="async-profiler collapsed output (with threads)")
    p.add_argument("--requests", type=int, required=True, help="requests served while profiling")
    p.add_argument("--interval-us", type=float, default=200, help="the profiler's sampling interval")
    args = p.parse_args()
    print(summarize(args.profile, args.requests, args.interval_us))


if __name__ == "__main__":
    main()
