#!/usr/bin/env python3
"""A prompt whose start another slot holds, against one whose start no slot holds, while that other
slot's client streams (the system prompt every client of an application sends).

    bench/shared_prefix.py --port PORT [--rounds N] [--words W]

Each round, for both kinds in turn (the order alternating by round): client A streams a long
answer (greedy, ignore_eos) to a new start of W random words, and once its first event has come
(its prompt has run), client B asks for one token. "shared": B's prompt is A's start and a
question; "fresh": another start of W random words and the same question. B's wall time, from
sending to the whole answer, is its time to first token. Works against any OpenAI-compatible
server with ignore_eos (ours, llama-server); prompt_tokens_copied is ours (-1 elsewhere). Prints
one JSON object: per kind the samples and their median, min and max."""
import argparse
import json
import random
import socket
import statistics
import threading
import time
import urllib.request

WORDS = ("the quick brown fox jumps over a lazy dog while seven small birds sing in an old green tree "
         "near the river").split()


def text(seed, n):
    g = random.Random(seed)
    return " ".join(g.choice(WORDS) for _ in range(n))


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def stream(port, prompt, started, stop):
    """Client A: streams until told to stop; `started` once its first event has come."""
    body = json.dumps({"prompt": prompt, "stream": True, "max_tokens": 4000, "ignore_eos": True,
                       "temperature": 0}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=600) as a:
        a.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        while not stop.is_set():
            data = a.recv(65536)
            if not data:
                break
            if b"data: " in data:
                started.set()
    started.set()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--words", type=int, default=300)
    args = ap.parse_args()
    samples = {"shared": [], "fresh": []}
    for r in range(args.rounds):
        for j, kind in enumerate(["shared", "fresh"] if r % 2 == 0 else ["fresh", "shared"]):
            start = text(100 * r + 10 * j + 1, args.words)
            started, stop = threading.Event(), threading.Event()
            a = threading.Thread(target=stream, args=(args.port, start + " so", started, stop))
            a.start()
            started.wait(600)
            b_start = start if kind == "shared" else text(100 * r + 10 * j + 5, args.words)
            t0 = time.monotonic()
            out = post(args.port, {"prompt": b_start + " and then what happened", "max_tokens": 1, "temperature": 0})
            wall_ms = (time.monotonic() - t0) * 1000
            stop.set()
            a.join()
            samples[kind].append({"ms": round(wall_ms, 1), "prompt_tokens": out["usage"]["prompt_tokens"],
                                  "copied": out.get("timings", {}).get("prompt_tokens_copied", -1)})
    result = {}
    for kind, s in samples.items():
        ms = [x["ms"] for x in s]
        result[kind] = {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms), "samples": s}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
