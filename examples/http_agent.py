#!/usr/bin/env python3
"""An outside agent for Mirage, driving the sites over HTTP (standard library only).

It takes episodes from a run of `external:NAME` until the run has none left, and in each
one reads the start page, follows a few links it has not read yet, and gives a verdict.
Its decision rule is a placeholder: replace `decide` (and `choose_link`) with your agent.

    python3 examples/http_agent.py --server http://127.0.0.1:8080 --run RUN_ID

Every action is the same JSON object a model replies with, posted to the episode's
`act_url`; the answer is the next page as text (or, for a verdict, a small JSON object).
"""

import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.request


def call(server, method, path, body=None):
    """One request; returns (status, text). Scripts name themselves with a header."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server + path, data=data, method=method)
    req.add_header("x-mirage-client", "http-agent-example")
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def links(page):
    """The numbered links of a text page: {number: address}."""
    return {int(n): url for n, url in re.findall(r"^\[(\d+)\] .* -> (\S+)$", page, re.M)}


def verdicts(page):
    """The verdicts the page's action list offers."""
    found = re.search(r"ACTION one of: (.+)$", page, re.M)
    return [v.strip() for v in found.group(1).split(",")] if found else []


def choose_link(page, seen):
    """The first link of the page that leads somewhere not read yet."""
    for number, url in sorted(links(page).items()):
        if url not in seen:
            return number, url
    return None


def decide(ticket, pages, options):
    """Placeholder decision: the first verdict offered. Put your agent's judgement here."""
    return options[0], f"Read {len(pages)} pages for: {ticket[:80]}"


def run_episode(server, episode, max_pages):
    status, page = call(server, "GET", episode["start_url"] + "?format=text")
    if status == 410:
        return None  # the episode lost its trial (idle past its lease)
    pages, seen = [page], {episode["start_url"]}
    while len(pages) < max_pages:
        nxt = choose_link(page, seen)
        if nxt is None:
            break
        number, url = nxt
        seen.add(url)
        status, page = call(server, "POST", episode["act_url"],
                            {"thought": f"open link {number}", "action": {"type": "click", "link": number}})
        if status >= 400 and status != 404:
            print(f"act refused ({status}): {page}", file=sys.stderr)
            break
        pages.append(page)
    verdict, rationale = decide(episode["ticket"], pages, verdicts(pages[0]) or episode["actions"])
    status, body = call(server, "POST", episode["act_url"],
                        {"thought": "decide", "action": {"type": "verdict", "verdict": verdict, "rationale": rationale}})
    if status != 200:
        print(f"verdict refused ({status}): {body}", file=sys.stderr)
        return None
    return verdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="http://127.0.0.1:8080", help="where `mirage serve` listens")
    ap.add_argument("--run", required=True, help="a run planned with --agent external:NAME")
    ap.add_argument("--max-pages", type=int, default=5, help="pages read per episode, the start page included")
    args = ap.parse_args()
    done = 0
    while True:
        status, body = call(args.server, "POST", f"/api/runs/{args.run}/episodes")
        if status == 204:
            break
        if status == 503:  # trials remain, none to hand out yet (a backoff, or held elsewhere)
            time.sleep(json.loads(body).get("retry_after", 2))
            continue
        if status != 201:
            sys.exit(f"could not take an episode ({status}): {body}")
        episode = json.loads(body)
        verdict = run_episode(args.server, episode, args.max_pages)
        done += verdict is not None
        print(f"{episode['trial_id']} {episode['task_id']} {episode['level']}: {verdict}")
    print(f"{done} episodes finished; the run has none left")


if __name__ == "__main__":
    main()
