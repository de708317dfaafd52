#!/usr/bin/env python3
"""Summarises a bench/compare.sh run: per model and test, the median and min-max tokens/s of
llama.cpp (llama-bench JSON) and Inferscope (`inferscope-cli bench --json`), and the ratio of the
medians, as a Markdown table. Usage: compare_table.py OUT_DIR PP TG MODEL..."""
import glob
import json
import os
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(samples):
    if not samples:
        return "—"
    return f"{statistics.median(samples):.1f} ({min(samples):.1f}–{max(samples):.1f})"


def main():
    out, pp, tg, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    commit, ours_commit = "unknown", "unknown"
    print(f"| model | test | llama.cpp tok/s | Inferscope tok/s | ratio | rounds |")
    print("|---|---|---|---|---|---|")
    for model in models:
        name = os.path.basename(model)
        llama = {"pp": [], "tg": []}
        ours = {"pp": [], "tg": []}
        precision = ""
        for path in sorted(glob.glob(os.path.join(out, f"llama-{name}-*.json"))):
            for t in load(path) or []:
                commit = t.get("build_commit", commit)
                key = "pp" if t.get("n_prompt", 0) == pp and t.get("n_gen", 0) == 0 else \
                      "tg" if t.get("n_gen", 0) == tg and t.get("n_prompt", 0) == 0 else None
                if key:
                    llama[key].append(float(t["avg_ts"]))
        for path in sorted(glob.glob(os.path.join(out, f"ours-{name}-*.json"))):
            j = load(path)
            if not j:
                continue
            ours_commit = j.get("commit", ours_commit)
            precision = j.get("precision", precision)
            for t in j.get("tests", []):
                key = "pp" if t["test"] == f"pp{pp}" else "tg" if t["test"] == f"tg{tg}" else None
                if key:
                    ours[key].append(float(t["tokens_per_s"]["median"]))
        for key, test in (("pp", f"pp{pp}"), ("tg", f"tg{tg}")):
            a, b = llama[key], ours[key]
            ratio = f"**{statistics.median(b) / statistics.median(a):.2f}×**" if a and b else "—"
            label = f"{name} ({precision})" if precision else name
            print(f"| {label} | {test} | {fmt(a)} | {fmt(b)} | {ratio} | {min(len(a), len(b))} |")
    if commit == "unknown" and os.environ.get("LLAMA_COMMIT"):
        commit = os.environ["LLAMA_COMMIT"] + " (as given by LLAMA_COMMIT: llama-bench was built outside git)"
    print(f"\nllama.cpp commit {commit}; Inferscope commit {ours_commit}; samples in {out}.")


if __name__ == "__main__":
    main()
