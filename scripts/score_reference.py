#!/usr/bin/env python3
"""A plain reference for `mirage score FILE`'s reading speed: streams a trajectory file and
computes each configuration's mean Acc_inv, E_inv and Default Acc_dec (docs/metrics.md, with
the crediting rules simplified: exact, prefix, the last two segments, `<id>` templates; no
content-page check for the reverse prefix, no shop-only rule). Standard library only.

    python3 scripts/score_reference.py TASKS.jsonl TRAJECTORIES.jsonl
"""

import json
import re
import sys
from collections import defaultdict

GAMMA, HORIZON = 0.95, 25


def normalise(url):
    url = re.sub(r"^[a-z]+://[^/]+", "", url or "")
    url = re.sub(r"^/ep/[^/]+", "", url).split("?")[0].split("#")[0]
    return url.rstrip("/") or "/"


def credits(visit, node):
    if visit == node or visit.startswith(node + "/") or node.startswith(visit + "/"):
        return True
    if visit.split("/")[-2:] == node.split("/")[-2:] and visit.count("/") >= 2:
        return True
    if "<id>" in node:
        return re.fullmatch(re.escape(node).replace(re.escape("<id>"), "[^/]+"), visit) is not None
    return False


def e_inv(graph, start, urls):
    start_nodes = {u for u in graph if credits(start, u)}
    seen, total = set(), 0.0
    for t, url in enumerate(urls[:HORIZON]):
        hit = {u for u in graph if u not in seen and credits(url, u)}
        if hit - start_nodes:
            total += GAMMA**t
        elif hit & start_nodes:
            total += 0.5 * GAMMA**t
        seen |= hit
    ideal = 0.5 if start_nodes else 0.0
    for t in range(1, min(HORIZON, len(graph - start_nodes) + 1)):
        ideal += GAMMA**t
    return total / ideal if ideal > 0 else None


def main(tasks_path, trajectories_path):
    tasks = {}
    with open(tasks_path) as f:
        for line in f:
            if line.strip():
                t = json.loads(line)
                tasks[t["id"]] = t
    sums = defaultdict(lambda: [0.0, 0.0, 0.0, 0, 0])
    with open(trajectories_path) as f:
        for line in f:
            if not line.strip():
                continue
            tr = json.loads(line)
            task = tasks[tr["task_id"]]
            graph = {normalise(u) for u in task["graph"]}
            urls = [normalise(s["url"]) for s in tr["steps"]]
            inv = sum(1 for u in graph if any(credits(v, u) for v in urls)) / len(graph) if graph else 0.0
            e = e_inv(graph, normalise(task["start_url"]), urls)
            verdict = ((tr.get("verdict") or {}).get("action") or "").upper()
            v = task["verdict"]
            if verdict == v["optimal"].upper():
                dec = 1.0
            else:
                dec = next((c for k, c in v.get("acceptable", {}).items() if k.upper() == verdict), 0.0)
            s = sums[(tr["agent"], tr["level"])]
            s[0] += inv
            s[1] += e or 0.0
            s[2] += dec
            s[3] += 1
            s[4] += e is not None
    for (agent, level), (inv, e, dec, n, ne) in sorted(sums.items()):
        print(f"{agent:20} {level}  n={n:6}  Acc_inv {inv / n:.3f}  E_inv {e / max(ne, 1):.3f}  Acc_dec {dec / n:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
