#!/usr/bin/env python3
"""Summarises a bench/speculative_compare.sh run: per target and drafter, plain and speculative
decode tokens/s of llama.cpp (llama-cli, llama-speculative / llama-lookup logs) and Inferscope
(`inferscope-cli bench --draft … --json`), medians (min–max) over the rounds, each tool's speed-up
(the median of the per-round ratios) and acceptance, and the ratio of the speculative medians.
Usage: speculative_table.py OUT_DIR TARGET DRAFT|ngram [TARGET DRAFT|ngram ...]"""
import glob
import json
import os
import re
import statistics
import sys


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def fmt(samples, digits=2):
    if not samples:
        return "—"
    return f"{statistics.median(samples):.{digits}f} ({min(samples):.{digits}f}–{max(samples):.{digits}f})"


def number(pattern, text):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


def main():
    out, pairs = sys.argv[1], sys.argv[2:]
    commits = set()
    print("| target | drafter | llama.cpp plain | llama.cpp speculative | speed-up | accepted | "
          "Inferscope plain | Inferscope speculative | speed-up | accepted | speculative: ours / llama.cpp |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i in range(0, len(pairs), 2):
        target, draft = pairs[i], pairs[i + 1]
        lp, ls, lup, la, lad = [], [], [], 0, 0
        op, os_, oup, oa, oad, same = [], [], [], 0, 0, True
        for log in sorted(glob.glob(os.path.join(out, f"llama-plain-{i}-*.log"))):
            tag = log[len(os.path.join(out, "llama-plain-")):-len(".log")]
            # llama_perf_context_print's decode line ("eval time", not "prompt eval time").
            plain = number(r"(?m)^llama_perf_context_print:\s+eval time =.*?([\d.]+) tokens per second", read(log))
            spec_log = read(os.path.join(out, f"llama-spec-{tag}.log"))
            spec = number(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s", spec_log)
            drafted = number(r"n_drafted\s*=\s*(\d+)", spec_log)
            accepted = number(r"n_accept\s*=\s*(\d+)", spec_log)
            if plain:
                lp.append(plain)
            if spec:
                ls.append(spec)
            if plain and spec:
                lup.append(spec / plain)
            if drafted is not None and accepted is not None:
                lad += int(drafted)
                la += int(accepted)
        for path in sorted(glob.glob(os.path.join(out, f"ours-{i}-*.json"))):
            try:
                j = json.loads(read(path))
            except ValueError:
                continue
            commits.add(j.get("commit", "unknown"))
            op += j["plain_tokens_per_s"]["samples"]
            os_ += j["speculative_tokens_per_s"]["samples"]
            oup += j["speedup"]["samples"]
            oad += j["draft_n"]
            oa += j["draft_n_accepted"]
            same = same and j["same_tokens"]
        ratio = statistics.median(os_) / statistics.median(ls) if os_ and ls else None
        drafter = "prompt lookup (n-grams ≤ 4)" if draft == "ngram" else os.path.basename(draft)
        if draft != "ngram" and os.environ.get("P_MIN"):
            drafter += f", p-min {os.environ['P_MIN']}"
        pct = lambda a, d: f"{a}/{d} ({100 * a / d:.0f}%)" if d else "—"
        print(f"| {os.path.basename(target)} | {drafter} | {fmt(lp)} | {fmt(ls)} | {fmt(lup)}× | {pct(la, lad)} | "
              f"{fmt(op)} | {fmt(os_)} | {fmt(oup)}× | {pct(oa, oad)}{'' if same else ' (answers differed!)'} | "
              f"{'—' if ratio is None else f'{ratio:.2f}×'} |")
    print()
    print(f"Inferscope {', '.join(sorted(commits)) or 'unknown'}; llama.cpp {os.environ.get('LLAMA_COMMIT', 'unknown')}; "
          "greedy, tokens/s of decoding (drafting and verification included), 2 threads, F16 KV.")


if __name__ == "__main__":
    main()
