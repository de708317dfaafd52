#!/usr/bin/env python3
"""C clients at once, each streaming one completion of exactly TG tokens from an OpenAI-compatible
server (ours or llama-server), and what they saw: aggregate tokens/s over the round's wall time,
time to first token and time per output token (p50/p95 over the clients).

    bench/serve_load.py --port PORT --clients C --tokens TG [--tag NAME] [--seed N]

Each client's prompt differs (no prefix is shared between them). ignore_eos (both servers) makes
every answer TG tokens long; the count is checked against what the server reports (usage, or
llama-server's timings). Prints one JSON object."""
import argparse
import http.client
import json
import statistics
import threading
import time


def one(port, prompt, tokens, out, idx):
    body = {"prompt": prompt, "max_tokens": tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, "ignore_eos": True}
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    arrivals, usage, buf = [], None, b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if not line.startswith(b"data: "):
                    continue
                data = line[6:]
                if data == b"[DONE]":
                    continue
                e = json.loads(data)
                if e.get("usage"):
                    usage = e["usage"]
                elif e.get("timings") and "predicted_n" in e["timings"]:
                    usage = {"completion_tokens": e["timings"]["predicted_n"]}
                if e.get("choices") and e["choices"][0].get("text"):
                    arrivals.append(time.perf_counter())
    conn.close()
    out[idx] = {"start": t0, "arrivals": arrivals, "usage": usage, "status": r.status}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, required=True)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--tag", default="")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    out = [None] * a.clients
    threads = [threading.Thread(target=one, args=(a.port, f"Story {a.seed}-{i}: once upon a time in a land far away, the {i}th",
                                                  a.tokens, out, i)) for i in range(a.clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ttft, tpot, total = [], [], 0
    for o in out:
        n = (o["usage"] or {}).get("completion_tokens", 0)
        if o["status"] != 200 or n != a.tokens or len(o["arrivals"]) < 2:
            raise SystemExit(f"a client got status {o['status']}, {n} tokens, {len(o['arrivals'])} chunks")
        total += n
        ttft.append(o["arrivals"][0] - o["start"])
        tpot.append((o["arrivals"][-1] - o["arrivals"][0]) / (n - 1))

    def pct(xs, p):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

    print(json.dumps({"tag": a.tag, "clients": a.clients, "tokens": a.tokens, "wall_s": wall, "aggregate_tok_s": total / wall,
                      "ttft_p50_ms": 1e3 * pct(ttft, 50), "ttft_p95_ms": 1e3 * pct(ttft, 95), "tpot_p50_ms": 1e3 * pct(tpot, 50), "tpot_p95_ms": 1e3 * pct(tpot, 95)}))


if __name__ == "__main__":
    main()
