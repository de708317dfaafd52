#!/usr/bin/env python3
"""The Markdown table of bench/serve_compare.sh's samples: per model and client count, medians
(min–max) of each server's aggregate tokens/s and time per output token, and their ratio.

    bench/serve_table.py samples.jsonl [OUR_COMMIT] [LLAMA_COMMIT]"""
import collections
import json
import statistics
import sys


def mm(xs, fmt="{:.1f}"):
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    ours, theirs = (sys.argv[2] if len(sys.argv) > 2 else "?"), (sys.argv[3] if len(sys.argv) > 3 else "?")
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        by[(r["model"], r["clients"])][r["tool"]].append(r)
    single = {}
    print(f"Inferscope {ours} against llama.cpp {theirs} (llama-server -np C, continuous batching)\n")
    print("| model | clients | ours tok/s | llama.cpp tok/s | ratio | ours TPOT p50/p95 ms | llama.cpp TPOT p50/p95 ms | ours vs our 1 client |")
    print("|---|---|---|---|---|---|---|---|")
    for (model, c) in sorted(by, key=lambda k: (k[0], k[1])):
        o, l = by[(model, c)]["ours"], by[(model, c)]["llama.cpp"]
        oa = [x["aggregate_tok_s"] for x in o]
        la = [x["aggregate_tok_s"] for x in l]
        ratio = statistics.median(oa) / statistics.median(la) if la else float("nan")
        if c == 1:
            single[model] = statistics.median(oa)
        scale = f"{statistics.median(oa) / single[model]:.2f}×" if model in single else "–"
        tp = lambda xs: f"{statistics.median([x['tpot_p50_ms'] for x in xs]):.1f}/{statistics.median([x['tpot_p95_ms'] for x in xs]):.1f}"
        print(f"| {model} | {c} | {mm(oa)} | {mm(la)} | {ratio:.2f}× | {tp(o)} | {tp(l)} | {scale} |")


if __name__ == "__main__":
    main()
