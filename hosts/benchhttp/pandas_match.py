"""The pandas side of make bench-match-http: the same records, the same rules.

Reads DIR/left.json and DIR/right.json (or the .csv files with --csv), pairs records with the
same counterparty whose amounts differ by at most the tolerance and whose dates are at most
the window apart, and keeps each record in one pair at most (closest amount, then closest
date, first), as the matcher does, and keeps the records of either side left without a pair:
the whole result the service's client reads (make bench-match-http). Prints the time from
reading the files to the pairs and the unmatched records (and the process's CPU time over
it, which the machine's load does not change), and how many.

    python3 hosts/benchhttp/pandas_match.py DIR [--csv] [--tolerance 0.05] [--window 3]
"""
import argparse
import time

import pandas as pd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--csv", action="store_true")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--window", type=int, default=3)
    a = ap.parse_args()

    start, cpu = time.perf_counter(), time.process_time()
    if a.csv:
        left = pd.read_csv(f"{a.dir}/left.csv", dtype={"counterparty": str, "id": str})
        right = pd.read_csv(f"{a.dir}/right.csv", dtype={"counterparty": str, "id": str})
    else:
        left = pd.read_json(f"{a.dir}/left.json", orient="records", dtype={"counterparty": str, "id": str})
        right = pd.read_json(f"{a.dir}/right.json", orient="records", dtype={"counterparty": str, "id": str})
    left["date"] = pd.to_datetime(left["date"])
    right["date"] = pd.to_datetime(right["date"])
    left["li"] = range(len(left))
    right["ri"] = range(len(right))

    cand = left.merge(right, on="counterparty", suffixes=("_l", "_r"))
    cand["damount"] = (cand["amount_l"] - cand["amount_r"]).abs()
    cand["ddays"] = (cand["date_l"] - cand["date_r"]).abs().dt.days
    cand = cand[(cand["damount"] <= a.tolerance + 1e-9) & (cand["ddays"] <= a.window)]
    # One pair per record: the closest candidates first, then each side once.
    cand = cand.sort_values(["damount", "ddays", "li", "ri"], kind="stable")
    cand = cand.drop_duplicates("li").drop_duplicates("ri")
    unmatched_left = left[~left["li"].isin(cand["li"])]
    unmatched_right = right[~right["ri"].isin(cand["ri"])]
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu

    kind = "csv" if a.csv else "json"
    print(f"pandas {pd.__version__} ({kind}): {len(left)} x {len(right)} records, {len(cand)} pairs, "
          f"{len(unmatched_left)} + {len(unmatched_right)} unmatched in {elapsed:.3f} s (CPU {cpu:.3f} s)")


if __name__ == "__main__":
    main()
