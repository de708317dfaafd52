#!/usr/bin/env python3
"""Markdown table from `inferscope-cli bench --json` results (bench/run_table.sh)."""
import json
import sys


def cell(stats, digits=1):
    return f"{stats['median']:.{digits}f} ({stats['min']:.{digits}f}–{stats['max']:.{digits}f})"


print("| model | weights → compute | pp128 tok/s | pp512 tok/s | prefill % of matmul peak (128 / 512) "
      "| tg64 tok/s | decode % of bandwidth bound | bandwidth GB/s | TTFT pp128 ms | load ms | peak RSS / budget MiB | clean rounds |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
machine = None
for path in sys.argv[1:]:
    j = json.load(open(path))
    tests = {t["test"]: t for t in j["tests"]}
    pp128, pp512, tg = tests.get("pp128"), tests.get("pp512"), tests.get("tg64")
    machine = j
    depth = [t for t in j["tests"] if t["test"].startswith("tg16@")]
    print(f"| {j['model']} | {j['precision']} | {cell(pp128['tokens_per_s'])} | {cell(pp512['tokens_per_s'])} "
          f"| {100 * pp128['fraction_of_peak']:.0f}% / {100 * pp512['fraction_of_peak']:.0f}% "
          f"| {cell(tg['tokens_per_s'], 2)} | {100 * tg['fraction_of_bound']['median']:.0f}% "
          f"({100 * tg['fraction_of_bound']['min']:.0f}–{100 * tg['fraction_of_bound']['max']:.0f}%) "
          f"| {tg['bandwidth_gbs']['median']:.1f} | {pp128['time_to_first_token_ms']['median']:.0f} "
          f"| {j['load_ms']:.0f} | {j['peak_rss_bytes'] >> 20} / {j['peak_rss_budget_bytes'] >> 20} "
          f"| {j['clean_rounds']}/{j['repeat']} |")
    for d in depth:
        print(f"|  ↳ decode at position {d['test'].split('@')[1]} | | | | | {cell(d['tokens_per_s'], 2)} "
              f"(vs {d['tokens_per_s_at_10']['median']:.2f} at 10: {100 * d['ratio']:.0f}%) | | | | | | |")
if machine:
    p = machine["matmul_peak_gflops"]
    print(f"\nMachine (last run): {machine['cpu_isa']}, {machine['threads']} threads, commit {machine['commit']}; "
          f"oneDNN matmul peak f32 {p['f32']:.0f}, bf16 {p['bf16']:.0f} GFLOP/s, s8 {p['s8']:.0f} GOP/s (512×2048×2048).")
